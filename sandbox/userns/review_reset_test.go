package userns_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trioagent/trio/internal/sandboxtest"
	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/sandbox/userns"
)

// Attacks on Reset (the agent calls it before the Critic's checks), as
// an ordinary user, sharing one warm base (building it takes minutes).
func TestReviewReset(t *testing.T) {
	if asOrdinaryUser(t, "TestReviewReset") {
		return
	}
	requireUserns(t)
	warm := warmFor(t)
	t.Run("planted links reach neither the next cache nor the host", func(t *testing.T) { testResetPlantedLinks(t, warm) })
	t.Run("close right after Reset leaves nothing", func(t *testing.T) { testResetThenClose(t, warm) })
}

// A command plants, in its build cache, symlinks to a host folder (by its
// host path, which dangles inside the sandbox but not for the host's
// removal of the old cache), swaps GOCACHE's folder for a symlink into
// the workspace holding a forged entry, and makes a folder unreadable.
// After Reset the next command's GOCACHE is a real folder without the
// forged entry, and neither the background removal of the old cache nor
// Close touched the host folder (its content and modes are unchanged).
func testResetPlantedLinks(t *testing.T, warm string) {
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.MkdirAll(filepath.Join(victim, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(victim, "sub", "keep"), []byte("host data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(victim, "sub"), 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(victim, "sub"), 0o755) })
	before := sandboxtest.ContentHash(t, victim)
	modeBefore := mode(t, filepath.Join(victim, "sub"))

	state := t.TempDir()
	sb, _ := open(t, sandbox.RunSpec{Settings: userns.Config{WarmCache: warm, StateDir: state}}, nil)
	res := run(t, sb, "sh", "-c", `set -e
ln -s `+victim+` /cache/victim
ln -s `+victim+`/sub /cache/go-build/victim-sub
mkdir -p /workspace/evil/00 && echo FORGED > /workspace/evil/00/planted
mv /cache/go-build /cache/go-build.real
ln -s /workspace/evil /cache/go-build
mkdir /cache/locked && echo x > /cache/locked/f && chmod 000 /cache/locked
echo planted`)
	if !strings.Contains(res.Stdout, "planted") {
		t.Fatalf("the command could not plant its links: %+v", res)
	}
	if err := sb.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	res = run(t, sb, "sh", "-c", `test -L "$GOCACHE" && echo LINK; test -d "$GOCACHE" || echo NODIR; ls -a /cache; grep -rl FORGED "$GOCACHE" /cache 2>/dev/null; echo end`)
	if strings.Contains(res.Stdout, "LINK") || strings.Contains(res.Stdout, "NODIR") || strings.Contains(res.Stdout, "FORGED") ||
		strings.Contains(res.Stdout, "victim") || strings.Contains(res.Stdout, "locked") || strings.Contains(res.Stdout, "planted") ||
		!strings.Contains(res.Stdout, "end") {
		t.Fatalf("after Reset the cache still holds what the command planted:\n%s%s", res.Stdout, res.Stderr)
	}
	res = run(t, sb, "go", "list", "-f", "{{.Stale}}", "fmt")
	if strings.TrimSpace(res.Stdout) != "false" {
		t.Fatalf("after Reset the cache is not the warm base: %+v", res)
	}
	if err := sb.Close(); err != nil {
		t.Fatal(err)
	}
	if after := sandboxtest.ContentHash(t, victim); after != before {
		t.Error("removing the old cache changed the host folder a planted symlink named")
	}
	if m := mode(t, filepath.Join(victim, "sub")); m != modeBefore {
		t.Errorf("removing the old cache changed the mode of a host folder a planted symlink named: %v, was %v", m, modeBefore)
	}
	if left, _ := filepath.Glob(filepath.Join(state, "*")); len(left) != 0 {
		t.Errorf("Close left %v", left)
	}
}

// Reset removes the old cache in the background; Close right after it
// (and a Reset racing it) waits for the removal and leaves no folder of
// the sandbox behind.
func testResetThenClose(t *testing.T, warm string) {
	state := t.TempDir()
	sb, _ := open(t, sandbox.RunSpec{Settings: userns.Config{WarmCache: warm, StateDir: state}}, nil)
	run(t, sb, "sh", "-c", "head -c 1048576 /dev/zero > /cache/fill")
	if err := sb.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- sb.Reset(context.Background()) }()
	if err := sb.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil && err != sandbox.ErrClosed {
		t.Errorf("a Reset racing Close: %v, want nil or ErrClosed", err)
	}
	if left, _ := filepath.Glob(filepath.Join(state, "*")); len(left) != 0 {
		t.Errorf("Close right after Reset left %v", left)
	}
	if _, err := sb.Exec(context.Background(), sandbox.Command{Argv: []string{"true"}}); err == nil {
		t.Error("Exec after Close succeeded")
	}
}

func mode(t *testing.T, p string) os.FileMode {
	t.Helper()
	st, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode()
}
