package policy

import (
	_ "embed"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// Commands are parsed as POSIX sh, the language of the `sh -c` that runs
// them in shell mode.
func parseShell(line string) (*syntax.File, error) {
	return syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(line), "")
}

// ParseCommand parses a command line from the model. A line that is one
// simple command of plain words (quotes are resolved: `g'i't` is "git")
// becomes Argv with Shell false. Anything else a shell would interpret —
// pipes, ;, &&, ||, redirections, command or parameter substitution, globs,
// variable assignments, subshells, background jobs, several lines — gives
// Shell true and no Argv. A syntax error is returned with its line:column.
func ParseCommand(line string) (Command, error) {
	f, err := parseShell(line)
	if err != nil {
		return Command{}, fmt.Errorf("parse command: %w", err)
	}
	if len(f.Stmts) == 0 {
		return Command{}, ErrEmptyCommand
	}
	if argv, ok := simpleArgv(f); ok {
		return Command{Line: line, Argv: argv}, nil
	}
	return Command{Line: line, Shell: true}, nil
}

var plainWord = regexp.MustCompile(`^[A-Za-z0-9_./=:,+@%^-]+$`)

// QuoteArgv writes argv as a command line that ParseCommand reads back into
// the same words: plain words as they are, any other in single quotes.
func QuoteArgv(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if plainWord.MatchString(a) {
			q[i] = a
		} else {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}

// simpleArgv returns the argv of a file that is exactly one simple command
// of literal words.
func simpleArgv(f *syntax.File) ([]string, bool) {
	if len(f.Stmts) != 1 {
		return nil, false
	}
	st := f.Stmts[0]
	// A ; even at the end makes the line a shell line: with shell mode
	// off no line with a shell operator runs, not even a harmless one.
	if st.Negated || st.Background || st.Coprocess || len(st.Redirs) > 0 || st.Semicolon.IsValid() {
		return nil, false
	}
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Assigns) > 0 || len(call.Args) == 0 {
		return nil, false
	}
	argv := make([]string, 0, len(call.Args))
	for _, w := range call.Args {
		v := wordValue(w)
		if v.kind != wordLiteral && !optionGlob(v) {
			return nil, false
		}
		argv = append(argv, v.text)
	}
	return argv, true
}

// optionGlob reports whether v is an option word with glob characters in
// its value (--include=*.go). Run without a shell the program receives it
// as written, which is what it means; sh would expand it only against
// files whose names start with the option itself.
func optionGlob(v wordVal) bool {
	return v.kind == wordGlob && isOption(v.text)
}

type wordKind int

const (
	wordLiteral wordKind = iota
	wordGlob             // literal text with unquoted glob characters
	wordUnknown          // an expansion whose value is known only at run time
)

type wordVal struct {
	kind wordKind
	text string // for wordGlob: the text with glob characters as written
	what string // for wordUnknown: the construct, for the reason
}

// wordValue resolves quotes and backslashes in a word the way sh does.
func wordValue(w *syntax.Word) wordVal {
	var b strings.Builder
	kind := wordLiteral
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			s := p.Value
			for i := 0; i < len(s); i++ {
				c := s[i]
				if c == '\\' && i+1 < len(s) {
					i++
					if s[i] != '\n' {
						b.WriteByte(s[i])
					}
					continue
				}
				if c == '*' || c == '?' || (c == '[' && strings.IndexByte(s[i+1:], ']') >= 0) {
					kind = wordGlob
				}
				b.WriteByte(c)
			}
		case *syntax.SglQuoted:
			if p.Dollar {
				return wordVal{kind: wordUnknown, what: "$'...' quoting"}
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return wordVal{kind: wordUnknown, what: `$"..." quoting`}
			}
			for _, q := range p.Parts {
				lit, ok := q.(*syntax.Lit)
				if !ok {
					return wordVal{kind: wordUnknown, what: partName(q)}
				}
				s := lit.Value
				for i := 0; i < len(s); i++ {
					if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
						i++
						if s[i] != '\n' {
							b.WriteByte(s[i])
						}
						continue
					}
					b.WriteByte(s[i])
				}
			}
		default:
			return wordVal{kind: wordUnknown, what: partName(p)}
		}
	}
	return wordVal{kind: kind, text: b.String()}
}

func partName(p syntax.WordPart) string {
	switch p.(type) {
	case *syntax.ParamExp:
		return "a variable expansion"
	case *syntax.CmdSubst:
		return "a command substitution"
	case *syntax.ArithmExp:
		return "an arithmetic expansion"
	case *syntax.ProcSubst:
		return "a process substitution"
	case *syntax.ExtGlob:
		return "an extended glob"
	case *syntax.BraceExp:
		return "a brace expansion"
	}
	return fmt.Sprintf("%T", p)
}

// maxDepth bounds how deeply wrappers and shells may nest (`sh -c "env
// timeout 5 sh -c ..."`) before the command is denied.
const maxDepth = 8

// checker judges one command; it carries the scope and the nesting depth.
type checker struct {
	p     *Policy
	ws    string
	alias []string
	base  string   // workspace-relative folder relative words start from
	cwds  []string // folders a shell-mode cd may have moved to
	links Links    // where workspace paths lead through symlinks; nil: as written
	// enforced: the sandbox holds the path, network and limit rules
	// (Scope.Enforced), so only which programs run is judged.
	enforced bool
	depth    int
	// stdin, when set, is the unknown word standing for what a pipeline
	// feeds this command (find's found files, for xargs).
	stdin string
}

// Bounds of what Linux's execve accepts: MAX_ARG_STRLEN for one argument,
// and the usual ARG_MAX for all.
const (
	maxArg  = 128 << 10
	maxLine = 2 << 20
)

func argvSize(argv []string) int {
	n := 0
	for _, a := range argv {
		n += len(a) + 1
	}
	return n
}

// CheckCommand decides whether a command may run. Rules are matched word by
// word against argv: commands.deny beats commands.ask beats commands.allow,
// and a command no rule matches is denied. Wrappers (env, timeout, xargs,
// find -exec, sh -c, ...) are judged as what they run; path arguments must
// stay inside the workspace or a commands.read_only_dirs folder (and, with
// Scope.Links, so must what they lead to through symlinks). A Shell
// command is denied unless commands.shell is true, and then every simple
// command inside is judged and the most restrictive decision wins.
func (p *Policy) CheckCommand(cmd Command, s Scope) Decision {
	d := p.checkCommand(cmd, s)
	if d.Verdict == Deny || (d.Verdict == Ask && p.Unattended()) {
		d.Reason = withRemedy(d.Rule, d.Reason)
	}
	return d
}

func (p *Policy) checkCommand(cmd Command, s Scope) Decision {
	c := &checker{p: p, base: ".", links: s.Links, enforced: s.Enforced}
	if s.Dir != "" {
		dir, ok := cleanRel(s.Dir)
		if !ok {
			return deny("path-outside-workspace", "the working folder %q is not inside the workspace", s.Dir)
		}
		c.base = dir
		if c.links != nil {
			if t, ok := c.links.Resolve(dir); !ok || path.IsAbs(t) {
				return deny("path-outside-workspace", "the working folder %q leads outside the workspace (through a symlink to %s)", s.Dir, placed{target: t}.shown())
			}
		}
	}
	if strings.ContainsRune(cmd.Line, 0) || slices.ContainsFunc(cmd.Argv, func(a string) bool { return strings.ContainsRune(a, 0) }) {
		return deny("syntax-error", "the command contains a NUL byte, which no program can receive")
	}
	// What the kernel would refuse to run is refused before it is judged,
	// so that judging stays linear in what can run.
	if len(cmd.Line) > maxLine || slices.ContainsFunc(cmd.Argv, func(a string) bool { return len(a) > maxArg }) || argvSize(cmd.Argv) > maxLine {
		return deny("too-long", "the command is longer than Linux passes to a program (%d KiB per argument, %d KiB in all)", maxArg>>10, maxLine>>10)
	}
	if s.Workspace != "" {
		c.ws = path.Clean(s.Workspace)
	}
	for _, a := range s.Aliases {
		if a != "" {
			c.alias = append(c.alias, path.Clean(a))
		}
	}
	// Argv is what runs when Shell is false; otherwise sh -c Line runs.
	if cmd.Shell || cmd.Argv == nil {
		return c.line(cmd.Line)
	}
	return c.argv(cmd.Argv)
}

// remedies is what would allow a command each rule denies
// (remedies.txt): a denial says how to get past it, not only why.
//
//go:embed remedies.txt
var remediesText string

var remedies = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(remediesText, "\n") {
		if rule, hint, ok := strings.Cut(l, "\t"); ok && !strings.HasPrefix(l, "#") {
			m[rule] = hint
		}
	}
	return m
})

// withRemedy adds to a denial's reason what would allow the command. A
// policy rule ("commands.deny: \"curl *\" (policy.yaml:9)") is looked up
// by its list; where several rules decided, by the first.
func withRemedy(rule, reason string) string {
	key, _, _ := strings.Cut(rule, ":")
	key, _, _ = strings.Cut(key, " ")
	hint, ok := remedies()[key]
	if !ok || strings.Contains(reason, "to allow it: ") {
		return reason
	}
	return reason + " — to allow it: " + hint
}

func deny(rule, format string, args ...any) Decision {
	return Decision{Verdict: Deny, Rule: rule, Reason: fmt.Sprintf(format, args...)}
}

// worse returns the more restrictive decision. Between two allows or two
// asks it keeps both rules: an audit shows every rule a shell line relied
// on, and a person's "always" for one ask rule does not approve a line that
// also needs another.
func worse(a, b Decision) Decision {
	switch {
	case b.Verdict < a.Verdict:
		return b
	case a.Verdict == b.Verdict && a.Verdict != Deny && b.Rule != a.Rule && !strings.Contains(a.Rule, b.Rule):
		a.Rule += "; " + b.Rule
		a.Reason += "; " + b.Reason
	}
	return a
}

func (c *checker) sub() *checker {
	n := *c
	n.cwds = append([]string(nil), c.cwds...)
	n.depth++
	return &n
}

// line judges a command line: a plain simple command as argv, anything else
// as a shell script.
func (c *checker) line(line string) Decision {
	f, err := parseShell(line)
	if err != nil {
		return deny("syntax-error", "the command does not parse: %v", err)
	}
	if len(f.Stmts) == 0 {
		return deny("empty-command", "the command line is empty")
	}
	if argv, ok := simpleArgv(f); ok {
		return c.argv(argv)
	}
	if !c.p.shell && !c.enforced {
		if c.p.pipes {
			if d, ok := c.pipeline(f); ok {
				return d
			}
			return deny("shell-disabled", "the line needs a shell (redirections, ;, &&, substitutions, globs or variables) and commands.shell is pipes, which runs only a plain command piped into read-only filters (| head, | tail, | wc, | grep, | sort); run one plain command, or write files with write_file")
		}
		return deny("shell-disabled", "the line needs a shell (pipes, redirections, ;, &&, substitutions, globs or variables) and commands.shell is false; run one plain command")
	}
	if c.depth >= maxDepth {
		return deny("too-deep", "shells and wrappers nest more than %d deep", maxDepth)
	}
	sc := &shellChecker{c: c.sub()}
	return sc.stmts(f.Stmts)
}

// argv judges one program invocation: by its spec when the policy has one
// for the program (specs/*.yaml), else by the rules with every word that
// may be a path confined.
func (c *checker) argv(argv []string) Decision {
	if c.depth > maxDepth {
		return deny("too-deep", "shells and wrappers nest more than %d deep", maxDepth)
	}
	if len(argv) == 0 || argv[0] == "" {
		return deny("empty-command", "no program to run")
	}
	if isUnknown(argv[0]) {
		return deny("unknown-program", "the program name is known only at run time, so it cannot be judged")
	}
	if why, ok := deniedBuiltins[argv[0]]; ok {
		return deny("shell-builtin", "%s", why)
	}
	if s := c.p.specs.lookup(argv[0]); s != nil {
		return c.specified(argv, s)
	}
	if strings.Contains(argv[0], "/") {
		// A program the run built is judged as the path it is; one that
		// is a symlink to a system program would run that program under a
		// workspace name.
		for _, pl := range c.places(argv[0]) {
			if pl.link && pl.where != inside {
				return deny("path-outside-workspace", "program %q leads through a symlink to %s, outside the workspace; run the program by its own name", argv[0], pl.shown())
			}
		}
	}
	if c.enforced {
		return c.rules(argv, nil, nil)
	}
	if d, bad := c.args(argv); bad {
		return d
	}
	return c.rules(argv, nil, nil)
}

// explicit returns the decision of a deny or ask rule that matches argv, if
// any. Wrappers use it: a wrapper needs no allow rule of its own, but deny
// and ask rules written for it still hold.
func (c *checker) explicit(argv []string) (Decision, bool) {
	for _, r := range c.p.cmdDeny {
		if r.match(argv, true) {
			return ruleDecision(Deny, r, argv), true
		}
	}
	for _, r := range c.p.cmdAsk {
		if r.match(argv, false) {
			return ruleDecision(Ask, r, argv), true
		}
	}
	return Decision{}, false
}

// rules matches argv against the command rules in order deny, ask, allow.
// canon, when set, is argv with abbreviations spelled out: deny and ask
// rules match it too. keep, when set, limits the ask and allow rules that
// may match (deny rules always apply).
func (c *checker) rules(argv, canon []string, keep func(*commandPattern) bool) Decision {
	for _, r := range c.p.cmdDeny {
		if r.match(argv, true) || (canon != nil && r.match(canon, true)) {
			return ruleDecision(Deny, r, argv)
		}
	}
	for _, l := range []struct {
		rules []*commandPattern
		v     Verdict
	}{{c.p.cmdAsk, Ask}, {c.p.cmdAllow, Allow}} {
		for _, r := range l.rules {
			if (keep == nil || keep(r)) && (r.match(argv, false) || (l.v == Ask && canon != nil && r.match(canon, false))) {
				return ruleDecision(l.v, r, argv)
			}
		}
	}
	if strings.Contains(argv[0], "/") {
		return deny("default-deny", "program %q is named by a path and no rule names that path (a rule for the bare name does not match it)", argv[0])
	}
	return deny("default-deny", "no commands rule matches %q", showArgv(argv))
}

func ruleDecision(v Verdict, r *commandPattern, argv []string) Decision {
	return Decision{Verdict: v, Rule: r.String(),
		Reason: fmt.Sprintf("%q matches %s %q", showArgv(argv), r.list, r.src)}
}

// showArgv renders argv for a reason, quoting words with blanks.
func showArgv(argv []string) string {
	var b strings.Builder
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		switch {
		case isUnknown(a):
			b.WriteString("<unknown>")
		case a == "" || strings.ContainsAny(a, " \t\n'\"\\"):
			b.WriteString(syntaxQuote(a))
		default:
			b.WriteString(a)
		}
	}
	return b.String()
}

func syntaxQuote(s string) string {
	if q, err := syntax.Quote(s, syntax.LangPOSIX); err == nil {
		return q
	}
	return fmt.Sprintf("%q", s)
}

// args confines the path arguments of argv. A word (or the value of a
// --flag=value or NAME=value word, or what follows a short flag such as
// -o/x) that is absolute, starts with ~ or contains .. is cleaned against
// the workspace; it must stay inside it or inside a read-only toolchain
// folder. A word that names a workspace path under paths.deny is denied too.
func (c *checker) args(argv []string) (Decision, bool) {
	for _, a := range argv {
		if isUnknown(a) {
			continue
		}
		if d, bad := c.pathWord(a); bad {
			return d, true
		}
		if k := strings.IndexByte(a, '='); k >= 0 {
			if d, bad := c.pathWord(a[k+1:]); bad {
				return d, true
			}
		}
		if k := optionValueAt(a); k > 0 {
			if d, bad := c.pathWord(a[k:]); bad {
				return d, true
			}
		}
	}
	return Decision{}, false
}

// optionValueAt returns where a path glued to a short option cluster starts
// (-o/tmp/x, -rf/etc/passwd, -I../inc), or 0.
func optionValueAt(a string) int {
	if len(a) < 3 || a[0] != '-' || a[1] == '-' {
		return 0
	}
	k := 1
	for k < len(a) && (a[k] >= 'a' && a[k] <= 'z' || a[k] >= 'A' && a[k] <= 'Z' || a[k] >= '0' && a[k] <= '9') {
		k++
	}
	if k > 1 && k < len(a) && (a[k] == '/' || a[k] == '~' || a[k] == '.') {
		return k
	}
	return 0
}

// pathWord checks one word that may be a path.
func (c *checker) pathWord(w string) (Decision, bool) {
	if w == "" || isUnknown(w) {
		return Decision{}, false
	}
	for _, pl := range c.places(w) {
		switch pl.where {
		case outside:
			if pl.link {
				return deny("path-outside-workspace", "argument %q leads through a symlink to %s, outside the workspace and outside commands.read_only_dirs", w, pl.shown()), true
			}
			return deny("path-outside-workspace", "argument %q is outside the workspace and outside commands.read_only_dirs", w), true
		case inside:
			if r, ok := c.p.deniedPath(pl.rel); ok {
				return deny(r.String(), "argument %q names %q%s, denied by %s %q", w, pl.rel, pl.through(), r.list, r.src), true
			}
		}
	}
	return Decision{}, false
}

type place int

const (
	inside place = iota
	readOnly
	outside
)

type placed struct {
	rel   string
	where place
	// link is set when the place is where a symlink leads; target is then
	// the absolute path it leads to when that is outside the workspace
	// ("" when the link cannot be followed).
	link   bool
	target string
}

// shown names where a link outside the workspace leads, for a reason.
func (pl placed) shown() string {
	if pl.target == "" {
		return "a place that cannot be followed (a loop or an unreadable link)"
	}
	return fmt.Sprintf("%q", pl.target)
}

// through says, in a reason, that a workspace path was reached through a
// symlink.
func (pl placed) through() string {
	if pl.link {
		return " (through a symlink)"
	}
	return ""
}

// places resolves a word that may be a path: inside the workspace (with its
// cleaned relative path), inside a read-only folder, or outside both. After
// a cd in shell mode a relative word is resolved against the workspace root
// and against every folder cd named, because which one applies depends on
// how the script runs. With Scope.Links, a workspace path that passes
// through a symlink is placed twice: as written, and where it leads.
func (c *checker) places(w string) []placed {
	pls := c.placesAsWritten(w)
	if c.links == nil {
		return pls
	}
	out := pls
	for _, pl := range pls {
		if pl.where == readOnly && path.IsAbs(w) {
			// A path under a read-only folder is trusted by its text only
			// when no symlink takes it elsewhere.
			if sys, ok := c.links.(SystemLinks); ok {
				t, ok := sys.ResolveSystem(path.Clean(w))
				if !ok {
					t = ""
				}
				if t != path.Clean(w) {
					out = append(out, c.linkPlace(t))
				}
			}
			continue
		}
		if pl.where != inside || pl.rel == "." {
			continue
		}
		t, ok := c.links.Resolve(pl.rel)
		switch {
		case !ok:
			t = ""
		case t == pl.rel:
			continue
		}
		out = append(out, c.linkPlace(t))
	}
	return out
}

// linkPlace places what a symlink leads to: a workspace-relative path, an
// absolute one, or "" when it cannot be followed.
func (c *checker) linkPlace(t string) placed {
	switch {
	case t == "":
		return placed{where: outside, link: true}
	case strings.HasPrefix(t, "/"):
		pl := c.placeAbs(path.Clean(t))
		pl.link, pl.target = true, path.Clean(t)
		return pl
	}
	rel, ok := cleanRel(t)
	if !ok {
		return placed{where: outside, link: true, target: t}
	}
	return placed{rel: rel, link: true}
}

// placesAsWritten is places without following symlinks.
func (c *checker) placesAsWritten(w string) []placed {
	switch {
	case strings.HasPrefix(w, "~"):
		clean := path.Clean(w)
		for _, d := range c.p.readOnlyDirs {
			if strings.HasPrefix(d, "~") && within(clean, d) {
				return []placed{{where: readOnly}}
			}
		}
		return []placed{{where: outside}}
	case strings.HasPrefix(w, "/"):
		return []placed{c.placeAbs(path.Clean(w))}
	}
	out := make([]placed, 0, 1+len(c.cwds))
	for _, dir := range append([]string{c.base}, c.cwds...) {
		clean := path.Join(dir, w)
		if clean == ".." || strings.HasPrefix(clean, "../") {
			return []placed{{where: outside}}
		}
		out = append(out, placed{rel: clean})
	}
	return out
}

// placeAbs places a cleaned absolute path.
func (c *checker) placeAbs(clean string) placed {
	for _, root := range append([]string{c.ws}, c.alias...) {
		if root == "" {
			continue
		}
		if within(clean, root) {
			rel := strings.TrimPrefix(strings.TrimPrefix(clean, root), "/")
			if rel == "" {
				rel = "."
			}
			return placed{rel: rel}
		}
	}
	for _, d := range c.p.readOnlyDirs {
		if within(clean, d) {
			return placed{where: readOnly}
		}
	}
	if clean == "/dev/null" {
		return placed{where: readOnly}
	}
	return placed{where: outside}
}

// within reports whether clean path p is dir or below it.
func within(p, dir string) bool {
	return p == dir || (strings.HasPrefix(p, dir) && (dir == "/" || p[len(dir)] == '/'))
}
