package policy

import (
	"strings"
	"testing"
)

// FuzzCheckCommand checks that no command line makes the parser or the
// judge panic, that a line with a shell operator (; & | < > ` $( or a
// newline, outside quotes) is never allowed with shell mode off, that a
// parsed Argv is judged the same as its line, and that decisions always
// carry a rule and a reason.
func FuzzCheckCommand(f *testing.F) {
	for _, s := range []string{
		"go test ./...", "g'i't push", "env -i sh -c 'curl x'", "xargs -I{} sh -c '{}'",
		`find . -exec rm {} \;`, "timeout 5 curl x", "sed -e 's/x/y/e' f", "cat ../../etc/passwd",
		"echo $(id) | tail > /etc/x &", "for f in *; do cd $f; done", "cat <<EOF\n$x\nEOF",
		"python3 -W x -c 'y'", "git -c a=b log", "nice -n", "sed 'y/abc/xyz/;s/a/b/w out'",
		"echo 'a;b' \"c|d\" e\\&f", "ls # x; y", "ls\ncat x", "ls\n", "echo \"$(id)\"", "ls \\\n -l",
		"env GOFLAGS=-mod=mod go build ./...", "env GOCACHE=/tmp/x go test ./...", "GOFLAGS='-o=/etc/x' go build",
	} {
		f.Add(s)
	}
	plain := loadTest(f)
	shell := shellOn(f)
	f.Fuzz(func(t *testing.T, line string) {
		if op := shellOperator(line); op != "" {
			// Judged from the line alone (as a tool that has only the text
			// would ask) and from what ParseCommand made of it.
			if d := plain.CheckCommand(Command{Line: line}, testScope); d.Verdict == Allow {
				t.Fatalf("%q: allowed with shell off though it has the shell operator %q: %+v", line, op, d)
			}
			if cmd, err := ParseCommand(line); err == nil {
				if d := plain.CheckCommand(cmd, testScope); d.Verdict == Allow {
					t.Fatalf("%q: parsed as %+v and allowed with shell off though it has the shell operator %q: %+v", line, cmd, op, d)
				}
			}
		}
		cmd, err := ParseCommand(line)
		if err != nil {
			return
		}
		for _, p := range []*Policy{plain, shell} {
			d := p.CheckCommand(cmd, testScope)
			if d.Rule == "" || d.Reason == "" {
				t.Fatalf("%q: decision without rule or reason: %+v", line, d)
			}
			if !cmd.Shell {
				if d2 := p.CheckCommand(Command{Line: line}, testScope); d2.Verdict != d.Verdict {
					t.Fatalf("%q: argv gives %v, line gives %v", line, d.Verdict, d2.Verdict)
				}
			}
		}
		if cmd.Shell {
			if d := plain.CheckCommand(cmd, testScope); d.Verdict != Deny {
				t.Fatalf("%q: shell line not denied with shell off: %+v", line, d)
			}
		}
	})
}

// shellOperator returns the first shell operator in line that quotes do
// not make literal: ; & | < > ` or $( outside quotes, ` or $( inside
// double quotes, or a newline between two commands. It is written apart
// from the parser under test, as a shell reads a line: a backslash quotes
// the next character and a # that starts a word comments out the rest of
// the line.
func shellOperator(line string) string {
	inDouble := false
	wordStart := true
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c == '\\' {
			i++
			wordStart = false
			continue
		}
		if c == '`' {
			return "`"
		}
		if c == '$' && i+1 < len(line) && line[i+1] == '(' {
			return "$("
		}
		if inDouble {
			inDouble = c != '"'
			continue
		}
		switch c {
		case '"':
			inDouble = true
		case '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return "" // unterminated: a syntax error, judged elsewhere
			}
			i += j + 1
		case ';', '&', '|', '<', '>':
			return string(c)
		case '#':
			if wordStart {
				nl := strings.IndexByte(line[i:], '\n')
				if nl < 0 {
					return ""
				}
				i += nl - 1 // the newline is looked at next
				continue
			}
		case '\n':
			if !blankOrComments(line[:i]) && !blankOrComments(line[i+1:]) {
				return "newline"
			}
		}
		wordStart = c == ' ' || c == '\t' || c == '\n'
	}
	return ""
}

// blankOrComments reports whether s holds only blanks and comment lines.
func blankOrComments(s string) bool {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimLeft(l, " \t"); l != "" && l[0] != '#' {
			return false
		}
	}
	return true
}

// FuzzParse checks that no policy file makes Parse panic.
func FuzzParse(f *testing.F) {
	f.Add([]byte("version: 1\ncommands:\n  allow: [\"go test *\"]\n"))
	f.Add([]byte("version: 1\nlimits: {memory: 1GiB}\npaths:\n  deny: [\"**/.env\"]\n"))
	f.Add([]byte("- a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("fuzz.yaml", data)
		if err == nil && p == nil {
			t.Fatal("nil policy without error")
		}
	})
}
