package policy

import (
	"fmt"
	"path"
	"strings"
)

// How a program writes its operands.
type writeKind int

const (
	writesAll      writeKind = iota // every operand is written (touch, mkdir)
	writesAllBelow                  // every operand, and what is below it (rm -r, chmod -R)
	writesDest                      // the last operand or -t DIR gets the others (cp, ln, install)
	writesMove                      // every operand: sources go away, the last one gets them (mv)
)

// writePrograms are the programs whose operands the policy knows to be
// written, so that paths.read_only holds for them as it does for the file
// tools. Programs that run code (python3, go run, npm test) can write
// anything; the sandbox, not the policy, bounds them.
var writePrograms = map[string]writeKind{
	"rm": writesAllBelow, "chmod": writesAllBelow, // below with -r/-R
	"chown": writesAllBelow, "chgrp": writesAllBelow,
	"rmdir": writesAll, "unlink": writesAll, "shred": writesAll, "truncate": writesAll,
	"touch": writesAll, "mkdir": writesAll, "tee": writesAll,
	"cp": writesDest, "ln": writesDest, "install": writesDest,
	"mv": writesMove,
}

// target is one path a command writes; below is set when it may write
// everything under it too.
type target struct {
	word  string
	below bool
	into  bool // a destination folder: files land in it under their own names
}

// outputOptions are options whose value is a file the program writes, by
// program; a value may follow as the next word or after "=".
var outputOptions = map[string][]string{
	"sort": {"-o", "--output"},
	"time": {"-o", "--output"},
	"git":  {"--output"},
	"go": {"-o", "-coverprofile", "-cpuprofile", "-memprofile", "-blockprofile", "-mutexprofile", "-trace",
		"-outputdir", "-modfile", "-pgo"},
	"find": {"-fprint", "-fprint0", "-fprintf", "-fls"},
	"tree": {"-o"},
}

// optionTargets lists the values of prog's output options in argv.
func optionTargets(prog string, argv []string) []target {
	var ts []target
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		if a == "--" {
			break
		}
		for _, o := range outputOptions[prog] {
			long := "-" + o // go's flags take -name and --name alike
			switch {
			case (a == o || (prog == "go" && a == long)) && i+1 < len(argv):
				i++
				ts = append(ts, target{word: argv[i]})
			case strings.HasPrefix(a, o+"=") || (prog == "go" && strings.HasPrefix(a, long+"=")):
				ts = append(ts, target{word: a[strings.IndexByte(a, '=')+1:]})
			case len(o) == 2 && len(a) > 2 && strings.HasPrefix(a, o) && (prog == "sort" || prog == "time"):
				ts = append(ts, target{word: a[2:]}) // sort -oFILE
			}
		}
	}
	return ts
}

// writeTargets lists what argv writes, for the programs the policy knows.
func writeTargets(argv []string) []target {
	prog := path.Base(argv[0])
	switch prog {
	case "dd":
		var ts []target
		for _, a := range argv[1:] {
			if v, ok := strings.CutPrefix(a, "of="); ok {
				ts = append(ts, target{word: v})
			}
		}
		return ts
	case "sort", "time", "go", "find", "git", "tree":
		return optionTargets(prog, argv)
	case "uniq": // uniq [OPTION]... [INPUT [OUTPUT]]
		var ops []string
		for _, a := range argv[1:] {
			if !isOption(a) || isUnknown(a) {
				ops = append(ops, a)
			}
		}
		if len(ops) == 2 {
			return []target{{word: ops[1]}}
		}
		return nil
	case "gofmt", "goimports":
		for _, a := range argv[1:] {
			if a == "-w" || a == "--w" || strings.HasPrefix(a, "-w=") || strings.HasPrefix(a, "--w=") {
				var ts []target
				for _, o := range argv[1:] {
					if !strings.HasPrefix(o, "-") || isUnknown(o) {
						ts = append(ts, target{word: o, below: true})
					}
				}
				return ts
			}
		}
		return nil
	}
	kind, ok := writePrograms[prog]
	if !ok {
		return nil
	}
	var ops []string
	dest := ""
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "--":
			ops = append(ops, argv[i+1:]...)
			i = len(argv)
		case (a == "-t" || a == "--target-directory") && kind != writesAll && kind != writesAllBelow && i+1 < len(argv):
			i++
			dest = argv[i]
		case strings.HasPrefix(a, "--target-directory="):
			dest = strings.TrimPrefix(a, "--target-directory=")
		case strings.HasPrefix(a, "-t") && len(a) > 2 && (kind == writesDest || kind == writesMove):
			dest = a[2:]
		case strings.HasPrefix(a, "-") && a != "-" && !isUnknown(a):
		default:
			ops = append(ops, a)
		}
	}
	var ts []target
	switch kind {
	case writesAll, writesAllBelow:
		below := kind == writesAllBelow && recursive(argv)
		for _, o := range ops {
			ts = append(ts, target{word: o, below: below})
		}
		return ts
	}
	srcs := ops
	if dest == "" && len(ops) > 0 {
		dest, srcs = ops[len(ops)-1], ops[:len(ops)-1]
	}
	if kind == writesMove {
		for _, s := range srcs {
			ts = append(ts, target{word: s, below: true})
		}
	}
	if makesLinks(prog, argv) {
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
		// dest itself, or what lands in it when it is a folder.
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
	return ts
}

// makesLinks reports whether argv makes links to its sources: ln, and cp
// with -l, -s, --link or --symbolic-link.
func makesLinks(prog string, argv []string) bool {
	switch prog {
	case "ln":
		return true
	case "cp":
		for _, a := range argv[1:] {
			switch {
			case a == "--":
				return false
			case a == "--link" || a == "--symbolic-link":
				return true
			case len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsAny(a[1:], "ls"):
				return true
			}
		}
	}
	return false
}

// recursive reports whether rm, chmod, chown or chgrp was asked to recurse.
func recursive(argv []string) bool {
	for _, a := range argv[1:] {
		switch {
		case a == "--":
			return false
		case a == "--recursive":
			return true
		case len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsAny(a, "rR"):
			return true
		}
	}
	return false
}

// writes denies a command that writes a path under paths.read_only or in
// a commands.read_only_dirs folder.
func (c *checker) writes(argv []string) (Decision, bool) {
	return c.writesTo(argv[0], writeTargets(argv))
}

// writesTo checks the targets prog writes against paths.read_only.
func (c *checker) writesTo(prog string, ts []target) (Decision, bool) {
	for _, t := range ts {
		var rs []region
		var via []string // for each region: how a symlink led there, for the reason
		if isUnknown(t.word) {
			if strings.Contains(t.word, unknownWord+regionOutside) {
				// A glob in a read-only folder (rm /usr/lib/*), or matching
				// a symlink to one.
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
					// The sandbox mounts them read-only; the local one cannot.
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
