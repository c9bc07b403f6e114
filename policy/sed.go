package policy

import (
	"fmt"
	"slices"
	"strings"
)

// judgeSed applies the rules to sed and then denies scripts that run
// commands (the e command, the e flag of s) or that read or write files
// outside the workspace (r, R, w, W, the w flag of s). A script read from a
// file (-f) cannot be judged and is denied.
func judgeSed(c *checker, argv []string) Decision {
	var scripts []string
	var scriptAt []int // indices of words that are whole scripts
	explicit := false
	inPlace := false
	i := 1
	for ; i < len(argv); i++ {
		a := argv[i]
		if a == "--" {
			i++
			break
		}
		if !isOption(a) {
			continue // input file, judged by the path checks
		}
		if strings.HasPrefix(a, "--") {
			name, val, hasVal := strings.Cut(a, "=")
			switch name {
			case "--expression":
				explicit = true
				if !hasVal {
					if i+1 >= len(argv) {
						return unknownOption(argv, a)
					}
					i++
					val = argv[i]
				}
				scripts = append(scripts, val)
				scriptAt = append(scriptAt, i)
			case "--file":
				return deny("sed-script", "sed %s reads its script from a file, which cannot be judged", a)
			case "--in-place":
				inPlace = true
			case "--quiet", "--silent", "--debug", "--posix", "--regexp-extended", "--separate", "--sandbox",
				"--unbuffered", "--null-data", "--zero-terminated", "--follow-symlinks", "--line-length", "--binary":
			default:
				return unknownOption(argv, a)
			}
			continue
		}
	cluster:
		for k := 1; k < len(a); k++ {
			switch a[k] {
			case 'n', 'E', 'r', 's', 'u', 'z', 'b':
			case 'i':
				inPlace = true
				break cluster // -i[SUFFIX]: the rest is a suffix, not flags
			case 'l':
				if k == len(a)-1 {
					i++
				}
				break cluster
			case 'e':
				explicit = true
				if k < len(a)-1 {
					scripts = append(scripts, a[k+1:])
				} else if i+1 < len(argv) {
					i++
					scripts = append(scripts, argv[i])
				} else {
					return unknownOption(argv, a)
				}
				scriptAt = append(scriptAt, i)
				break cluster
			case 'f':
				return deny("sed-script", "sed -f reads its script from a file, which cannot be judged")
			default:
				return unknownOption(argv, a)
			}
		}
	}
	if !explicit {
		// The first operand is the script.
		for k := 1; k < len(argv); k++ {
			a := argv[k]
			if a == "--" {
				if k+1 < len(argv) {
					scripts = append(scripts, argv[k+1])
					scriptAt = append(scriptAt, k+1)
				}
				break
			}
			if strings.HasPrefix(a, "-") && a != "-" {
				if a == "-l" {
					k++
				}
				continue
			}
			scripts = append(scripts, a)
			scriptAt = append(scriptAt, k)
			break
		}
	}
	rest := make([]string, 0, len(argv))
	for k, a := range argv {
		if !slices.Contains(scriptAt, k) {
			rest = append(rest, a)
		}
	}
	if d, bad := c.args(rest); bad {
		return d
	}
	if inPlace {
		var ts []target
		for k := 1; k < len(rest); k++ {
			if !strings.HasPrefix(rest[k], "-") || isUnknown(rest[k]) {
				ts = append(ts, target{word: rest[k]})
			}
		}
		if d, bad := c.writesTo("sed -i", ts); bad {
			return d
		}
	}
	d := c.rules(argv, nil)
	if d.Verdict == Deny {
		return d
	}
	for _, s := range scripts {
		if isUnknown(s) {
			return deny("sed-script", "the sed script is known only at run time")
		}
		files, err := scanSed(s)
		if err != nil {
			return deny("sed-script", "sed script %q: %v", s, err)
		}
		for _, f := range files {
			if f == "/dev/stdout" || f == "/dev/stderr" {
				continue
			}
			if pd, bad := c.pathWord(f); bad {
				return pd
			}
		}
	}
	return d
}

// scanSed walks a sed script command by command. It returns the file names
// the script reads or writes, or an error for a command that executes
// something or that it does not understand.
func scanSed(s string) ([]string, error) {
	var files []string
	i := 0
	n := len(s)
	skipBlank := func() {
		for i < n && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
	}
	// delimited reads a /re/-style part whose opening delimiter is at s[i].
	delimited := func() error {
		delim := s[i]
		if delim == '\\' || delim == '\n' {
			return fmt.Errorf("bad delimiter at %d", i)
		}
		i++
		for i < n && s[i] != delim {
			if s[i] == '\\' {
				i++
			}
			i++
		}
		if i >= n {
			return fmt.Errorf("unterminated %q", string(delim))
		}
		i++
		return nil
	}
	restOfLine := func() string {
		j := i
		for i < n && s[i] != '\n' {
			i++
		}
		return strings.TrimSpace(s[j:i])
	}
	address := func() error {
		switch {
		case i < n && s[i] >= '0' && s[i] <= '9':
			for i < n && (s[i] >= '0' && s[i] <= '9' || s[i] == '~') {
				i++
			}
		case i < n && s[i] == '$':
			i++
		case i < n && s[i] == '/':
			if err := delimited(); err != nil {
				return err
			}
			for i < n && (s[i] == 'I' || s[i] == 'M') {
				i++
			}
		case i+1 < n && s[i] == '\\':
			i++
			if err := delimited(); err != nil {
				return err
			}
			for i < n && (s[i] == 'I' || s[i] == 'M') {
				i++
			}
		}
		return nil
	}
	for i < n {
		for i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == ';') {
			i++
		}
		if i >= n {
			break
		}
		if s[i] == '#' {
			restOfLine()
			continue
		}
		if err := address(); err != nil {
			return nil, err
		}
		skipBlank()
		if i < n && s[i] == ',' {
			i++
			skipBlank()
			if i < n && (s[i] == '+' || s[i] == '~') {
				i++
			}
			if err := address(); err != nil {
				return nil, err
			}
			skipBlank()
		}
		for i < n && (s[i] == '!' || s[i] == ' ') {
			i++
		}
		if i >= n {
			return nil, fmt.Errorf("address without a command")
		}
		cmd := s[i]
		i++
		switch cmd {
		case '{', '}', '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
		case 'q', 'Q', 'l', 'L':
			skipBlank()
			for i < n && s[i] >= '0' && s[i] <= '9' {
				i++
			}
		case ':', 'b', 't', 'T':
			for i < n && s[i] != '\n' && s[i] != ';' {
				i++
			}
		case 'a', 'i', 'c':
			// Text to the end of the line (GNU one-line form or a\ text).
			for i < n && s[i] != '\n' {
				if s[i] == '\\' {
					i++
				}
				i++
			}
		case 'r', 'R', 'w', 'W':
			f := restOfLine()
			if f == "" {
				return nil, fmt.Errorf("%c without a file name", cmd)
			}
			files = append(files, f)
		case 'e':
			return nil, fmt.Errorf("the e command runs a shell command")
		case 'y':
			if i >= n {
				return nil, fmt.Errorf("unterminated y")
			}
			if err := delimited(); err != nil {
				return nil, err
			}
			i--
			if err := delimited(); err != nil {
				return nil, err
			}
		case 's':
			if i >= n {
				return nil, fmt.Errorf("unterminated s")
			}
			if err := delimited(); err != nil { // pattern
				return nil, err
			}
			i--
			if err := delimited(); err != nil { // replacement
				return nil, err
			}
		flags:
			for i < n {
				switch f := s[i]; {
				case f == 'e':
					return nil, fmt.Errorf("the e flag of s runs the pattern space as a shell command")
				case f == 'w' || f == 'W':
					i++
					name := restOfLine()
					if name == "" {
						return nil, fmt.Errorf("w flag without a file name")
					}
					files = append(files, name)
					break flags
				case f == 'g' || f == 'p' || f == 'i' || f == 'I' || f == 'm' || f == 'M' || f >= '0' && f <= '9':
					i++
				default:
					break flags
				}
			}
		default:
			return nil, fmt.Errorf("unknown command %q", string(cmd))
		}
	}
	return files, nil
}
