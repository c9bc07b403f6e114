package policy

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// A wrapper runs another program. It is judged as what it runs: its inner
// command goes through the same checks (rules, wrappers, paths), deny and
// ask rules written for the wrapper itself still apply, and an option the
// judge does not understand denies the command.
type wrapperFunc func(c *checker, argv []string) Decision

var wrappers map[string]wrapperFunc

// init fills wrappers: a composite-literal initializer would be an
// initialization cycle, since wrappers judge their inner command through
// checker.argv, which consults this map.
func init() {
	wrappers = map[string]wrapperFunc{
		"sh": judgeShell, "bash": judgeShell, "dash": judgeShell, "zsh": judgeShell,
		"ksh": judgeShell, "mksh": judgeShell, "ash": judgeShell,
		"env":    judgeEnv,
		"xargs":  judgeXargs,
		"find":   judgeFind,
		"node":   judgeNode,
		"nodejs": judgeNode,
		"perl":   judgePerl,
		"ruby":   judgePerl,
		"git":    judgeGit,
		"npm":    judgeNpm,
	}
	for name := range wrapperSyntaxes {
		wrappers[name] = judgeSimple
	}
}

// wrapped judges a transparent wrapper whose inner command is inner.
func (c *checker) wrapped(argv, inner []string) Decision {
	if len(inner) == 0 {
		return c.rules(argv, nil)
	}
	d := c.sub().argv(inner)
	if own, ok := c.explicit(argv); ok {
		d = worse(own, d)
	}
	return d
}

// isOption reports whether a is an option word: it starts with "-" and is
// not "-" alone, which names standard input.
func isOption(a string) bool { return len(a) > 1 && a[0] == '-' }

func unknownOption(argv []string, opt string) Decision {
	return deny("wrapper-option", "%s option %q is not understood by the policy, so what it runs cannot be judged", argv[0], opt)
}

// judgeShell: "sh -c CODE" is judged as CODE (parsed as a command line, in
// the policy's shell mode); "sh script" and "sh" reading its input are
// judged by the rules on the shell itself, like running any script.
func judgeShell(c *checker, argv []string) Decision {
	inline := false
	i := 1
loop:
	for ; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "--" || a == "-":
			i++
			break loop
		case a == "--rcfile" || a == "--init-file" || a == "--login" || a == "--interactive":
			// Start-up files would run before the judged code.
			return unknownOption(argv, a)
		case a == "-o" || a == "+o" || a == "-O" || a == "+O":
			i++
		case strings.HasPrefix(a, "--"):
		case len(a) > 1 && (a[0] == '-' || a[0] == '+'):
			if strings.ContainsAny(a[1:], "il") {
				return unknownOption(argv, a) // interactive and login shells read start-up files
			}
			if strings.ContainsRune(a[1:], 'c') {
				inline = true
			}
			if strings.ContainsAny(a[1:], "oO") {
				i++
			}
		default:
			break loop
		}
	}
	if !inline {
		return c.rules(argv, nil)
	}
	if i >= len(argv) {
		return deny("wrapper-option", "%s -c without a command", argv[0])
	}
	if isUnknown(argv[i]) {
		return deny("unknown-program", "%s -c runs code known only at run time", argv[0])
	}
	d := c.sub().line(argv[i])
	if own, ok := c.explicit(argv); ok {
		d = worse(own, d)
	}
	return d
}

// Variables that change which program runs or inject code into one.
var dangerousVars = map[string]string{
	"PATH": "it changes which file a program name runs", "IFS": "it changes how the shell splits words",
	"BASH_ENV": "the shell runs the file it names", "ENV": "the shell runs the file it names",
	"SHELLOPTS": "it changes shell behaviour", "BASHOPTS": "it changes shell behaviour",
	"PS4": "it can run code", "PROMPT_COMMAND": "it runs code",
	"PAGER": "programs run it", "MANPAGER": "programs run it", "EDITOR": "programs run it", "VISUAL": "programs run it",
	"BROWSER": "programs run it", "LESSOPEN": "less runs it", "LESSCLOSE": "less runs it",
	"PYTHONSTARTUP": "python runs the file it names", "PYTHONPATH": "it changes which code python imports",
	"PYTHONHOME": "it changes which python runs", "PYTHONINSPECT": "it changes how python runs",
	"NODE_OPTIONS": "it can load code into node", "NODE_PATH": "it changes which code node loads",
	"PERL5OPT": "it can run perl code", "PERL5LIB": "it changes which code perl loads", "PERLLIB": "it changes which code perl loads",
	"RUBYOPT": "it can load ruby code", "RUBYLIB": "it changes which code ruby loads",
	"GOFLAGS": "it can add -toolexec or -exec to every go command", "GOTOOLCHAIN": "it can download and run another Go toolchain",
	"GOENV": "it points go at another configuration", "CC": "go runs it", "CXX": "go runs it",
	"SSH_ASKPASS": "programs run it", "SUDO_ASKPASS": "programs run it", "TAR_OPTIONS": "it adds options to tar",
	"HOME": "programs read their configuration from it", "CDPATH": "it changes where cd goes",
	"GLOBIGNORE": "it makes bash globs match dot files",
}

var dangerousPrefixes = []string{"LD_", "DYLD_", "GIT_", "CGO_C", "CGO_LD", "CGO_F"}

// dangerousVar says why setting name is denied, or "" when it is not.
func dangerousVar(name string) string {
	if why, ok := dangerousVars[name]; ok {
		return why
	}
	for _, p := range dangerousPrefixes {
		if strings.HasPrefix(name, p) {
			return "variables starting with " + p + " change which code runs"
		}
	}
	return ""
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// judgeEnv: env [-i] [-u NAME] [-C DIR] [NAME=VALUE]... COMMAND; with -C,
// the command's relative words are judged from DIR.
func judgeEnv(c *checker, argv []string) Decision {
	i := 1
	var chdir []string
	for ; i < len(argv); i++ {
		a := argv[i]
		if a == "--" {
			i++
			break
		}
		if !isOption(a) {
			break
		}
		switch {
		case a == "-i" || a == "--ignore-environment" || a == "-0" || a == "--null" || a == "-v" || a == "--debug":
		case a == "-C" || a == "--chdir":
			if i+1 >= len(argv) {
				return deny("wrapper-option", "env %s without a folder", a)
			}
			chdir = append(chdir, argv[i+1])
			i++
		case strings.HasPrefix(a, "--chdir="):
			chdir = append(chdir, strings.TrimPrefix(a, "--chdir="))
		case strings.HasPrefix(a, "-C"):
			chdir = append(chdir, a[2:])
		case a == "-u" || a == "--unset":
			if i+1 >= len(argv) {
				return deny("wrapper-option", "env %s without a name", a)
			}
			i++
		case strings.HasPrefix(a, "-u") || strings.HasPrefix(a, "--unset="):
		default:
			// -S/--split-string splits a string into a command line the
			// policy would have to re-parse; it and unknown options deny.
			return unknownOption(argv, a)
		}
	}
	for ; i < len(argv); i++ {
		a := argv[i]
		if a == "-" {
			continue
		}
		if !envName.MatchString(a) {
			break
		}
		name := a[:strings.IndexByte(a, '=')]
		if why := dangerousVar(name); why != "" {
			return deny("dangerous-variable", "env setting %s is denied: %s", name, why)
		}
	}
	if len(chdir) == 0 {
		return c.wrapped(argv, argv[i:])
	}
	in := c.sub()
	for _, dir := range chdir {
		// One folder as written, or as written and where its symlink leads:
		// the command runs in the latter.
		pls := c.places(dir)
		if isUnknown(dir) || len(pls) == 0 || len(pls) > 2 || (len(pls) == 2 && !pls[1].link) ||
			slices.ContainsFunc(pls, func(pl placed) bool { return pl.where != inside }) {
			return deny("path-outside-workspace", "env -C %q must name one folder inside the workspace", dir)
		}
		in.base = pls[len(pls)-1].rel
	}
	in.depth--
	return in.wrapped(argv, argv[i:])
}

// judgeXargs: xargs [options] COMMAND [ARGS]; the words xargs reads are
// unknown, so the inner command is judged with one unknown word appended
// (or with unknown words where -I's replacement string stands).
func judgeXargs(c *checker, argv []string) Decision {
	repl := ""
	i := 1
	for ; i < len(argv); i++ {
		a := argv[i]
		if a == "--" {
			i++
			break
		}
		if !isOption(a) {
			break
		}
		switch {
		case a == "-0" || a == "--null" || a == "-o" || a == "--open-tty" || a == "-p" || a == "--interactive" ||
			a == "-r" || a == "--no-run-if-empty" || a == "-t" || a == "--verbose" || a == "-x" || a == "--exit" ||
			a == "--show-limits" || a == "-e" || a == "-l":
		case a == "-a" || a == "-d" || a == "-E" || a == "-L" || a == "-n" || a == "-P" || a == "-s" ||
			a == "--arg-file" || a == "--delimiter" || a == "--max-args" || a == "--max-lines" || a == "--max-procs" ||
			a == "--max-chars" || a == "--process-slot-var":
			if i+1 >= len(argv) {
				return deny("wrapper-option", "xargs %s without a value", a)
			}
			i++
		case a == "-I":
			if i+1 >= len(argv) {
				return unknownOption(argv, a)
			}
			i++
			repl = argv[i]
		case a == "-i" || a == "--replace":
			repl = "{}"
		case strings.HasPrefix(a, "--replace="):
			repl = strings.TrimPrefix(a, "--replace=")
		case strings.HasPrefix(a, "-I") || strings.HasPrefix(a, "-i"):
			repl = a[2:]
		case len(a) > 2 && strings.ContainsRune("adELnPsle", rune(a[1])) && a[1] != '-':
			// attached values: -n1, -d'\n', -L1, -P4, -l1, -eEOF
		case strings.HasPrefix(a, "--") && strings.Contains(a, "="):
			name := a[:strings.IndexByte(a, '=')]
			switch name {
			case "--arg-file", "--delimiter", "--max-args", "--max-lines", "--max-procs", "--max-chars", "--eof", "--process-slot-var":
			default:
				return unknownOption(argv, a)
			}
		default:
			return unknownOption(argv, a)
		}
	}
	inner := append([]string(nil), argv[i:]...)
	if len(inner) == 0 {
		inner = []string{"echo"}
	}
	if repl == "" {
		inner = append(inner, unknownWord)
	} else {
		if strings.Contains(inner[0], repl) {
			return deny("unknown-program", "xargs -I puts its input in the program name")
		}
		for k, w := range inner {
			if strings.Contains(w, repl) {
				inner[k] = unknownWord
			}
		}
	}
	return c.wrapped(argv, inner)
}

// judgeFind: find needs a rule of its own; each -exec/-execdir/-ok/-okdir
// command is judged with {} as an unknown word, and -delete as rm.
func judgeFind(c *checker, argv []string) Decision {
	d := c.rules(argv, nil)
	if d.Verdict == Deny {
		return d
	}
	found := c.findRegion(argv)
	for i := 1; i < len(argv); i++ {
		switch argv[i] {
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for ; j < len(argv); j++ {
				if argv[j] == ";" || (argv[j] == "+" && j > i+1 && argv[j-1] == "{}") {
					break
				}
			}
			if j >= len(argv) {
				return deny("wrapper-option", "find %s without a closing ; or +", argv[i])
			}
			inner := append([]string(nil), argv[i+1:j]...)
			if len(inner) == 0 {
				return deny("wrapper-option", "find %s without a command", argv[i])
			}
			for k, w := range inner {
				if strings.Contains(w, "{}") {
					if k == 0 {
						return deny("unknown-program", "find %s puts a file name in the program name", argv[i])
					}
					inner[k] = found
				} else if dir := argv[i] == "-execdir" || argv[i] == "-okdir"; dir && k > 0 && !strings.HasPrefix(w, "-") {
					// It runs in each found file's folder, which the policy
					// cannot know: a relative word there names anything.
					return deny("wrapper-option", "find %s runs in each found file's folder, so the word %q cannot be judged; use -exec with paths from the workspace root", argv[i], w)
				}
			}
			d = worseStop(d, func() Decision { return c.sub().argv(inner) })
			i = j
		case "-delete":
			d = worseStop(d, func() Decision { return c.sub().argv([]string{"rm", found}) })
		}
		if d.Verdict == Deny {
			return d
		}
	}
	return d
}

// findRegion is the unknown word that stands for a file find passes on:
// something below one of its starting points.
func (c *checker) findRegion(argv []string) string {
	var roots []string
	for _, a := range argv[1:] {
		if strings.HasPrefix(a, "-") || a == "(" || a == "!" || isUnknown(a) {
			break
		}
		roots = append(roots, a)
	}
	if len(roots) == 0 {
		roots = []string{"."}
	}
	var tags []string
	for _, r := range roots {
		for _, pl := range c.places(r) {
			switch {
			case pl.where != inside:
				tags = append(tags, regionOutside)
			case pl.rel == ".":
				tags = append(tags, regionPattern+"**")
			default:
				tags = append(tags, regionPattern+escapeGlob(pl.rel)+"/**")
			}
		}
	}
	return unknownIn(tags...)
}

// inlineCode judges an interpreter given code on its command line (-c, -e):
// the code cannot be judged, so only a rule that names the program and the
// flag word literally (e.g. `python3 -c *`) may ask for or allow it.
func inlineCode(c *checker, argv []string, flag string) Decision {
	d := c.rules(argv, func(p *commandPattern) bool { return p.hasLiteral(flag) })
	if d.Rule == "default-deny" {
		d.Rule = "inline-code"
		d.Reason = fmt.Sprintf("%s %s runs inline code that cannot be judged; only a rule naming %q literally can allow it", argv[0], flag, flag)
	}
	return d
}

var pythonName = regexp.MustCompile(`^(python|python[23](\.[0-9]+)?|pypy3?)$`)

func isPython(name string) bool {
	return (strings.HasPrefix(name, "python") || strings.HasPrefix(name, "pypy")) && pythonName.MatchString(name)
}

// judgePython: python -c CODE is inline code; python -m MOD and python
// FILE are judged by the rules.
func judgePython(c *checker, argv []string) Decision {
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		if !isOption(a) || a == "--" {
			break
		}
		if a == "--check-hash-based-pycs" {
			i++
			continue
		}
		if strings.HasPrefix(a, "--") {
			continue
		}
		for k := 1; k < len(a); k++ {
			switch a[k] {
			case 'c':
				return inlineCode(c, argv, a)
			case 'm':
				return c.rules(argv, nil)
			case 'W', 'X':
				if k == len(a)-1 {
					i++
				}
				k = len(a)
			}
		}
	}
	return c.rules(argv, nil)
}

// judgeNode: -e/--eval/-p/--print run inline code.
func judgeNode(c *checker, argv []string) Decision {
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		if !isOption(a) || a == "--" {
			break
		}
		name, _, _ := strings.Cut(a, "=")
		switch {
		case name == "--eval" || name == "--print":
			return inlineCode(c, argv, a)
		case !strings.HasPrefix(a, "--") && strings.ContainsAny(a[1:], "ep"):
			return inlineCode(c, argv, a)
		case a == "-r" || a == "--require" || a == "--import" || a == "--loader" || a == "--experimental-loader" ||
			a == "-C" || a == "--conditions" || a == "--input-type" || a == "--env-file" || a == "--title":
			i++
		}
	}
	return c.rules(argv, nil)
}

// judgePerl: an option cluster with e or E (-e, -ne, -lpE) is inline code
// (for ruby too).
func judgePerl(c *checker, argv []string) Decision {
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		if !isOption(a) || a == "--" {
			break
		}
		if !strings.HasPrefix(a, "--") && strings.ContainsAny(a[1:], "eE") {
			return inlineCode(c, argv, a)
		}
	}
	return c.rules(argv, nil)
}

// judgeGit denies options that make git run arbitrary programs through
// configuration (-c, --config-env, --exec-path, --upload-pack, ...), then
// applies the rules.
func judgeGit(c *checker, argv []string) Decision {
	sub := ""
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		if sub == "" {
			switch {
			case strings.HasPrefix(a, "-c") || strings.HasPrefix(a, "--config-env") || strings.HasPrefix(a, "--exec-path"):
				return deny("git-config", "git %s can set configuration that runs arbitrary programs (core.pager, aliases, hooks)", a)
			case a == "-p" || a == "--paginate":
				return deny("git-runs-programs", "git %s runs the pager program named by configuration or PAGER", a)
			case a == "-C" || a == "--git-dir" || a == "--work-tree" || a == "--namespace" || a == "--super-prefix":
				i++
				continue
			case strings.HasPrefix(a, "-"):
				continue
			}
			sub = a
			continue
		}
		if d, bad := c.gitObjectPath(a); bad {
			return d
		}
		name, _, _ := strings.Cut(a, "=")
		switch name {
		case "--upload-pack", "--receive-pack", "--exec", "--extcmd", "--tool", "-x":
			return deny("git-runs-programs", "git %s %s runs a program named on the command line", sub, name)
		case "--template":
			if sub == "init" || sub == "clone" {
				return deny("git-runs-programs", "git %s --template copies hooks that later git commands run", sub)
			}
		case "-u":
			if sub == "clone" || sub == "fetch" || sub == "ls-remote" || sub == "pull" || sub == "archive" {
				return deny("git-runs-programs", "git %s -u runs a program named on the command line", sub)
			}
		}
	}
	switch sub {
	case "filter-branch", "difftool", "mergetool":
		return deny("git-runs-programs", "git %s runs programs named in its arguments or configuration", sub)
	case "submodule", "bisect":
		for _, a := range argv {
			if a == "foreach" || a == "run" {
				return deny("git-runs-programs", "git %s %s runs a command the policy cannot judge", sub, a)
			}
		}
	}
	return c.rules(argv, nil)
}

var gitStage = regexp.MustCompile(`^[0-3]:`)

// gitObjectPath checks the path in a REV:PATH or :PATH word (git show
// HEAD:.env prints a file the policy denies). Words with blanks (messages)
// and ":/text" searches are not object names.
func (c *checker) gitObjectPath(a string) (Decision, bool) {
	if strings.HasPrefix(a, "-") || strings.ContainsAny(a, " \t\n") || isUnknown(a) {
		return Decision{}, false
	}
	_, p, ok := strings.Cut(a, ":")
	p = gitStage.ReplaceAllString(p, "")
	if !ok || p == "" || strings.HasPrefix(p, "/") {
		return Decision{}, false
	}
	return c.pathWord(p)
}

// wrapperSyntax is the option syntax of a wrapper that runs the command
// after its options (nohup, timeout, nice, command, exec, time, stdbuf).
type wrapperSyntax struct {
	flags  []string // options alone: -p, --foreground
	valued []string // options with a value, next or attached: -n 5, -n5, --adjustment=5
	lookup []string // options that only look a name up, judged by the rules: command -v
	number bool     // -N is an option (nice -5)
	// operand is set when one word comes between the options and the
	// command (timeout's duration).
	operand bool
}

var wrapperSyntaxes = map[string]wrapperSyntax{
	"nohup":   {},
	"builtin": {},
	"timeout": {flags: []string{"--preserve-status", "--foreground", "-v", "--verbose"},
		valued: []string{"-s", "-k", "--signal", "--kill-after"}, operand: true},
	"nice":    {valued: []string{"-n", "--adjustment"}, number: true},
	"command": {flags: []string{"-p"}, lookup: []string{"-v", "-V"}},
	"exec":    {flags: []string{"-c", "-l", "-cl", "-lc"}, valued: []string{"-a"}},
	"time": {flags: []string{"-p", "-v", "-q", "-a", "--portability", "--verbose", "--quiet", "--append"},
		valued: []string{"-o", "-f", "--output", "--format"}},
	"stdbuf": {valued: []string{"-i", "-o", "-e", "--input", "--output", "--error"}},
}

var niceAdj = regexp.MustCompile(`^-[0-9]+$`)

// judgeSimple judges the wrappers of wrapperSyntaxes as the command they
// run; an option the syntax does not list denies the command.
func judgeSimple(c *checker, argv []string) Decision {
	w := wrapperSyntaxes[argv[0]]
	i := 1
	for ; i < len(argv); i++ {
		a := argv[i]
		if a == "--" {
			i++
			break
		}
		if !isOption(a) {
			break
		}
		switch {
		case slices.Contains(w.flags, a):
		case slices.Contains(w.lookup, a):
			return c.rules(argv, nil)
		case slices.Contains(w.valued, a):
			i++
		case w.attached(a), w.number && niceAdj.MatchString(a):
		default:
			return unknownOption(argv, a)
		}
	}
	if w.operand {
		if i >= len(argv) {
			return c.rules(argv, nil)
		}
		i++
	}
	return c.wrapped(argv, argv[min(i, len(argv)):])
}

// attached reports whether a is a valued option with its value attached.
func (w wrapperSyntax) attached(a string) bool {
	for _, v := range w.valued {
		if strings.HasPrefix(v, "--") && strings.HasPrefix(a, v+"=") ||
			!strings.HasPrefix(v, "--") && len(a) > len(v) && strings.HasPrefix(a, v) {
			return true
		}
	}
	return false
}

// judgeNpm: npm exec and npm x run a package's program, downloading it when
// it is missing, as npx does; they are judged as npx with the words that
// follow, and deny and ask rules written for npm still apply. Since the
// policy does not know which npm options take a value, any word "exec" or
// "x" before "--" counts (npm test x is judged as npx too). Other npm
// commands are judged by the rules.
func judgeNpm(c *checker, argv []string) Decision {
	for i := 1; i < len(argv) && argv[i] != "--"; i++ {
		if a := argv[i]; a != "exec" && a != "x" {
			continue
		}
		return c.wrapped(argv, append([]string{"npx"}, argv[i+1:]...))
	}
	return c.rules(argv, nil)
}
