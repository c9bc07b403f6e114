package policy

import (
	"testing"
)

// FuzzCheckCommand checks that no command line makes the parser or the
// judge panic, that a parsed Argv is judged the same as its line, and that
// decisions always carry a rule and a reason.
func FuzzCheckCommand(f *testing.F) {
	for _, s := range []string{
		"go test ./...", "g'i't push", "env -i sh -c 'curl x'", "xargs -I{} sh -c '{}'",
		`find . -exec rm {} \;`, "timeout 5 curl x", "sed -e 's/x/y/e' f", "cat ../../etc/passwd",
		"echo $(id) | tail > /etc/x &", "for f in *; do cd $f; done", "cat <<EOF\n$x\nEOF",
		"python3 -W x -c 'y'", "git -c a=b log", "nice -n", "sed 'y/abc/xyz/;s/a/b/w out'",
	} {
		f.Add(s)
	}
	plain := loadTest(f)
	shell := shellOn(f)
	f.Fuzz(func(t *testing.T, line string) {
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
