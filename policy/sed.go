package policy

import (
	"fmt"
	"strings"
)

// sedFile is a file a sed script reads (r, R) or writes (w, W, the w flag).
type sedFile struct {
	name  string
	write bool
}

// scanSed reads a sed script command by command and returns the files it
// reads or writes, or an error for a command that executes something (e,
// the e flag of s) or that the reader does not understand. GNU sed lets a
// bracket expression hold the delimiter (s/[/]/x/e), so the script is read
// twice, with and without bracket expressions: a script either reading
// rejects is denied, and the files of both readings are judged. A
// disagreement between this reader and sed's then errs towards a denial.
func scanSed(s string) ([]sedFile, error) {
	a, err := scanSedAs(s, true)
	if err != nil {
		return nil, err
	}
	b, err := scanSedAs(s, false)
	if err != nil {
		return nil, fmt.Errorf("%v (read without bracket expressions)", err)
	}
	return append(a, b...), nil
}

// scanSedAs walks a sed script; brackets says whether [...] in a regular
// expression is a bracket expression (which may hold the delimiter).
func scanSedAs(s string, brackets bool) ([]sedFile, error) {
	var files []sedFile
	i := 0
	n := len(s)
	skipBlank := func() {
		for i < n && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
	}
	// delimited reads a /re/-style part whose opening delimiter is at s[i];
	// re says whether the part is a regular expression (brackets count).
	delimited := func(re bool) error {
		delim := s[i]
		if delim == '\\' || delim == '\n' {
			return fmt.Errorf("bad delimiter at %d", i)
		}
		i++
		for i < n && s[i] != delim {
			switch {
			case s[i] == '\\':
				i++
			case s[i] == '[' && re && brackets:
				j, err := bracketEnd(s, i)
				if err != nil {
					return err
				}
				i = j
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
			if err := delimited(true); err != nil {
				return err
			}
			for i < n && (s[i] == 'I' || s[i] == 'M') {
				i++
			}
		case i+1 < n && s[i] == '\\':
			i++
			if err := delimited(true); err != nil {
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
			// GNU sed ends a label at a blank, ; or a newline (and b's at
			// } or #): in ":a w /tmp/x" the w is a command of its own.
			skipBlank()
			for i < n && !strings.ContainsRune(" \t\n;}#", rune(s[i])) {
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
			files = append(files, sedFile{name: f, write: cmd == 'w' || cmd == 'W'})
		case 'e':
			return nil, fmt.Errorf("the e command runs a shell command")
		case 'y':
			if i >= n {
				return nil, fmt.Errorf("unterminated y")
			}
			if err := delimited(false); err != nil {
				return nil, err
			}
			i--
			if err := delimited(false); err != nil {
				return nil, err
			}
		case 's':
			if i >= n {
				return nil, fmt.Errorf("unterminated s")
			}
			if err := delimited(true); err != nil { // pattern
				return nil, err
			}
			i--
			if err := delimited(false); err != nil { // replacement
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
					files = append(files, sedFile{name: name, write: true})
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

// bracketEnd returns the index of the ] that closes the bracket expression
// opening at s[i]: a ] right after [ or [^ is a member, and [:class:],
// [.coll.] and [=equiv=] may hold a ].
func bracketEnd(s string, i int) (int, error) {
	j := i + 1
	if j < len(s) && s[j] == '^' {
		j++
	}
	if j < len(s) && s[j] == ']' {
		j++
	}
	for j < len(s) {
		switch {
		case s[j] == ']':
			return j, nil
		case s[j] == '[' && j+1 < len(s) && strings.IndexByte(":.=", s[j+1]) >= 0:
			end := strings.Index(s[j+2:], string(s[j+1])+"]")
			if end < 0 {
				return 0, fmt.Errorf("unterminated [%c", s[j+1])
			}
			j += end + 4
		case s[j] == '\n':
			return 0, fmt.Errorf("unterminated [")
		default:
			j++
		}
	}
	return 0, fmt.Errorf("unterminated [")
}
