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
// (the trusted base it built once, which its commands read through Trio's
// cache program and see read-only), and what its commands write, into
// their own cache, at the base or at the trusted builds, reaches neither
// the base, nor the trusted builds, nor the next sandbox.
func TestWarmCacheSeeded(t *testing.T) {
	if asOrdinaryUser(t, "TestWarmCacheSeeded") {
		return
	}
	requireUserns(t)
	warm, state := filepath.Join(t.TempDir(), "warm"), t.TempDir()
	var progress []string
	a, _ := open(t, sandbox.RunSpec{Progress: func(m string) { progress = append(progress, m) }, Settings: userns.Config{WarmCache: warm, StateDir: state}},
		sandboxtest.CheckModule)
	if len(progress) != 2 || !strings.Contains(progress[0], "building the trusted Go build cache") {
		t.Errorf("progress while building the base: %q", progress)
	}
	bases, _ := filepath.Glob(filepath.Join(warm, "go-build-*[^k]"))
	if len(bases) != 1 {
		t.Fatalf("warm cache folder holds %v: want one base", bases)
	}
	trusted := []string{treeDir(t, warm, state)}
	res := run(t, a, "go", "list", "-f", "{{.ImportPath}} {{.Stale}}", "fmt", "testing")
	if res.ExitCode != 0 || strings.Contains(res.Stdout, "true") || strings.Count(res.Stdout, "false") != 2 {
		t.Fatalf("the standard library is not in the sandbox's cache:\n%s%s", res.Stdout, res.Stderr)
	}
	// A trusted build (sandbox.TrustedGo) stores the workspace's package
	// among the trusted builds.
	if res := run(t, a, "go", "build", "./..."); res.ExitCode != 0 {
		t.Fatalf("go build: %+v", res)
	}
	before := [2]string{sandboxtest.ContentHash(t, bases[0]), sandboxtest.ContentHash(t, trusted[0])}
	// Every way a command has to change the base and the trusted builds
	// it reads: write, append, create, remove, rename, chmod, link, and
	// go itself with either as its GOCACHE. Their content on the host is
	// the verdict.
	res = run(t, a, "sh", "-c", `for b in $(go env GOCACHEPROG | cut -d" " -f4-); do
test -d "$b" && d=$(ls -d $b/?? | head -1) && f=$(ls $d | head -1) && test -n "$f" || { echo "nothing at $b"; exit 1; }
for try in "echo x >> $d/$f" "echo x > $d/$f" "echo forged > $d/forged" "rm -f $d/$f" "mv $d/$f $d/moved" "chmod 777 $d/$f" "ln $d/$f /cache/link" "chmod 777 $d" "touch $b/README" "mkdir $b/00"; do
  sh -c "$try" 2>/dev/null && echo "CHANGED: $try"
done
GOCACHEPROG= GOCACHE=$b go build -a fmt >/dev/null 2>&1 # the go command ignores failed cache writes: the hash below judges it
echo tried $b
done
echo forged > /cache/go-build/forged && echo wrote-own`)
	if strings.Contains(res.Stdout, "CHANGED") || strings.Contains(res.Stdout, "nothing at") || !strings.Contains(res.Stdout, "wrote-own") ||
		!strings.Contains(res.Stdout, "tried /.trio/trusted\n") {
		t.Fatalf("a command could change the trusted base or builds, or not write its own cache:\n%s%s", res.Stdout, res.Stderr)
	}
	if after := sandboxtest.ContentHash(t, bases[0]); after != before[0] {
		t.Fatal("a command changed the trusted base")
	}
	if after := sandboxtest.ContentHash(t, trusted[0]); after != before[1] {
		t.Fatal("a command changed the trusted builds")
	}
	b, _ := open(t, sandbox.RunSpec{Settings: userns.Config{WarmCache: warm}}, nil)
	res = run(t, b, "sh", "-c", "ls /cache/go-build/forged 2>/dev/null; echo end")
	if strings.Contains(res.Stdout, "forged") {
		t.Fatalf("the next sandbox sees what the first wrote into its cache:\n%s", res.Stdout)
	}
	if _, err := os.Stat(filepath.Join(bases[0], "README")); err != nil {
		t.Fatal(err)
	}
	testResetRenewsTheCache(t, warm)
	testCheckBuildsFromTheBase(t, warm)
	t.Run("trusted build confines its tests", func(t *testing.T) { testTrustedBuildConfinesTests(t, warm) })
	t.Run("check reuses trusted builds", func(t *testing.T) { testCheckReusesTrustedBuilds(t, warm) })
}

// After Reset (which the agent calls before the Critic's checks), the
// build cache is new and empty over the same base: a package a command
// built and an entry it forged are gone, the standard library is still
// compiled, and what the removed cache held no longer counts against the
// disk limit.
func testResetRenewsTheCache(t *testing.T, warm string) {
	sb, _ := open(t, sandbox.RunSpec{Limits: sandbox.Limits{Disk: 64 << 20}, Settings: userns.Config{WarmCache: warm}}, nil)
	res := run(t, sb, "sh", "-c", `set -e; mkdir -p /tmp/m && cd /tmp/m && printf 'module m\n' > go.mod && printf 'package m\n' > m.go && go build ./... && ls /cache/go-build/*/*-a | wc -l && mkdir -p /cache/go-build/00 && echo FORGED > /cache/go-build/00/planted && head -c 41943040 /dev/zero > /cache/big`)
	if res.ExitCode != 0 || strings.TrimSpace(res.Stdout) == "0" {
		t.Fatalf("the command could not write its cache: %+v", res)
	}
	res = run(t, sb, "sh", "-c", "head -c 41943040 /dev/zero > /cache/big2")
	if !res.DiskExceeded {
		t.Fatalf("80 MiB of cache passed a 64 MiB disk limit: %+v", res)
	}
	if err := sb.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	res = run(t, sb, "sh", "-c", "grep -rl FORGED /cache; ls /cache/big /cache/big2 2>/dev/null; ls /cache/go-build; echo end")
	if res.Stdout != "end\n" {
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

// A check command (sandbox.Command.Check, the Critic's) builds only from
// the warm base: nothing an earlier command or the check's own processes
// stored is read back (see sandboxtest.CheckCaches).
func testCheckBuildsFromTheBase(t *testing.T, warm string) {
	sb, _ := open(t, sandbox.RunSpec{Settings: userns.Config{WarmCache: warm}}, sandboxtest.CheckModule)
	sandboxtest.CheckCaches(t, sb, true)
}
