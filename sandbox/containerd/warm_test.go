package containerd

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trioagent/trio/internal/sandboxtest"
	"github.com/trioagent/trio/sandbox"
)

// A run starts with the standard library already compiled, and nothing a
// run writes into its build cache — a forged entry, a changed one — reaches
// the trusted base or the next run.
func TestWarmCacheIsWarmAndUnpoisoned(t *testing.T) {
	requireContainerd(t)
	var progress []string
	ws := t.TempDir()
	a := newSandbox(t, sandbox.RunSpec{Workspace: ws, Progress: func(m string) { progress = append(progress, m) }})
	if a.warmBase == "" {
		t.Fatal("no warm base: is Go on the container's PATH?")
	}
	t.Logf("progress: %q", progress)
	before := sandboxtest.TreeHash(t, a.warmBase)
	res := run(t, a, "go", "list", "-f", "{{.ImportPath}} {{.Stale}}", "fmt", "testing", "net/http")
	if res.ExitCode != 0 || strings.Contains(res.Stdout, "true") || strings.Count(res.Stdout, "false") != 3 {
		t.Fatalf("the standard library is not in the run's cache:\n%s%s", res.Stdout, res.Stderr)
	}
	res = run(t, a, "sh", "-c", `set -e
cd /cache/go-build
d=$(ls -d ?? | head -1)
f=$(ls $d | head -1)
echo forged > $d/forged-entry
echo poison > $d/$f || true
rm -f $d/$f || true
echo forged > trim.txt || true
echo done`)
	if !strings.Contains(res.Stdout, "done") {
		t.Fatalf("the run could not write its own cache layer: %+v", res)
	}
	if after := sandboxtest.TreeHash(t, a.warmBase); after != before {
		t.Fatal("a run changed the trusted base")
	}
	b := newSandbox(t, sandbox.RunSpec{Workspace: t.TempDir()})
	res = run(t, b, "sh", "-c", "ls /cache/go-build/*/forged-entry 2>/dev/null; cat /cache/go-build/trim.txt 2>/dev/null; echo end")
	if strings.Contains(res.Stdout, "forged") {
		t.Fatalf("the next run sees what the first wrote into its cache:\n%s", res.Stdout)
	}
	if _, err := os.Stat(filepath.Join(b.warmBase, "README")); err != nil {
		t.Fatal(err)
	}
}

// A check command (sandbox.Command.Check, the Critic's) never loads Python
// bytecode planted in the workspace (see sandboxtest.CheckCaches; the go
// command's cache is the run's overlay here).
func TestCheckIgnoresPlantedBytecode(t *testing.T) {
	ws := t.TempDir()
	sandboxtest.WriteFiles(t, ws, sandboxtest.CheckModule)
	sb := newSandbox(t, sandbox.RunSpec{Workspace: ws})
	sandboxtest.CheckCaches(t, sb, false)
}

// A workspace holding the warm cache (Workspace = $HOME, the default
// ~/.cache/trio) would let commands change the base through /workspace:
// New refuses before it reaches containerd.
func TestWorkspaceMayNotHoldTheWarmCache(t *testing.T) {
	home := t.TempDir()
	_, err := New(context.Background(), sandbox.RunSpec{Workspace: home, Settings: Config{WarmCache: filepath.Join(home, ".cache", "trio"), Address: filepath.Join(home, "no.sock")}})
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "warm build cache") {
		t.Fatalf("New: %v, want an ErrConfig naming the warm build cache", err)
	}
}
