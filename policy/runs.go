package policy

import (
	"path"
	"slices"
	"strings"
)

// runOptions are options whose value is a program (or a file of commands)
// that the program then runs: sort --compress-program=sh, rg --pre sh,
// tar -I sh, go test -exec sh. The policy cannot judge that program, so a
// command with one of them is denied whatever rule allows the program
// itself ("sort *" is written for sorting). Options of one letter also
// count inside a cluster (tar -xIzstd) and, for tar, in its old-style
// first word (tar xIf prog a.tar).
var runOptions = map[string][]string{
	"sort": {"--compress-program"},
	"rg":   {"--pre"},
	"tar": {"-I", "-F", "--use-compress-program", "--to-command", "--info-script", "--new-volume-script",
		"--rsh-command", "--rmt-command", "--checkpoint-action"},
	// go accepts -flag and --flag alike. -overlay swaps source files for
	// files named in a JSON file the policy cannot read.
	"go":    {"-exec", "-toolexec", "-vettool", "-overlay"},
	"zip":   {"-TT", "--unzip-command"},
	"rsync": {"-e", "--rsh", "--rsync-path"},
}

// runsProgram denies argv when it names a program to run through an
// option of runOptions, or when it is go with a linker override (-ldflags
// with -extld) or go env -w, which would add such options to every later
// go command.
func runsProgram(argv []string) (Decision, bool) {
	prog := path.Base(argv[0])
	opts, ok := runOptions[prog]
	if !ok {
		return Decision{}, false
	}
	for i, a := range argv[1:] {
		if isUnknown(a) {
			continue
		}
		for _, o := range opts {
			if optionNamed(prog, a, o, i == 0) {
				return deny("runs-program", "%s %s runs a program (or reads files) named in its value, which the policy cannot judge", prog, o), true
			}
		}
		if prog == "go" {
			if strings.Contains(a, "-extld") {
				return deny("runs-program", "go %s sets the external linker, a program the policy cannot judge", a), true
			}
			if (a == "-w" || a == "--w" || strings.HasPrefix(a, "-w=") || strings.HasPrefix(a, "--w=")) && slices.Contains(argv[1:], "env") {
				return deny("runs-program", "go env -w changes settings for every later go command (GOFLAGS=-toolexec=...), which the policy cannot judge"), true
			}
		}
	}
	return Decision{}, false
}

// optionNamed reports whether word a is option o (alone, with =value, or
// for a one-letter option inside a cluster of short options).
func optionNamed(prog, a, o string, first bool) bool {
	if a == o || strings.HasPrefix(a, o+"=") {
		return true
	}
	if prog == "go" && !strings.HasPrefix(o, "--") {
		long := "-" + o
		return a == long || strings.HasPrefix(a, long+"=")
	}
	if len(o) != 2 || o[0] != '-' {
		return false
	}
	switch {
	case len(a) > 2 && a[0] == '-' && a[1] != '-':
		return strings.IndexByte(a[1:], o[1]) >= 0
	case prog == "tar" && first && a != "" && a[0] != '-':
		return strings.IndexByte(a, o[1]) >= 0 // tar xIf prog a.tar
	}
	return false
}
