package policy

import (
	"fmt"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// shellChecker walks a shell script (shell mode only) and judges every
// simple command, redirection and construct in it. Constructs whose effect
// depends on values known only at run time are denied.
type shellChecker struct {
	c *checker
}

func (s *shellChecker) stmts(sts []*syntax.Stmt) Decision {
	d := Decision{Verdict: Allow, Rule: "shell", Reason: "empty block"}
	for i, st := range sts {
		sd := s.stmt(st)
		if i == 0 {
			d = sd
		} else {
			d = worse(d, sd)
		}
		if d.Verdict == Deny {
			return d
		}
	}
	return d
}

func (s *shellChecker) stmt(st *syntax.Stmt) Decision {
	if st == nil {
		return Decision{Verdict: Allow, Rule: "shell", Reason: "empty statement"}
	}
	if st.Background && !s.c.enforced {
		return deny("shell-background", "background jobs (&) could outlive the command's time limit")
	}
	if st.Coprocess {
		return deny("shell-unsupported", "coprocesses cannot be judged")
	}
	d := Decision{Verdict: Allow, Rule: "shell", Reason: "redirections stay inside the workspace"}
	for _, r := range st.Redirs {
		if rd := s.redirect(r); rd.Verdict == Deny {
			return rd
		}
	}
	if st.Cmd == nil {
		return d
	}
	return s.command(st.Cmd)
}

func (s *shellChecker) redirect(r *syntax.Redirect) Decision {
	if s.c.enforced {
		// Where a redirection reads or writes is the sandbox's to hold;
		// what a substitution in it runs is judged.
		d := s.substs(r.Word)
		if r.Hdoc != nil {
			d = worseStop(d, func() Decision { return s.substs(r.Hdoc) })
		}
		return d
	}
	switch r.Op {
	case syntax.Hdoc, syntax.DashHdoc:
		if r.Hdoc != nil {
			for _, p := range r.Hdoc.Parts {
				if _, ok := p.(*syntax.Lit); !ok {
					return deny("shell-unjudgeable", "the here-document contains %s, which cannot be judged", partName(p))
				}
			}
		}
		return Decision{Verdict: Allow}
	case syntax.DplIn, syntax.DplOut:
		v := wordValue(r.Word)
		if v.kind == wordLiteral && (v.text == "-" || isDigits(v.text)) {
			return Decision{Verdict: Allow}
		}
		return deny("shell-unjudgeable", "redirection %s%s duplicates something other than a file descriptor", r.Op, v.text)
	case syntax.RdrIn:
		return s.redirPath(r, Read)
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.RdrInOut:
		return s.redirPath(r, Write)
	}
	return deny("shell-unsupported", "redirection %s is not supported", r.Op)
}

func (s *shellChecker) redirPath(r *syntax.Redirect, a Access) Decision {
	v := wordValue(r.Word)
	if v.kind != wordLiteral {
		return deny("shell-unjudgeable", "the target of redirection %s is not a plain file name", r.Op)
	}
	for _, pl := range s.c.places(v.text) {
		switch pl.where {
		case outside:
			if pl.link {
				return deny("path-outside-workspace", "redirection %s %q leads through a symlink to %s, outside the workspace", r.Op, v.text, pl.shown())
			}
			return deny("path-outside-workspace", "redirection %s %q is outside the workspace", r.Op, v.text)
		case readOnly:
			if a == Write && v.text != "/dev/null" {
				return deny("path-outside-workspace", "redirection %s %q writes outside the workspace", r.Op, v.text)
			}
		case inside:
			if d := s.c.p.CheckPath(pl.rel, a); d.Verdict == Deny {
				return deny(d.Rule, "redirection %s %q: %s", r.Op, v.text, d.Reason)
			}
		}
	}
	return Decision{Verdict: Allow}
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func (s *shellChecker) command(cmd syntax.Command) Decision {
	switch x := cmd.(type) {
	case *syntax.CallExpr:
		return s.call(x)
	case *syntax.BinaryCmd:
		d := s.stmt(x.X)
		if x.Op == syntax.Pipe {
			// find -print0 | xargs -0 CMD: xargs reads what find found.
			if in := s.c.printsFound(x.X); in != "" {
				saved := s.c.stdin
				s.c.stdin = in
				defer func() { s.c.stdin = saved }()
			}
		}
		return worseStop(d, func() Decision { return s.stmt(x.Y) })
	case *syntax.Subshell:
		return s.stmts(x.Stmts)
	case *syntax.Block:
		return s.stmts(x.Stmts)
	case *syntax.IfClause:
		d := s.stmts(x.Cond)
		d = worseStop(d, func() Decision { return s.stmts(x.Then) })
		if x.Else != nil {
			d = worseStop(d, func() Decision { return s.command(x.Else) })
		}
		return d
	case *syntax.WhileClause:
		return worseStop(s.stmts(x.Cond), func() Decision { return s.stmts(x.Do) })
	case *syntax.ForClause:
		wi, ok := x.Loop.(*syntax.WordIter)
		if !ok {
			return deny("shell-unsupported", "this kind of for loop is not supported")
		}
		for _, w := range wi.Items {
			if _, d, bad := s.word(w); bad {
				return d
			}
		}
		return s.stmts(x.Do)
	case *syntax.CaseClause:
		if v := wordValue(x.Word); v.kind != wordLiteral && !s.c.enforced {
			return deny("shell-unjudgeable", "case on %s cannot be judged", nonEmpty(v.what, "a glob"))
		}
		d := Decision{Verdict: Allow, Rule: "shell"}
		for _, it := range x.Items {
			d = worseStop(d, func() Decision { return s.stmts(it.Stmts) })
		}
		return d
	case *syntax.FuncDecl:
		return deny("shell-function", "defining shell functions is denied: a function could shadow an allowed program's name")
	case *syntax.TestClause, *syntax.ArithmCmd, *syntax.LetClause, *syntax.DeclClause:
		// Tests, arithmetic and declarations run no program; inside an
		// enforcing sandbox only their substitutions need judging.
		if s.c.enforced {
			return s.substs(x)
		}
	case *syntax.TimeClause:
		if s.c.enforced {
			return s.stmt(x.Stmt)
		}
	}
	return deny("shell-unsupported", "%s is not supported in commands", nodeName(cmd))
}

// worseStop combines d with the decision next computes, skipping next when
// d already denies.
func worseStop(d Decision, next func() Decision) Decision {
	if d.Verdict == Deny {
		return d
	}
	return worse(d, next())
}

func nodeName(n syntax.Node) string {
	return fmt.Sprintf("%T", n)[len("*syntax."):]
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// word resolves one argument in shell mode. A glob is confined by its
// literal text and then stands for unknown words; an option word with a
// glob in its value (--include=*.go) is passed on as written once its
// value is judged as a glob, since sh expands it only against file names
// that start with the option.
func (s *shellChecker) word(w *syntax.Word) (string, Decision, bool) {
	v := wordValue(w)
	if s.c.enforced {
		// Any argument, expansion or glob: the sandbox holds where it
		// leads. A command substitution runs a command, judged as one.
		if d := s.substs(w); d.Verdict != Allow {
			return "", d, true
		}
		if v.kind != wordLiteral {
			return unknownWord, Decision{}, false
		}
		return v.text, Decision{}, false
	}
	switch v.kind {
	case wordUnknown:
		return "", deny("shell-unjudgeable", "%s is known only at run time, so the command cannot be judged", v.what), true
	case wordGlob:
		if optionGlob(v) {
			val := v.text
			if k := strings.IndexByte(val, '='); k >= 0 {
				val = val[k+1:]
			}
			if _, d, bad := s.c.globWord(val); bad {
				return "", d, true
			}
			return v.text, Decision{}, false
		}
		if d, bad := s.c.pathWord(v.text); bad {
			return "", d, true
		}
		return s.c.globWord(v.text)
	}
	return v.text, Decision{}, false
}

// maxCwds bounds the folders a line's cds may lead to (see call).
const maxCwds = 64

// substs judges the commands that command and process substitutions in
// n run (for an enforcing sandbox, where the words themselves may be
// anything): each must be allowed like a command of the line.
func (s *shellChecker) substs(n syntax.Node) Decision {
	d := Decision{Verdict: Allow, Rule: "shell", Reason: "no substitution"}
	if n == nil {
		return d
	}
	syntax.Walk(n, func(x syntax.Node) bool {
		if d.Verdict == Deny {
			return false
		}
		switch x := x.(type) {
		case *syntax.CmdSubst:
			d = worse(d, s.stmts(x.Stmts))
			return false
		case *syntax.ProcSubst:
			d = worse(d, s.stmts(x.Stmts))
			return false
		}
		return true
	})
	return d
}

// Builtins whose arguments are code or change how later commands resolve.
var deniedBuiltins = map[string]string{
	"eval":    "eval runs text that cannot be judged",
	"trap":    "trap runs text that cannot be judged",
	"alias":   "aliases could shadow an allowed program's name",
	"unalias": "aliases could shadow an allowed program's name",
	"hash":    "hash changes which file a program name runs",
	"fc":      "fc runs commands from history",
}

func (s *shellChecker) call(x *syntax.CallExpr) Decision {
	var assigns [][2]string
	if s.c.enforced {
		for _, as := range x.Assigns {
			if as.Value != nil {
				if d := s.substs(as.Value); d.Verdict != Allow {
					return d
				}
			}
		}
	}
	for _, as := range x.Assigns {
		if s.c.enforced {
			break
		}
		if as.Name == nil || as.Append || as.Naked || as.Index != nil || as.Array != nil {
			return deny("shell-unsupported", "this kind of assignment is not supported")
		}
		val := ""
		if as.Value != nil {
			v := wordValue(as.Value)
			if v.kind != wordLiteral {
				return deny("shell-unjudgeable", "the value of %s is %s", as.Name.Value, nonEmpty(v.what, "a glob"))
			}
			val = v.text
		}
		assigns = append(assigns, [2]string{as.Name.Value, val})
	}
	argv := make([]string, 0, len(x.Args))
	for i, w := range x.Args {
		a, d, bad := s.word(w)
		if bad {
			return d
		}
		if i == 0 && isUnknown(a) {
			return deny("unknown-program", "the program name is a glob, so it cannot be judged")
		}
		argv = append(argv, a)
	}
	for _, as := range assigns {
		// A variable set alone may be exported already (PATH), and then
		// reaches every later command, as export does.
		var to []string
		if len(argv) > 0 {
			to = argv
		}
		if d, bad := s.c.envVar(as[0], as[1], to); bad {
			return d
		}
	}
	if len(x.Args) == 0 {
		return Decision{Verdict: Allow, Rule: "shell-assignment", Reason: "assigns a variable some spec names as safe"}
	}
	switch argv[0] {
	case "set":
		// Shell options (set -e, set -o pipefail) need no rule; set with
		// other words changes positional parameters, which only expansions
		// read, and those are denied anyway.
		for i := 1; i < len(argv); i++ {
			a := argv[i]
			if a == "-o" || a == "+o" {
				i++
				continue
			}
			if len(a) < 2 || (a[0] != '-' && a[0] != '+') || isUnknown(a) {
				return deny("shell-builtin", "set %q is not a shell option", a)
			}
		}
		return Decision{Verdict: Allow, Rule: "shell-set", Reason: "sets shell options"}
	case "export", "readonly", "local", "unset":
		// Variables set here reach every later command, so the same checks
		// as for NAME=VALUE prefixes apply.
		for _, a := range argv[1:] {
			if isUnknown(a) {
				return deny("shell-unjudgeable", "%s with a glob cannot be judged", argv[0])
			}
			if strings.HasPrefix(a, "-") {
				continue
			}
			name, val, _ := strings.Cut(a, "=")
			if d, bad := s.c.envVar(name, val, nil); bad {
				return d
			}
		}
		return Decision{Verdict: Allow, Rule: "shell-assignment", Reason: argv[0] + " of variables some spec names as safe"}
	case "cd":
		if s.c.enforced {
			return Decision{Verdict: Allow, Rule: "shell-cd", Reason: "cd inside the sandbox"}
		}
		// cd changes the folder later relative paths are read from; it must
		// name one folder inside the workspace so they stay judged from it.
		if len(argv) != 2 || argv[1] == "-" || isUnknown(argv[1]) {
			return deny("shell-cd", "cd must name exactly one folder in the workspace (a bare cd goes home)")
		}
		if d, bad := s.c.args(argv); bad {
			return d
		}
		for _, pl := range s.c.places(argv[1]) {
			if pl.where != inside {
				if pl.link {
					return deny("path-outside-workspace", "cd %q leaves the workspace through a symlink to %s", argv[1], pl.shown())
				}
				return deny("path-outside-workspace", "cd %q leaves the workspace", argv[1])
			}
			if pl.rel != "." && !slices.Contains(s.c.cwds, pl.rel) {
				s.c.cwds = append(s.c.cwds, pl.rel)
			}
		}
		// Each cd may have failed, so the folders later commands may run
		// in are every combination of the cds before them: past a bound
		// the line is denied rather than judged in exponential time.
		if len(s.c.cwds) > maxCwds {
			return deny("shell-cd", "more than %d folders a later command could run in after these cds; run the commands from one folder", maxCwds)
		}
		return Decision{Verdict: Allow, Rule: "shell-cd", Reason: "cd inside the workspace"}
	}
	return s.c.argv(argv)
}

// globWord judges a shell glob by the paths it may expand to: it must not
// climb out through a segment that can match ".." (".*", ".?"), and it must
// not name a path under paths.deny (".e*", "*.pem"; a bare "*" only covers
// them, like a recursive read, and is allowed). It becomes an unknown word that
// carries where it may point, for the read-only check of programs that
// write.
func (c *checker) globWord(text string) (string, Decision, bool) {
	var tags []string
	for _, pl := range c.places(text) {
		if pl.where != inside {
			tags = append(tags, regionOutside)
			continue
		}
		rg := shellRegion(pl.rel)
		if rg.mayClimb() {
			return "", deny("path-outside-workspace", "glob %q can match .., which leads out of the folder it names; name the files or use ls -a", text), true
		}
		for _, r := range c.p.pathDeny {
			if rg.names(patternRegion(r.g.src)) {
				return "", deny(r.String(), "glob %q may match a path denied by paths.deny %q; name the files you need", text, r.src), true
			}
		}
		tags = append(tags, regionGlob+pl.rel)
		if pl.link || c.links == nil {
			continue
		}
		// What the glob matches now through symlinks (*/passwd with
		// etc -> /etc) is judged as a literal path would be.
		targets, ok := c.links.Glob(pl.rel)
		if !ok {
			return "", deny("path-outside-workspace", "glob %q matches symlinks that cannot be followed, or too many paths to judge; name the files", text), true
		}
		for _, t := range targets {
			lp := c.linkPlace(t)
			switch lp.where {
			case outside:
				return "", deny("path-outside-workspace", "glob %q matches a symlink that leads to %s, outside the workspace and outside commands.read_only_dirs", text, lp.shown()), true
			case readOnly:
				tags = append(tags, regionOutside)
			case inside:
				if r, ok := c.p.deniedPath(lp.rel); ok {
					return "", deny(r.String(), "glob %q matches a symlink to %q, denied by paths.deny %q", text, lp.rel, r.src), true
				}
				tags = append(tags, regionGlob+escapeGlob(lp.rel))
			}
		}
	}
	return unknownIn(tags...), Decision{}, false
}

// printsFound returns the region of what a find in st prints separated by
// NUL bytes (-print0 and no action that prints anything else), or "".
// Names printed one per line could be split at blanks into other words.
func (c *checker) printsFound(st *syntax.Stmt) string {
	x, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || len(st.Redirs) > 0 || len(x.Assigns) > 0 || len(x.Args) == 0 {
		return ""
	}
	argv := make([]string, 0, len(x.Args))
	for _, w := range x.Args {
		v := wordValue(w)
		if v.kind != wordLiteral {
			return ""
		}
		argv = append(argv, v.text)
	}
	s := c.p.specs.lookup(argv[0])
	if s == nil {
		return ""
	}
	inv, err := s.parse(argv)
	if err != nil || !inv.has("prints-found-nul") || inv.has("prints-other") {
		return ""
	}
	return c.foundRegion(inv)
}

// pipeline judges, for commands.shell: pipes, a line that is one pipeline
// of plain commands in which every command after the first is a read-only
// filter (its spec says filter: true and it writes nothing); ok is false
// for any other line. Only 2>&1 on the first command is allowed.
func (c *checker) pipeline(f *syntax.File) (Decision, bool) {
	if len(f.Stmts) != 1 {
		return Decision{}, false
	}
	var parts []*syntax.Stmt
	var walk func(st *syntax.Stmt) bool
	walk = func(st *syntax.Stmt) bool {
		if st.Negated || st.Background || st.Coprocess || st.Semicolon.IsValid() {
			return false
		}
		if b, ok := st.Cmd.(*syntax.BinaryCmd); ok {
			return b.Op == syntax.Pipe && len(st.Redirs) == 0 && walk(b.X) && walk(b.Y)
		}
		parts = append(parts, st)
		return true
	}
	if !walk(f.Stmts[0]) || len(parts) < 2 {
		return Decision{}, false
	}
	var d Decision
	for i, st := range parts {
		x, ok := st.Cmd.(*syntax.CallExpr)
		if !ok || len(x.Assigns) > 0 || len(x.Args) == 0 {
			return Decision{}, false
		}
		for _, r := range st.Redirs {
			if i > 0 || r.Op != syntax.DplOut || r.N == nil || r.N.Value != "2" || wordValue(r.Word).text != "1" {
				return Decision{}, false
			}
		}
		argv := make([]string, 0, len(x.Args))
		for _, w := range x.Args {
			v := wordValue(w)
			if v.kind != wordLiteral && !optionGlob(v) {
				return Decision{}, false
			}
			argv = append(argv, v.text)
		}
		if i > 0 && !c.isFilter(argv) {
			return deny("shell-disabled", "%s is not a read-only filter, so it cannot take a pipe under commands.shell: pipes (filters: head, tail, wc, grep, sort, uniq, cut, tr, cat)", argv[0]), true
		}
		pd := c.sub().argv(argv)
		if i == 0 {
			d = pd
		} else {
			d = worse(d, pd)
		}
		if d.Verdict == Deny {
			return d, true
		}
	}
	return d, true
}

// isFilter reports whether argv reads only its input or files and writes
// only its standard output.
func (c *checker) isFilter(argv []string) bool {
	s := c.p.specs.lookup(argv[0])
	if s == nil || !s.filter {
		return false
	}
	inv, err := s.parse(argv)
	if err != nil || inv.denied != "" {
		return false
	}
	return !slices.ContainsFunc(inv.uses, func(u use) bool {
		switch u.role {
		case roleText, roleRead, roleLocate, roleSedScript:
			return false
		case roleInput:
			return inv.has("in-place")
		}
		return true
	})
}
