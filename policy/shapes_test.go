package policy

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// Shapes whose cost once grew faster than their size: each is judged, or
// refused with a reason, and the benchmarks below show the cost per byte
// staying flat as the size grows.

func cdChain(n int) string {
	cds := make([]string, n)
	for i := range cds {
		cds[i] = fmt.Sprintf("cd d%d", i)
	}
	return strings.Join(cds, " && ") + " && ls"
}

func deepYAML(n int) []byte {
	return []byte("version: 1\ncommands:\n  allow: " + strings.Repeat("[", n) + strings.Repeat("]", n) + "\n")
}

func TestShapes(t *testing.T) {
	t.Parallel()
	p := shellOn(t)
	tests := []struct {
		name, line, rule string
		verdict          Verdict
	}{
		{"a few cds", cdChain(3), "", Allow},
		// Every cd may have failed, so the folders grow as 2^n: past 64
		// the line is refused instead of judged in exponential time.
		{"many cds", cdChain(40), "shell-cd", Deny},
		{"a long glob", "ls " + strings.Repeat("*/", 20000), "", Allow},
		{"a word longer than execve takes", "ls " + strings.Repeat("a", maxArg+1), "too-long", Deny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd, err := ParseCommand(tt.line)
			if err != nil {
				t.Fatal(err)
			}
			d := p.CheckCommand(cmd, testScope)
			if d.Verdict != tt.verdict || (tt.rule != "" && d.Rule != tt.rule) || d.Reason == "" {
				t.Errorf("%v by %q (%s), want %v by %q", d.Verdict, d.Rule, d.Reason, tt.verdict, tt.rule)
			}
		})
	}
	// A deep YAML list is refused at the line and column where it gets
	// too deep, before the parser (quadratic in the depth) sees it.
	_, err := Parse("deep.yaml", deepYAML(maxFileBytes/2-100))
	var fe *FileError
	if !errors.As(err, &fe) || fe.Line != 3 || fe.Column == 0 || !strings.Contains(fe.Msg, "nested more than") {
		t.Errorf("deep YAML: %v, want a FileError at line 3 saying it is nested too deep", err)
	}
	if _, err := Parse("big.yaml", []byte("version: 1\n#"+strings.Repeat("x", maxFileBytes))); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("a file over the size bound: %v", err)
	}
}

// Each shape at sizes growing tenfold: ns/op over the size (reported as
// ns/byte) stays flat when the cost is linear.
func BenchmarkShapes(b *testing.B) {
	p := shellOn(b)
	judge := func(b *testing.B, line string) {
		cmd, err := ParseCommand(line)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(line)))
		for b.Loop() {
			p.CheckCommand(cmd, testScope)
		}
	}
	for _, n := range []int{4, 40, 400} {
		b.Run(fmt.Sprintf("cd/%d", n), func(b *testing.B) { judge(b, cdChain(n)) })
	}
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("glob/%d", n), func(b *testing.B) { judge(b, "ls "+strings.Repeat("*/", n)) })
	}
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("nesting/%d", n), func(b *testing.B) {
			judge(b, strings.Repeat("sh -c '", 1)+strings.Repeat("(", n)+"ls"+strings.Repeat(")", n)+"'")
		})
	}
	for _, n := range []int{1000, 10000, maxFileBytes / 2} {
		b.Run(fmt.Sprintf("yaml/%d", n), func(b *testing.B) {
			data := deepYAML(n)
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				Parse("deep.yaml", data)
			}
		})
	}
}

// FuzzPolicyExplain checks that no policy file makes Parse panic, and that a file
// it accepts judges commands without panicking, each decision with a rule
// and a reason.
func FuzzPolicyExplain(f *testing.F) {
	for _, s := range []string{
		"version: 1\n",
		"version: 1\nmode: unattended\ncommands:\n  allow: [\"go test *\", \"ls *\"]\n  shell: true\n",
		"version: 1\npaths:\n  deny: [\"**/.env\"]\n  read_only: [\"vendor/**\"]\nlimits: {timeout: 2s, memory: 1GiB}\n",
		"version: 1\nprograms:\n  mytool:\n    options: {-v: {}}\ncommands:\n  allow: [\"mytool *\"]\n",
		"version: 1\ncommands:\n  allow: [[[[]]]]\n",
		"version: 1\nfoo: 1\nbar: 2\n",
	} {
		f.Add([]byte(s), "go test ./...")
	}
	f.Add([]byte("version: 1\ncommands:\n  allow: [\"go build *\"]\n"), "env GOFLAGS=-mod=mod go build ./...")
	f.Fuzz(func(t *testing.T, data []byte, line string) {
		p, err := Parse("fuzz.yaml", data)
		if err != nil {
			return
		}
		for _, l := range []string{line, "go test ./...", "cat .env"} {
			cmd, err := ParseCommand(l)
			if err != nil {
				continue
			}
			if d := p.CheckCommand(cmd, testScope); d.Rule == "" || d.Reason == "" {
				t.Fatalf("%q: decision without rule or reason: %+v", l, d)
			}
		}
	})
}
