package policy

import (
	"fmt"
	"regexp"
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
		"env":     judgeEnv,
		"xargs":   judgeXargs,
		"find":    judgeFind,
		"node":    judgeNode,
		"nodejs":  judgeNode,
		"perl":    judgePerl,
		"ruby":    judgePerl,
		"git":     judgeGit,
		"nohup":   judgeNohup,
		"timeout": judgeTimeout,
		"nice":    judgeNice,
		"command": judgeCommand,
		"builtin": judgeNohup,
		"exec":    judgeExec,
		"time":    judgeTime,
		"stdbuf":  judgeStdbuf,
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
	if argv[i] == unknownWord {
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

// judgeEnv: env [-i] [-u NAME] [-C DIR] [NAME=VALUE]... COMMAND.
func judgeEnv(c *checker, argv []string) Decision {
	i := 1
	for ; i < len(argv); i++ {
		a := argv[i]
		if a == "--" {
			i++
			break
		}
		if a == "-" || !strings.HasPrefix(a, "-") {
			break
		}
		switch {
		case a == "-i" || a == "--ignore-environment" || a == "-0" || a == "--null" || a == "-v" || a == "--debug":
		case a == "-u" || a == "--unset" || a == "-C" || a == "--chdir":
			i++
		case strings.HasPrefix(a, "-u") || strings.HasPrefix(a, "--unset=") || strings.HasPrefix(a, "-C") || strings.HasPrefix(a, "--chdir="):
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
	return c.wrapped(argv, argv[i:])
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
		if !strings.HasPrefix(a, "-") || a == "-" {
			break
		}
		switch {
		case a == "-0" || a == "--null" || a == "-o" || a == "--open-tty" || a == "-p" || a == "--interactive" ||
			a == "-r" || a == "--no-run-if-empty" || a == "-t" || a == "--verbose" || a == "-x" || a == "--exit" ||
			a == "--show-limits" || a == "-e" || a == "-l":
		case a == "-a" || a == "-d" || a == "-E" || a == "-L" || a == "-n" || a == "-P" || a == "-s" ||
			a == "--arg-file" || a == "--delimiter" || a == "--max-args" || a == "--max-lines" || a == "--max-procs" ||
			a == "--max-chars" || a == "--process-slot-var":
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
	d := c.sub().argv(inner)
	if own, ok := c.explicit(argv); ok {
		d = worse(own, d)
	}
	return d
}

// judgeFind: find needs a rule of its own; each -exec/-execdir/-ok/-okdir
// command is judged with {} as an unknown word, and -delete as rm.
func judgeFind(c *checker, argv []string) Decision {
	d := c.rules(argv, nil)
	if d.Verdict == Deny {
		return d
	}
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
					inner[k] = unknownWord
				}
			}
			d = worseStop(d, func() Decision { return c.sub().argv(inner) })
			i = j
		case "-delete":
			d = worseStop(d, func() Decision { return c.sub().argv([]string{"rm", unknownWord}) })
		}
		if d.Verdict == Deny {
			return d
		}
	}
	return d
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
		if a == "-" || a == "--" || !strings.HasPrefix(a, "-") {
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
		if !strings.HasPrefix(a, "-") || a == "-" || a == "--" {
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
		if !strings.HasPrefix(a, "-") || a == "-" || a == "--" {
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
			case a == "-C" || a == "--git-dir" || a == "--work-tree" || a == "--namespace" || a == "--super-prefix":
				i++
				continue
			case strings.HasPrefix(a, "-"):
				continue
			}
			sub = a
			continue
		}
		name, _, _ := strings.Cut(a, "=")
		switch name {
		case "--upload-pack", "--receive-pack", "--exec", "--extcmd", "--tool", "-x":
			return deny("git-runs-programs", "git %s %s runs a program named on the command line", sub, name)
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

func judgeNohup(c *checker, argv []string) Decision {
	i := 1
	if i < len(argv) && argv[i] == "--" {
		i++
	}
	if i < len(argv) && strings.HasPrefix(argv[i], "-") {
		return unknownOption(argv, argv[i])
	}
	return c.wrapped(argv, argv[i:])
}

// judgeTimeout: timeout [-s SIG] [-k DUR] [--preserve-status] [--foreground] [-v] DUR COMMAND.
func judgeTimeout(c *checker, argv []string) Decision {
	i := 1
	for ; i < len(argv); i++ {
		a := argv[i]
		if a == "--" {
			i++
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			break
		}
		switch {
		case a == "--preserve-status" || a == "--foreground" || a == "-v" || a == "--verbose":
		case a == "-s" || a == "-k" || a == "--signal" || a == "--kill-after":
			i++
		case strings.HasPrefix(a, "-s") || strings.HasPrefix(a, "-k") || strings.HasPrefix(a, "--signal=") || strings.HasPrefix(a, "--kill-after="):
		default:
			return unknownOption(argv, a)
		}
	}
	if i >= len(argv) {
		return c.rules(argv, nil)
	}
	return c.wrapped(argv, argv[i+1:]) // skip the duration
}

var niceAdj = regexp.MustCompile(`^-[0-9]+$`)

// judgeNice: nice [-n N | -N | --adjustment=N] COMMAND.
func judgeNice(c *checker, argv []string) Decision {
	i := 1
	for ; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "--":
			i++
		case a == "-n" || a == "--adjustment":
			i++
			continue
		case niceAdj.MatchString(a) || strings.HasPrefix(a, "-n") || strings.HasPrefix(a, "--adjustment="):
			continue
		case strings.HasPrefix(a, "-") && a != "-":
			return unknownOption(argv, a)
		}
		break
	}
	return c.wrapped(argv, argv[min(i, len(argv)):])
}

// judgeCommand: command [-p] COMMAND; command -v/-V only looks a name up.
func judgeCommand(c *checker, argv []string) Decision {
	i := 1
	for ; i < len(argv); i++ {
		switch a := argv[i]; a {
		case "-p":
			continue
		case "-v", "-V":
			return c.rules(argv, nil)
		case "--":
			i++
		default:
			if strings.HasPrefix(a, "-") {
				return unknownOption(argv, a)
			}
		}
		break
	}
	return c.wrapped(argv, argv[min(i, len(argv)):])
}

// judgeExec: exec [-c] [-l] [-a NAME] COMMAND.
func judgeExec(c *checker, argv []string) Decision {
	i := 1
	for ; i < len(argv); i++ {
		switch a := argv[i]; a {
		case "-c", "-l", "-cl", "-lc":
			continue
		case "-a":
			i++
			continue
		case "--":
			i++
		default:
			if strings.HasPrefix(a, "-") {
				return unknownOption(argv, a)
			}
		}
		break
	}
	return c.wrapped(argv, argv[min(i, len(argv)):])
}

// judgeTime: time [-p] [-v] [-q] [-a] [-o FILE] [-f FORMAT] COMMAND.
func judgeTime(c *checker, argv []string) Decision {
	i := 1
	for ; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "--":
			i++
		case a == "-p" || a == "-v" || a == "-q" || a == "-a" || a == "--portability" || a == "--verbose" || a == "--quiet" || a == "--append":
			continue
		case a == "-o" || a == "-f" || a == "--output" || a == "--format":
			i++
			continue
		case strings.HasPrefix(a, "--output=") || strings.HasPrefix(a, "--format="):
			continue
		case strings.HasPrefix(a, "-") && a != "-":
			return unknownOption(argv, a)
		}
		break
	}
	return c.wrapped(argv, argv[min(i, len(argv)):])
}

// judgeStdbuf: stdbuf -i/-o/-e MODE ... COMMAND.
func judgeStdbuf(c *checker, argv []string) Decision {
	i := 1
	for ; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "--":
			i++
		case a == "-i" || a == "-o" || a == "-e" || a == "--input" || a == "--output" || a == "--error":
			i++
			continue
		case len(a) > 2 && (strings.HasPrefix(a, "-i") || strings.HasPrefix(a, "-o") || strings.HasPrefix(a, "-e")) ||
			strings.HasPrefix(a, "--input=") || strings.HasPrefix(a, "--output=") || strings.HasPrefix(a, "--error="):
			continue
		case strings.HasPrefix(a, "-") && a != "-":
			return unknownOption(argv, a)
		}
		break
	}
	return c.wrapped(argv, argv[min(i, len(argv)):])
}
