package containerd

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trioagent/trio/sandbox"
)

// The layout follows the workspace: a read-only folder or a hidden file
// that appears after the sandbox opened is laid out before the next
// command, and the recreated container is as usable as the first.
func TestLayoutFollowsNewMatches(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	rules := func(rel string) sandbox.Access {
		switch {
		case path.Base(rel) == ".env":
			return sandbox.Hidden
		case rel == "acceptance" || strings.HasPrefix(rel, "acceptance/"):
			return sandbox.ReadOnly
		}
		return sandbox.Writable
	}
	s := newSandbox(t, sandbox.RunSpec{Workspace: ws, PathRules: rules})
	if res := run(t, s, "sh", "-c", "echo draft > /workspace/notes && touch /tmp/x && touch $HOME/y"); res.ExitCode != 0 {
		t.Fatalf("first command: %+v", res)
	}
	os.MkdirAll(filepath.Join(ws, "acceptance"), 0o755)
	os.WriteFile(filepath.Join(ws, "acceptance", "a_test.py"), []byte("def test_a(): pass\n"), 0o644)
	os.WriteFile(filepath.Join(ws, ".env"), []byte("KEY=secret-after-open\n"), 0o644)
	res := run(t, s, "sh", "-c", "cat /workspace/.env; echo evil > /workspace/acceptance/a_test.py; touch /workspace/acceptance/new; "+
		"touch /tmp/x && touch $HOME/y && echo draft2 >> /workspace/notes && echo usable")
	if strings.Contains(res.Stdout, "secret-after-open") {
		t.Errorf("a .env written after the sandbox opened was readable: %+v", res)
	}
	if !strings.Contains(res.Stdout, "usable") {
		t.Errorf("the recreated container lost /tmp, HOME or the workspace: %+v", res)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "acceptance", "a_test.py")); string(b) != "def test_a(): pass\n" {
		t.Errorf("acceptance/a_test.py changed: %q", b)
	}
	if _, err := os.Lstat(filepath.Join(ws, "acceptance", "new")); err == nil {
		t.Error("a command created a file in a read-only folder")
	}
	if s.restarts != 1 {
		t.Errorf("%d restarts, want 1 (one new layout)", s.restarts)
	}
	run(t, s, "true")
	if s.restarts != 1 {
		t.Errorf("%d restarts after an unchanged layout, want still 1", s.restarts)
	}
}

// A hidden path that a command itself creates is removed after it, so a
// fresh .git with a hostile config never reaches the host's git.
func TestHiddenPathCreatedByCommandRemoved(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	rules := func(rel string) sandbox.Access {
		if rel == ".git" || strings.HasPrefix(rel, ".git/") {
			return sandbox.Hidden
		}
		return sandbox.Writable
	}
	s := newSandbox(t, sandbox.RunSpec{Workspace: ws, PathRules: rules})
	res := run(t, s, "sh", "-c", "mkdir -p .git && printf '[core]\\n\\tfsmonitor = touch /tmp/pwned\\n' > .git/config && echo keep > kept")
	if _, err := os.Lstat(filepath.Join(ws, ".git")); err == nil {
		t.Fatalf(".git created by the command is still in the workspace: %+v", res)
	}
	if !strings.Contains(res.Stderr, "removed .git") {
		t.Errorf("stderr does not say .git was removed: %q", res.Stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "kept")); string(b) != "keep\n" {
		t.Errorf("the command's other output is gone: %q", b)
	}
}
