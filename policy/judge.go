package policy

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
)

// judge.go applies the policy to what the engine found in an argv: every
// word with a path role is confined (paths.deny for reads, paths.read_only
// for writes, the workspace for both), commands inside wrappers are judged
// as what they run, and the rules decide the rest.

// isOption reports whether a is an option word: it starts with "-" and is
// not "-" alone, which names standard input.
func isOption(a string) bool { return len(a) > 1 && a[0] == '-' }

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// specified judges argv against its program's spec s.
func (c *checker) specified(argv []string, s *spec) Decision {
	inv, err := s.parse(argv)
	if err != nil && inv.denied == "" {
		if c.enforced && !s.wraps() {
			// An option the spec does not know changes nothing the
			// sandbox does not hold: the rules' patterns decide.
			return c.rules(argv, inv.canon, nil)
		}
		return c.mismatched(argv, s, err)
	}
	if inv.denied != "" {
		// A deny rule the policy file wrote for the command says more.
		if own, ok := c.explicitOf(argv, inv.canon); ok && own.Verdict == Deny {
			return own
		}
		return deny("spec", "%s: %s (spec %s)", inv.by, inv.denied, inv.spec)
	}
	for _, sp := range inv.path {
		if sp.atRoot && (c.base != "." || len(c.cwds) > 0) {
			return deny("spec", "%s runs only in the workspace root (spec %s), so that it finds no repository or configuration the workspace's subfolders could hold; run it from the root", sp.name, sp)
		}
	}
	j := &judgement{c: c, inv: inv}
	if d, bad := j.uses(inv.uses); bad {
		return d
	}
	switch {
	case j.wraps:
		// A wrapper needs no allow rule of its own; deny and ask rules
		// written for it still hold.
		d := j.inner
		if own, ok := c.explicitOf(argv, inv.canon); ok {
			d = worse(own, d)
		}
		return d
	case j.code != "" && !c.enforced:
		return inlineCode(c, argv, j.code, j.literals)
	}
	d := c.rules(argv, inv.canon, func(p *commandPattern) bool { return p.hasLiterals(j.literals) })
	if d.Rule == "default-deny" && len(j.literals) > 0 {
		d.Rule = "script-outside-workspace"
		d.Reason = fmt.Sprintf("%s runs %q, which is outside the workspace; only a rule naming it literally can allow that", argv[0], j.literals[0])
	}
	if d.Verdict != Deny && j.after != nil {
		d = worseStop(d, j.after)
	}
	return d
}

// explicitOf is explicit for argv as written or with its abbreviations
// spelled out.
func (c *checker) explicitOf(argv, canon []string) (Decision, bool) {
	if d, ok := c.explicit(argv); ok {
		return d, true
	}
	return c.explicit(canon)
}

// mismatched decides an argv its spec does not accept: deny and ask rules
// still apply (a person may be asked about `git config x y`), allow rules
// do not, since they allow only what the spec knows.
func (c *checker) mismatched(argv []string, s *spec, err error) Decision {
	if d, bad := c.args(argv); bad {
		return d
	}
	d := c.rules(argv, nil, func(p *commandPattern) bool { return p.list != "commands.allow" })
	if d.Rule == "default-deny" {
		d.Rule = "spec-mismatch"
		d.Reason = fmt.Sprintf("%v, so no allow rule matches (the spec of %s lists what it accepts; spell long options in full, or add what is missing to a programs entry in the policy file)", err, s)
	}
	return d
}

// judgement collects what the uses of one invocation need.
type judgement struct {
	c        *checker
	inv      *invocation
	wraps    bool
	inner    Decision
	code     string   // the inline-code option, if any
	literals []string // words an allow rule must name literally
	targets  []target
	srcs     []string
	moves    []string
	dest     string
	inputs   []string
	suffix   *string
	after    func() Decision // runs after the rules allowed the program (find -exec)
}

func (j *judgement) uses(us []use) (Decision, bool) {
	if j.c.enforced {
		return j.enforcedUses(us)
	}
	c := j.c
	// A chdir moves where every other relative word is judged from.
	for _, u := range us {
		if u.role != roleChdir {
			continue
		}
		in, d, bad := c.chdir(u.word)
		if bad {
			return d, true
		}
		c = in
	}
	j.c = c
	recursive := j.inv.has("recursive")
	var assigns []string
	var findExec []use
	for _, u := range us {
		switch u.role {
		case roleText, roleReplace, roleSubcommand, roleChdir:
		case roleRead:
			if d, bad := c.readWord(j.inv, u.word); bad {
				return d, true
			}
		case roleLocate:
			if d, bad := c.locate(u.word); bad {
				return d, true
			}
		case roleWrite, roleWriteTree:
			if d, bad := c.pathWord(u.word); bad {
				return d, true
			}
			j.targets = append(j.targets, target{word: u.word, below: recursive || u.role == roleWriteTree})
		case roleInput:
			if d, bad := c.readWord(j.inv, u.word); bad {
				return d, true
			}
			j.inputs = append(j.inputs, u.word)
		case roleSuffix:
			s := u.word
			j.suffix = &s
		case roleSource:
			if d, bad := c.readWord(j.inv, u.word); bad {
				return d, true
			}
			j.srcs = append(j.srcs, u.word)
		case roleMove:
			if d, bad := c.pathWord(u.word); bad {
				return d, true
			}
			j.moves = append(j.moves, u.word)
		case roleDest:
			if d, bad := c.pathWord(u.word); bad {
				return d, true
			}
			j.dest = u.word
		case rolePkgs, rolePkgsWrite:
			if d, bad := c.packages(u.word, u.role == rolePkgsWrite); bad {
				return d, true
			}
		case roleScript:
			if d, bad := j.script(u.word); bad {
				return d, true
			}
		case roleCode:
			j.code = u.opt
		case roleList:
			return deny("argument-file", "%s %s reads further arguments from %q, which the policy cannot read; name them on the command line", j.inv.canon[0], u.opt, u.word), true
		case roleRev:
			if d, bad := c.gitObjectPath(u.word); bad {
				return d, true
			}
			if d, bad := c.pathspec(u.word); bad {
				return d, true
			}
		case rolePathspec:
			if d, bad := c.pathspec(u.word); bad {
				return d, true
			}
		case roleSedScript:
			if d, bad := j.sedScript(u.word); bad {
				return d, true
			}
		case roleAssign:
			assigns = append(assigns, u.word)
		case roleCommand:
			j.wraps = true
			j.inner = j.command(u)
		case roleShellCode:
			j.wraps = true
			if isUnknown(u.word) {
				j.inner = deny("unknown-program", "%s -c runs code known only at run time", j.inv.canon[0])
			} else {
				j.inner = c.sub().line(u.word)
			}
		case roleFindExec, roleFindExecDir:
			findExec = append(findExec, u)
		default:
			return deny("spec", "role %q is not judged here", u.role), true
		}
	}
	if len(assigns) > 0 {
		var inner []string
		for _, u := range us {
			if u.role == roleCommand {
				inner = u.words
			}
		}
		for _, a := range assigns {
			name, val, _ := strings.Cut(a, "=")
			if d, bad := c.envVar(name, val, inner); bad {
				return d, true
			}
		}
	}
	for _, sp := range j.inv.path {
		for _, f := range sp.creates {
			j.targets = append(j.targets, target{word: f, below: true})
		}
	}
	if d, bad := j.writes(); bad {
		return d, true
	}
	if len(findExec) > 0 || j.inv.has("delete") {
		found := c.foundRegion(j.inv)
		j.after = func() Decision { return c.findActions(j.inv, findExec, found) }
	}
	return Decision{}, false
}

// enforcedUses is uses inside an enforcing sandbox: paths, variables and
// scripts are the sandbox's to hold, so only what the invocation runs is
// judged (a wrapped command, sh -c's line, find -exec's commands).
func (j *judgement) enforcedUses(us []use) (Decision, bool) {
	c := j.c
	var findExec []use
	for _, u := range us {
		switch u.role {
		case roleCommand:
			j.wraps = true
			j.inner = j.command(u)
		case roleShellCode:
			j.wraps = true
			if isUnknown(u.word) {
				j.inner = deny("unknown-program", "%s -c runs code known only at run time", j.inv.canon[0])
			} else {
				j.inner = c.sub().line(u.word)
			}
		case roleFindExec, roleFindExecDir:
			findExec = append(findExec, u)
		}
	}
	if len(findExec) > 0 {
		j.after = func() Decision { return c.findActions(j.inv, findExec, unknownWord) }
	}
	return Decision{}, false
}

// chdir returns a checker whose relative words start from dir, which must
// be one folder inside the workspace.
func (c *checker) chdir(dir string) (*checker, Decision, bool) {
	if isUnknown(dir) {
		return nil, deny("path-outside-workspace", "the folder a command works in is known only at run time"), true
	}
	pls := c.places(dir)
	for _, pl := range pls {
		if pl.link && pl.where != inside {
			return nil, deny("path-outside-workspace", "the folder %q leads through a symlink to %s, outside the workspace", dir, pl.shown()), true
		}
	}
	if len(pls) == 0 || len(pls) > 2 || (len(pls) == 2 && !pls[1].link) ||
		slices.ContainsFunc(pls, func(pl placed) bool { return pl.where != inside }) {
		return nil, deny("path-outside-workspace", "the folder %q a command works in must be one folder inside the workspace", dir), true
	}
	in := c.sub()
	in.depth--
	// One folder as written, or as written and where its symlink leads:
	// the command works in the latter.
	in.base = pls[len(pls)-1].rel
	return in, Decision{}, false
}

// readWord checks a word the program reads. A word known only at run time
// must carry where it can point (a shell glob, find's {}): what xargs reads
// from its input may name any file, .env and /etc/shadow included.
func (c *checker) readWord(inv *invocation, w string) (Decision, bool) {
	if !isUnknown(w) {
		if d, bad := c.pathWord(w); bad {
			return d, true
		}
		return c.followsLinks(inv, w)
	}
	rs, ok := regionsOf(w)
	if !ok {
		return deny("unknown-input", "%s would read paths known only at run time (words xargs reads, or a file of names), which may name denied files; name the files, or use find -exec", inv.canon[0]), true
	}
	for _, rg := range rs {
		for _, r := range c.p.pathDeny {
			if rg.names(patternRegion(r.g.src)) {
				return deny(r.String(), "%s reads files that may be denied by paths.deny %q; narrow what it reads", inv.canon[0], r.src), true
			}
		}
	}
	return Decision{}, false
}

// followsLinks refuses a read outside the workspace by a program that
// follows the symlinks below what it reads (grep -R, cp -rL, find -L,
// diff -r: set follows-links in the specs): below a read-only folder a
// link may lead anywhere (/usr/lib/ssl/private -> /etc/ssl/private), and
// the policy sees only the words.
func (c *checker) followsLinks(inv *invocation, w string) (Decision, bool) {
	if !inv.has("follows-links") {
		return Decision{}, false
	}
	for _, pl := range c.places(w) {
		if pl.where != inside {
			return deny("follows-links", "%s follows the symlinks below %q, which is outside the workspace, so it may read anything they lead to; read it without following links (grep -r, cp -r, find without -L, diff --no-dereference)", inv.canon[0], w), true
		}
	}
	return Decision{}, false
}

// locate checks a glob that selects files the program then reads (find
// -name, grep --include): it must not name a path under paths.deny. Case
// is folded too, since -iname and friends ignore it.
func (c *checker) locate(pat string) (Decision, bool) {
	if isUnknown(pat) {
		return deny("unknown-input", "a file-selecting pattern known only at run time cannot be judged"), true
	}
	p := strings.TrimPrefix(strings.TrimPrefix(pat, "./"), "*/")
	for _, v := range []string{p, strings.ToLower(p)} {
		rg := patternRegion("**/" + v)
		for _, r := range c.p.pathDeny {
			if rg.names(patternRegion(r.g.src)) {
				return deny(r.String(), "pattern %q selects paths denied by paths.deny %q", pat, r.src), true
			}
		}
	}
	return Decision{}, false
}

// packages checks Go package patterns: ./... and dir/... are their folder;
// a pattern that names a read-only folder is written only by the programs
// that rewrite packages (go fmt). "./..." does not match vendor folders,
// so only a pattern that names one is a write to it.
func (c *checker) packages(w string, write bool) (Decision, bool) {
	base := strings.TrimSuffix(strings.TrimSuffix(w, "..."), "/")
	if base == "" || base == "." {
		return Decision{}, false
	}
	if d, bad := c.pathWord(base); bad {
		return d, true
	}
	if !write || isUnknown(base) {
		return Decision{}, false
	}
	for _, pl := range c.places(base) {
		if pl.where != inside {
			return deny("path-outside-workspace", "go rewrites %q, outside the workspace (commands.read_only_dirs are for reading)", w), true
		}
		rg := literalRegion(pl.rel).below()
		for _, r := range c.p.pathReadOnly {
			if rg.names(patternRegion(r.g.src)) {
				return deny(r.String(), "go rewrites the files of %q, which are read-only (%s %q)", w, r.list, r.src), true
			}
		}
	}
	return Decision{}, false
}

// script checks a script an interpreter runs: inside the workspace it is
// the project's code; in a read-only folder (the standard library, the
// module cache) only a rule that names it literally may run it; elsewhere
// it is denied.
func (j *judgement) script(w string) (Decision, bool) {
	c := j.c
	if isUnknown(w) {
		return deny("unknown-program", "the script %s runs is known only at run time", j.inv.canon[0]), true
	}
	if d, bad := c.pathWord(w); bad {
		return d, true
	}
	for _, pl := range c.places(w) {
		if pl.where == readOnly && path.Clean(w) != "/dev/null" {
			j.literals = append(j.literals, w)
			return Decision{}, false
		}
	}
	return Decision{}, false
}

// pathspec checks a git pathspec: a glob selects files in history, so it
// must not name a denied path; magic (":(glob)", ":!") is refused.
func (c *checker) pathspec(w string) (Decision, bool) {
	if isUnknown(w) {
		return Decision{}, false
	}
	if strings.HasPrefix(w, ":") && !gitStage.MatchString(w[1:]) {
		return deny("git-pathspec", "git pathspec magic %q cannot be judged; name the paths", w), true
	}
	if !strings.ContainsAny(w, "*?[") || strings.ContainsAny(w, " \t") {
		return c.pathWord(w)
	}
	if d, bad := c.pathWord(w); bad {
		return d, true
	}
	// Git's * matches / as well, so the glob may reach any depth.
	for _, v := range []string{w, strings.ToLower(w)} {
		rg := patternRegion("**/" + strings.ReplaceAll(strings.TrimPrefix(v, "./"), "**", "*"))
		for _, r := range c.p.pathDeny {
			if rg.names(patternRegion(r.g.src)) {
				return deny(r.String(), "pathspec %q selects paths denied by paths.deny %q, which git would read from history", w, r.src), true
			}
		}
	}
	return Decision{}, false
}

var gitStage = regexp.MustCompile(`^[0-3]:`)

// outsideBraces returns a with every character inside {...} (nested ones
// too) replaced by a blank, so that its length and the places of the rest
// stay.
func outsideBraces(a string) string {
	b := []byte(a)
	depth := 0
	for i, ch := range b {
		switch {
		case ch == '{':
			depth++
		case ch == '}' && depth > 0:
			depth--
		case depth > 0:
			b[i] = ' '
		}
	}
	return string(b)
}

// gitObjectPath checks the path in a REV:PATH or :PATH word (git show
// HEAD:.env prints a file the policy denies). A revision's braces may hold
// anything, blanks and colons too (HEAD^{/fix: x}:.env, HEAD@{1 day
// ago}:.env), so the path starts after the first colon outside them;
// ":/text" searches name no path.
func (c *checker) gitObjectPath(a string) (Decision, bool) {
	if strings.HasPrefix(a, "-") || isUnknown(a) {
		return Decision{}, false
	}
	_, p, ok := strings.Cut(outsideBraces(a), ":")
	if ok {
		p = a[len(a)-len(p):]
	}
	p = gitStage.ReplaceAllString(p, "")
	if !ok || p == "" || strings.HasPrefix(p, "/") {
		return Decision{}, false
	}
	return c.pathWord(p)
}

// sedScript reads a sed script: e runs commands, r/R read files and w/W
// write them.
func (j *judgement) sedScript(s string) (Decision, bool) {
	if isUnknown(s) {
		return deny("sed-script", "the sed script is known only at run time"), true
	}
	files, err := scanSed(s)
	if err != nil {
		return deny("sed-script", "sed script %q: %v", s, err), true
	}
	for _, f := range files {
		if f.name == "/dev/stdout" || f.name == "/dev/stderr" {
			continue
		}
		if d, bad := j.c.pathWord(f.name); bad {
			return d, true
		}
		if f.write {
			j.targets = append(j.targets, target{word: f.name})
		}
	}
	return Decision{}, false
}

// command judges the command a wrapper runs. xargs appends the words it
// reads (or puts them where -I's string stands), which are known only at
// run time; in a pipeline from find they are what find found.
func (j *judgement) command(u use) Decision {
	c := j.c
	inner := slices.Clone(u.words)
	if u.appends {
		in := unknownWord
		if c.stdin != "" && j.inv.has("reads-nul") {
			in = c.stdin
		}
		if len(inner) == 0 {
			inner = []string{"echo"}
		}
		repl := ""
		for _, v := range j.inv.uses {
			if v.role == roleReplace {
				repl = v.word
				if repl == "" {
					repl = "{}"
				}
			}
		}
		if repl == "" {
			inner = append(inner, in)
		} else {
			if strings.Contains(inner[0], repl) {
				return deny("unknown-program", "%s puts its input in the program name", j.inv.canon[0])
			}
			for k, w := range inner {
				if strings.Contains(w, repl) {
					if w != repl {
						return deny("unknown-input", "%s puts its input inside the word %q, which cannot be judged; use %s as a whole word", j.inv.canon[0], w, repl)
					}
					inner[k] = in
				}
			}
		}
	}
	if len(inner) == 0 {
		return c.rules(j.inv.canon, nil, nil)
	}
	n := c.sub()
	n.stdin = ""
	return n.argv(inner)
}

// foundRegion is the unknown word that stands for a file a search passes
// on: below one of its starting points (its read operands), narrowed by
// the name it must have.
func (c *checker) foundRegion(inv *invocation) string {
	var roots, names []string
	for _, u := range inv.uses {
		switch u.role {
		case roleRead:
			if u.opt == "" {
				roots = append(roots, u.word)
			}
		case roleLocate:
			if u.opt == "-name" {
				names = append(names, u.word)
			}
		}
	}
	if len(roots) == 0 {
		roots = []string{"."}
	}
	leaf := "**"
	if len(names) == 1 && !strings.Contains(names[0], "/") {
		leaf = "**/" + names[0]
	}
	var tags []string
	for _, r := range roots {
		for _, pl := range c.places(r) {
			switch {
			case pl.where != inside:
				tags = append(tags, regionOutside)
			case pl.rel == ".":
				tags = append(tags, regionPattern+leaf)
			default:
				tags = append(tags, regionPattern+escapeGlob(pl.rel)+"/"+leaf)
			}
		}
	}
	return unknownIn(tags...)
}

// findActions judges what find does with what it found: each -exec/-ok
// command with {} as the found region, and -delete as rm.
func (c *checker) findActions(inv *invocation, execs []use, found string) Decision {
	d := Decision{Verdict: Allow, Rule: "find", Reason: "find actions"}
	first := true
	for _, u := range execs {
		inner := slices.Clone(u.words)
		if len(inner) == 0 {
			return deny("wrapper-option", "find %s without a command", u.opt)
		}
		for k, w := range inner {
			switch {
			case w == "{}":
				if k == 0 {
					return deny("unknown-program", "find %s puts a file name in the program name", u.opt)
				}
				inner[k] = found
			case strings.Contains(w, "{}"):
				if k == 0 {
					return deny("unknown-program", "find %s puts a file name in the program name", u.opt)
				}
				return deny("unknown-input", "find %s puts a file name inside the word %q, which cannot be judged; use {} as a whole word", u.opt, w)
			case u.role == roleFindExecDir && k > 0 && !strings.HasPrefix(w, "-"):
				// It runs in each found file's folder, which the policy
				// cannot know: a relative word there names anything.
				return deny("wrapper-option", "find %s runs in each found file's folder, so the word %q cannot be judged; use -exec with paths from the workspace root", u.opt, w)
			}
		}
		n := c.sub().argv(inner)
		if first {
			d, first = n, false
		} else {
			d = worse(d, n)
		}
		if d.Verdict == Deny {
			return d
		}
	}
	if inv.has("delete") {
		n := c.sub().argv([]string{"rm", found})
		if first {
			return n
		}
		d = worse(d, n)
	}
	return d
}

// envVar judges NAME=VALUE given to inner (nil: to whatever runs later, as
// export does). Only variables the specs name as safe — for every program,
// or for the program that receives them — pass, with their values judged
// like options.
func (c *checker) envVar(name, val string, inner []string) (Decision, bool) {
	var vars []*envVar
	if inner == nil {
		vars = c.p.allEnv()
	} else {
		vars = append(slices.Clone(c.p.specs.env), c.envFor(inner, 0)...)
	}
	var found *envVar
	for _, v := range vars {
		if v.name.match(name) {
			found = v
			break
		}
	}
	to := "the commands that follow"
	if len(inner) > 0 {
		to = inner[0]
	}
	if found == nil {
		return deny("variable-not-allowed", "setting %s is denied: no spec names it as safe for %s (variables can change what a program loads or runs); pass settings as options", name, to), true
	}
	if found.deny != "" {
		return deny("variable-not-allowed", "setting %s is denied: %s", name, found.deny), true
	}
	if len(found.values) > 0 && !matchesAny(found.values, val) {
		return deny("variable-not-allowed", "%s=%q is not a value the spec allows", name, val), true
	}
	switch found.role {
	case roleText:
		return Decision{}, false
	case roleFlags:
		inv := &invocation{canon: []string{name}}
		words, err := splitFlags(val)
		if err != nil || found.flags == nil {
			return deny("variable-not-allowed", "%s=%q cannot be read: %v", name, val, err), true
		}
		for k := 0; k < len(words); k++ {
			if !found.flags.isOption(words[k]) {
				return deny("variable-not-allowed", "%s holds %q, which is not an option", name, words[k]), true
			}
			n, err := found.flags.option(inv, words, k)
			if err != nil {
				return deny("variable-not-allowed", "%s=%q: %v", name, val, err), true
			}
			if n < 0 {
				break
			}
			k = n
		}
		if inv.denied != "" {
			return deny("variable-not-allowed", "%s holds %s: %s", name, inv.by, inv.denied), true
		}
		j := &judgement{c: c, inv: inv}
		return j.uses(inv.uses)
	}
	j := &judgement{c: c, inv: &invocation{canon: []string{name}}}
	return j.uses([]use{{word: val, role: found.role}})
}

// envFor lists the variables the specs on inner's way name as safe,
// looking through wrappers to the program that runs.
func (c *checker) envFor(inner []string, depth int) []*envVar {
	if len(inner) == 0 || depth > maxDepth {
		return nil
	}
	s := c.p.specs.lookup(inner[0])
	if s == nil {
		return nil
	}
	inv, err := s.parse(inner)
	if err != nil {
		return s.env
	}
	var vars []*envVar
	for _, sp := range inv.path {
		vars = append(vars, sp.env...)
	}
	for _, u := range inv.uses {
		if u.role == roleCommand {
			vars = append(vars, c.envFor(u.words, depth+1)...)
		}
	}
	return vars
}

// allEnv is every variable some spec names as safe: export reaches the
// commands that follow, whichever they are.
func (p *Policy) allEnv() []*envVar {
	vars := slices.Clone(p.specs.env)
	for _, s := range p.specs.programs {
		s.walk(func(sp *spec) { vars = append(vars, sp.env...) })
	}
	return vars
}

// inlineCode judges an interpreter given code on its command line (-c, -e):
// the code cannot be judged, so only a rule that names the program and the
// option word literally (e.g. `python3 -c *`) may ask for or allow it.
func inlineCode(c *checker, argv []string, flag string, literals []string) Decision {
	d := c.rules(argv, nil, func(p *commandPattern) bool { return p.hasLiteral(flag) && p.hasLiterals(literals) })
	if d.Rule == "default-deny" {
		d.Rule = "inline-code"
		d.Reason = fmt.Sprintf("%s %s runs inline code that cannot be judged; only a rule naming %q literally can allow it; write the code to a file in the workspace and run that", argv[0], flag, flag)
	}
	return d
}

// How a program writes its operands, for the read-only check.
type target struct {
	word  string
	below bool
	into  bool // a destination folder: files land in it under their own names
}

// writes turns what the invocation writes into targets and checks them.
func (j *judgement) writes() (Decision, bool) {
	ts := j.targets
	links := j.inv.has("links")
	if j.inv.has("in-place") {
		for _, in := range j.inputs {
			ts = append(ts, target{word: in, below: true})
			if j.suffix == nil || *j.suffix == "" || isUnknown(in) {
				continue
			}
			// A suffix with a * or / names the backup's path (GNU sed).
			b := in + *j.suffix
			if strings.ContainsAny(*j.suffix, "*/") {
				b = strings.ReplaceAll(*j.suffix, "*", path.Base(in))
			}
			if d, bad := j.c.pathWord(b); bad {
				return d, true
			}
			ts = append(ts, target{word: b})
		}
	}
	for _, s := range j.moves {
		ts = append(ts, target{word: s, below: true})
	}
	srcs := slices.Concat(j.srcs, j.moves)
	dest := j.dest
	if links {
		// A link to a read-only path lets later commands write through it
		// (echo >> link). A relative symlink is resolved from the folder
		// the link is in, so that reading of it is checked as well.
		for _, s := range srcs {
			ts = append(ts, target{word: s, below: true})
			if dest != "" && !isUnknown(s) && !isUnknown(dest) && !path.IsAbs(s) {
				ts = append(ts, target{word: path.Join(dest, s), below: true}, target{word: path.Join(path.Dir(dest), s), below: true})
			}
		}
	}
	if dest != "" {
		into := true
		for _, s := range srcs {
			if isUnknown(s) || isUnknown(dest) {
				into = false // a name known only at run time may land anywhere in it
				continue
			}
			ts = append(ts, target{word: path.Join(dest, path.Base(s)), below: true})
		}
		ts = append(ts, target{word: dest, below: true, into: into})
	}
	return j.c.writesTo(j.inv.program(), ts)
}

// writesTo checks the targets prog writes against paths.read_only and the
// read-only folders outside the workspace.
func (c *checker) writesTo(prog string, ts []target) (Decision, bool) {
	for _, t := range ts {
		var rs []region
		var via []string // for each region: how a symlink led there, for the reason
		if isUnknown(t.word) {
			if strings.Contains(t.word, unknownWord+regionOutside) {
				return deny("path-outside-workspace", "%s writes a glob that may name files outside the workspace (commands.read_only_dirs are for reading); name files inside the workspace", prog), true
			}
			var ok bool
			if rs, ok = regionsOf(t.word); ok {
				via = make([]string, len(rs))
			} else {
				if len(c.p.pathReadOnly) == 0 {
					continue
				}
				r := c.p.pathReadOnly[0]
				return deny(r.String(), "%s writes a path known only at run time (<unknown>), which may be read-only (%s %q); name the files instead", prog, r.list, r.src), true
			}
		} else {
			for _, pl := range c.places(t.word) {
				switch {
				case pl.where == inside:
					rs = append(rs, literalRegion(pl.rel))
					via = append(via, "")
					if pl.link {
						via[len(via)-1] = fmt.Sprintf(" (through a symlink to %q)", pl.rel)
					}
				case pl.where == readOnly && pl.link:
					return deny("path-outside-workspace", "%s writes %q, which leads through a symlink to %s, outside the workspace (commands.read_only_dirs are for reading)", prog, t.word, pl.shown()), true
				case pl.where == readOnly && path.Clean(t.word) != "/dev/null":
					return deny("path-outside-workspace", "%s writes %q, outside the workspace (commands.read_only_dirs are for reading)", prog, t.word), true
				}
			}
		}
		for i, rg := range rs {
			// The workspace root always exists as a folder: what lands in
			// it is judged by the names it lands under.
			if t.below && !(t.into && len(rg) == 0) {
				rg = rg.below()
			}
			for _, r := range c.p.pathReadOnly {
				if rg.meets(patternRegion(r.g.src)) {
					return deny(r.String(), "%s writes %s%s, which is read-only or holds read-only files (%s %q); name only the files or folders it should change", prog, showWord(t.word), via[i], r.list, r.src), true
				}
			}
		}
	}
	return Decision{}, false
}

func showWord(w string) string {
	if isUnknown(w) {
		return "<unknown>"
	}
	return fmt.Sprintf("%q", w)
}
