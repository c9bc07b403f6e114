package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README's embedding snippet is a complete program: this builds and
// vets it as written, so a renamed API or a missing import breaks here.
func TestReadmeSnippetBuilds(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "## Embedding in Go, with a custom tool")
	if !ok {
		t.Fatal("README has no embedding section")
	}
	m := regexp.MustCompile("(?s)```go\n(.*?)```").FindStringSubmatch(section)
	if m == nil || !strings.HasPrefix(m[1], "package main\n") {
		t.Fatal("the embedding section's first Go block is not a whole program")
	}
	for _, want := range []string{"policy.Confirmer", "policy.Default()", "tools.NoEffects", ") Confirm(ctx context.Context, req policy.ConfirmRequest) (policy.Answer, error)"} {
		if !strings.Contains(m[1]+section, want) {
			t.Errorf("the embedding section lacks %q", want)
		}
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte(m[1]), 0o644); err != nil {
		t.Fatal(err)
	}
	// Built as a file of this module (run from its root), so the imports
	// resolve to this checkout.
	for _, args := range [][]string{{"build", "-o", filepath.Join(dir, "snippet"), src}, {"vet", src}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = filepath.Join("..", "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("go %s: %v\n%s", args[0], err, out)
		}
	}
}
