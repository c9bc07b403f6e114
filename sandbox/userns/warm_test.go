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

// As an ordinary user, a sandbox starts with the standard library compiled
// (a copy of the trusted base it built once), and what its commands write
// into their cache reaches neither the base nor the next sandbox.
func TestWarmCacheSeeded(t *testing.T) {
	if asOrdinaryUser(t, "TestWarmCacheSeeded") {
		return
	}
	requireUserns(t)
	warm := filepath.Join(t.TempDir(), "warm")
	var progress []string
	a, _ := open(t, userns.Config{WarmCache: warm, Progress: func(m string) { progress = append(progress, m) }}, nil)
	if len(progress) != 2 || !strings.Contains(progress[0], "building the trusted Go build cache") {
		t.Errorf("progress while building the base: %q", progress)
	}
	bases, _ := filepath.Glob(filepath.Join(warm, "go-build-*[^k]"))
	if len(bases) != 1 {
		t.Fatalf("warm cache folder holds %v, want one base", bases)
	}
	before := sandboxtest.ContentHash(t, bases[0])
	res := run(t, a, "go", "list", "-f", "{{.ImportPath}} {{.Stale}}", "fmt", "testing")
	if res.ExitCode != 0 || strings.Contains(res.Stdout, "true") || strings.Count(res.Stdout, "false") != 2 {
		t.Fatalf("the standard library is not in the sandbox's cache:\n%s%s", res.Stdout, res.Stderr)
	}
	res = run(t, a, "sh", "-c", "d=$(ls -d /cache/go-build/?? | head -1); echo forged > $d/forged-entry && for f in $d/*; do echo x >> $f; done; echo done")
	if !strings.Contains(res.Stdout, "done") {
		t.Fatalf("the sandbox could not write its own cache: %+v", res)
	}
	if after := sandboxtest.ContentHash(t, bases[0]); after != before {
		t.Fatal("a command changed the trusted base")
	}
	b, _ := open(t, userns.Config{WarmCache: warm}, nil)
	res = run(t, b, "sh", "-c", "ls /cache/go-build/*/forged-entry 2>/dev/null; echo end")
	if strings.Contains(res.Stdout, "forged") {
		t.Fatalf("the next sandbox sees what the first wrote into its cache:\n%s", res.Stdout)
	}
	if _, err := os.Stat(filepath.Join(bases[0], "README")); err != nil {
		t.Fatal(err)
	}
	testResetRenewsTheCache(t, warm)
}

// After Reset (which the agent calls before the Critic's checks), the
// build cache is a fresh copy of the warm base: an entry a command
// overwrote and a forged one are gone, the standard library is still
// compiled, and what the removed cache held no longer counts against the
// disk limit.
func testResetRenewsTheCache(t *testing.T, warm string) {
	sb, _ := open(t, userns.Config{WarmCache: warm, Limits: sandbox.Limits{Disk: 64 << 20}}, nil)
	res := run(t, sb, "sh", "-c", `d=$(ls -d /cache/go-build/?? | head -1); f=$(ls $d | head -1); echo $d/$f; echo FORGED > $d/$f; echo FORGED > $d/planted; head -c 41943040 /dev/zero > /cache/big`)
	entry := strings.TrimSpace(res.Stdout)
	if res.ExitCode != 0 || entry == "" {
		t.Fatalf("the command could not write its cache: %+v", res)
	}
	res = run(t, sb, "sh", "-c", "head -c 41943040 /dev/zero > /cache/big2")
	if !res.DiskExceeded {
		t.Fatalf("80 MiB of cache passed a 64 MiB disk limit: %+v", res)
	}
	if err := sb.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	res = run(t, sb, "sh", "-c", "grep -rl FORGED /cache; ls /cache/big /cache/big2 "+entry+" 2>/dev/null; echo end")
	if res.Stdout != entry+"\nend\n" {
		t.Fatalf("after Reset the cache still holds what a command wrote: %q", res.Stdout)
	}
	res = run(t, sb, "go", "list", "-f", "{{.ImportPath}} {{.Stale}}", "fmt")
	if res.ExitCode != 0 || strings.TrimSpace(res.Stdout) != "fmt false" {
		t.Fatalf("after Reset the standard library is not compiled:\n%s%s", res.Stdout, res.Stderr)
	}
	res = run(t, sb, "sh", "-c", "head -c 41943040 /dev/zero > /cache/big3")
	if res.ExitCode != 0 || res.DiskExceeded {
		t.Fatalf("after Reset the removed cache still counts against the disk limit: %+v", res)
	}
}
