package policy

import (
	"errors"
	"strings"
	"testing"
)

// A policy file with several mistakes reports every one, in file order,
// each with its line and column: unknown keys at any depth beside bad
// values of keys that decode.
func TestEveryMistakeAtOnce(t *testing.T) {
	t.Parallel()
	data := "version: 1\nfoo: 1\nlimits: {memory: lots, timeout: 5x}\ncommands:\n  allw: [x]\n  allow: [\"go test *\"]\nbar: 2\n"
	_, err := Parse("p.yaml", []byte(data))
	if err == nil {
		t.Fatal("no error")
	}
	want := []string{"p.yaml:2:1: foo:", "p.yaml:3:18: limits.memory:", "p.yaml:3:33: limits.timeout:", "p.yaml:5:3: commands.allw:", "p.yaml:7:1: bar:"}
	got := strings.Split(err.Error(), "\n")
	if len(got) != len(want) {
		t.Fatalf("%d problems, want %d:\n%v", len(got), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("problem %d is %q, want it to start %q", i+1, got[i], w)
		}
	}
	var fe *FileError
	if !errors.As(err, &fe) {
		t.Errorf("%T holds no *FileError", err)
	}
}
