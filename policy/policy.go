package policy

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
)

// Policy is a parsed policy file. It is immutable: the With methods return
// changed copies, so one Policy is safe for concurrent use.
type Policy struct {
	name       string
	unattended bool
	workspace  string

	pathDeny, pathReadOnly, pathAllow []pathRule
	hasPathAllow                      bool

	cmdAllow, cmdAsk, cmdDeny []*commandPattern
	shell                     bool
	pipes                     bool // commands.shell: pipes
	readOnlyDirs              []string
	specs                     *specSet

	toolAllow, toolAsk, toolDeny []pathRule

	limits         Limits
	confirmTimeout time.Duration
}

type pathRule struct {
	rule
	g glob
}

// Name is the name the policy was parsed under (its file path for Load).
func (p *Policy) Name() string { return p.name }

// Unattended reports whether the policy is for runs without a person. The
// policy itself still returns Ask for rules in commands.ask; callers (the
// gate) must turn Ask into Deny when Unattended is true.
func (p *Policy) Unattended() bool { return p.unattended }

// Limits are the resource limits for commands, with defaults for every
// limit the file omits: 120s, 1GiB, 1 CPU, 256 pids, 64KiB output, no
// network.
func (p *Policy) Limits() Limits { return p.limits }

// ConfirmTimeout is how long a confirmation may wait for an answer (default
// 5m); no answer in time is a no.
func (p *Policy) ConfirmTimeout() time.Duration { return p.confirmTimeout }

// Shell reports whether command lines with shell constructs may run (as
// sh -c) after each simple command inside has been checked. It is false
// for commands.shell: pipes, which lets only pipelines into read-only
// filters run.
func (p *Policy) Shell() bool { return p.shell }

// Pipes reports whether commands.shell is pipes: a line that is one plain
// command piped into read-only filters may run (as sh -c), and no other
// shell line.
func (p *Policy) Pipes() bool { return p.pipes }

// Workspace is the workspace folder as written in the file ("." when
// omitted); callers resolve a relative one.
func (p *Policy) Workspace() string { return p.workspace }

// ReadOnlyDirs are the absolute folders outside the workspace (toolchains,
// module caches) that command arguments may name. The sandbox mounts them
// read-only; the policy only lets arguments point there.
func (p *Policy) ReadOnlyDirs() []string { return slices.Clone(p.readOnlyDirs) }

func (p *Policy) clone() *Policy {
	c := *p
	c.pathReadOnly = slices.Clone(p.pathReadOnly)
	c.pathDeny = slices.Clone(p.pathDeny)
	return &c
}

// WithReadOnly returns a copy in which the given workspace path globs are
// read-only as well (for example, the tests a Critic wrote). Globs are
// cleaned first ("./tests/**" is "tests/**"). A glob that still does not
// compile (absolute, leaving the workspace, malformed) makes the whole
// workspace read-only in the copy: a mistake never yields a weaker policy.
func (p *Policy) WithReadOnly(globs ...string) *Policy {
	return p.WithReadOnlyAs("read_only (added)", globs...)
}

// WithReadOnlyAs is WithReadOnly with the rules listed under why (it
// names them in decisions: "Trio's control files").
func (p *Policy) WithReadOnlyAs(why string, globs ...string) *Policy {
	c := p.clone()
	c.pathReadOnly = append(c.pathReadOnly, addedRules(why, "read-only", globs)...)
	return c
}

// WithDeniedAs returns a copy in which the given workspace path globs are
// denied as well, for reading and writing, listed under why in decisions
// (the run folder inside the workspace, for example). Like WithReadOnly,
// a glob that does not compile denies the whole workspace in the copy.
func (p *Policy) WithDeniedAs(why string, globs ...string) *Policy {
	c := p.clone()
	c.pathDeny = append(c.pathDeny, addedRules(why, "denied", globs)...)
	return c
}

func addedRules(list, what string, globs []string) []pathRule {
	var out []pathRule
	for _, src := range globs {
		r := rule{list: list, src: src}
		g, err := compilePathGlob(path.Clean(src))
		if err != nil {
			r.src = fmt.Sprintf("%s (invalid: %v; whole workspace %s)", src, err, what)
			g, _ = compilePathGlob("**")
		}
		out = append(out, pathRule{rule: r, g: g})
	}
	return out
}

// QuoteGlob is a path glob that matches exactly the path p: the glob
// metacharacters in it are escaped.
func QuoteGlob(p string) string {
	var b strings.Builder
	for _, c := range p {
		if strings.ContainsRune(`\*?[`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// WithUnattended returns a copy in unattended mode.
func (p *Policy) WithUnattended() *Policy {
	c := p.clone()
	c.unattended = true
	return c
}

// CheckPath decides whether a file tool may access rel, a workspace-relative
// path. Absolute paths and paths that leave the workspace are denied;
// paths.deny denies any access, paths.read_only denies writes; with a
// paths.allow list only paths it matches are allowed, without one every
// other path in the workspace is.
func (p *Policy) CheckPath(rel string, a Access) Decision {
	clean, ok := cleanRel(rel)
	if !ok {
		return Decision{Verdict: Deny, Rule: "path-outside-workspace",
			Reason: fmt.Sprintf("path %q is not inside the workspace", rel)}
	}
	if r, ok := p.deniedPath(clean); ok {
		return Decision{Verdict: Deny, Rule: r.String(),
			Reason: fmt.Sprintf("%s of %q is denied by %s %q", a, clean, r.list, r.src)}
	}
	if a == Write {
		for _, r := range p.pathReadOnly {
			if r.g.match(clean) {
				return Decision{Verdict: Deny, Rule: r.String(),
					Reason: fmt.Sprintf("%q is read-only (%s %q)", clean, r.list, r.src)}
			}
		}
	}
	if p.hasPathAllow {
		for _, r := range p.pathAllow {
			if r.g.match(clean) {
				return Decision{Verdict: Allow, Rule: r.String(),
					Reason: fmt.Sprintf("%s of %q is allowed by paths.allow %q", a, clean, r.src)}
			}
		}
		return Decision{Verdict: Deny, Rule: "default-deny",
			Reason: fmt.Sprintf("no paths.allow glob matches %q", clean)}
	}
	return Decision{Verdict: Allow, Rule: "workspace",
		Reason: fmt.Sprintf("%s of %q inside the workspace", a, clean)}
}

// deniedPath returns the paths.deny rule that matches a cleaned relative
// path.
func (p *Policy) deniedPath(clean string) (pathRule, bool) {
	for _, r := range p.pathDeny {
		if r.g.match(clean) {
			return r, true
		}
	}
	return pathRule{}, false
}

// cleanRel cleans a workspace-relative path; ok is false for absolute paths
// and paths that leave the workspace.
func cleanRel(rel string) (string, bool) {
	if rel == "" {
		return ".", true
	}
	if strings.HasPrefix(rel, "/") || strings.HasPrefix(rel, "~") || strings.ContainsRune(rel, 0) || strings.Contains(rel, `\`) {
		return "", false
	}
	c := path.Clean(rel)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", false
	}
	return c, true
}

// CheckTool decides whether a tool may be called at all. tools.deny beats
// tools.ask beats tools.allow; a tool name no rule matches is allowed,
// because what the call does (paths, commands) is judged separately.
func (p *Policy) CheckTool(name string) Decision {
	for _, l := range []struct {
		rules []pathRule
		v     Verdict
	}{{p.toolDeny, Deny}, {p.toolAsk, Ask}, {p.toolAllow, Allow}} {
		for _, r := range l.rules {
			if r.g.match(name) {
				return Decision{Verdict: l.v, Rule: r.String(),
					Reason: fmt.Sprintf("tool %s matches %s %q", name, r.list, r.src)}
			}
		}
	}
	return Decision{Verdict: Allow, Rule: "tools-default-allow",
		Reason: fmt.Sprintf("no tools rule names %s; its effects are checked separately", name)}
}
