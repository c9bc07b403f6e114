package userns_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/sandbox/userns"
)

// Attacks on the layered build cache (the read-only trusted builds, which
// hold the trusted base's files, at /.trio/trusted, read through Trio's GOCACHEPROG, over the run's own
// /cache/go-build), as an ordinary user, sharing one warm base.
func TestReviewCacheProg(t *testing.T) {
	if asOrdinaryUser(t, "TestReviewCacheProg") {
		return
	}
	requireUserns(t)
	warm := warmFor(t)
	// Build the base once.
	sb, _ := open(t, sandbox.RunSpec{Settings: userns.Config{WarmCache: warm}}, nil)
	sb.Close()
	bases, _ := filepath.Glob(filepath.Join(warm, "go-build-*[^k]"))
	if len(bases) != 1 {
		t.Fatalf("warm cache folder holds %v, want one base", bases)
	}
	base := bases[0]
	fullStateAtStart(t, base)
	t.Run("base unchanged by every write a command tries", func(t *testing.T) { testCacheProgBaseImmutable(t, warm, base) })
	t.Run("go works normally", func(t *testing.T) { testCacheProgGoWorks(t, warm) })
	t.Run("forged entry shadows the base until Reset only", func(t *testing.T) { testCacheProgForgedEntry(t, warm, base) })
	t.Run("forged cached test result gone after Reset", func(t *testing.T) { testCacheProgForgedTestResult(t, warm) })
	t.Run("started process re-forging through Reset", func(t *testing.T) { testCacheProgStartedThroughReset(t, warm, base) })
	t.Run("symlinked outputs and folders", func(t *testing.T) { testCacheProgSymlinks(t, warm, base) })
	t.Run("go env -w does not outlive the command", func(t *testing.T) { testCacheProgEnvOverride(t, warm) })
	t.Run("disk limit holds for the cache program's puts", func(t *testing.T) { testCacheProgDisk(t, warm) })
	t.Run("Worker code forges a result during the check, -p 1", func(t *testing.T) { testCacheProgForgeDuringCheck(t, warm, "-p 1") })
	t.Run("Worker code forges a result during the check", func(t *testing.T) { testCacheProgForgeDuringCheck(t, warm, "") })
	t.Run("workspace holding the warm cache", func(t *testing.T) { testCacheProgWorkspaceHoldsBase(t, base) })
	// Last: nothing above changed the base (content, names, modes,
	// times, extended attributes), and with every sandbox closed no hard
	// link to its files is left (each run's trusted builds link them).
	t.Run("base state at the end", func(t *testing.T) {
		if got := fullState(t, base); got != fullStateAtStart(t, base) {
			t.Fatal("the trusted base changed during the review tests")
		}
		filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
			var st unix.Stat_t
			if err == nil && d.Type().IsRegular() && unix.Lstat(p, &st) == nil && st.Nlink != 1 {
				t.Errorf("%s has %d links after every sandbox closed", p, st.Nlink)
			}
			return nil
		})
		if runs, _ := filepath.Glob(filepath.Join(warm, "runs", "*")); len(runs) != 0 {
			t.Errorf("closed sandboxes left their trusted builds: %v", runs)
		}
	})
}

var baseStates = map[string]string{}

// fullStateAtStart is the base's fullState the first time it is asked.
func fullStateAtStart(t *testing.T, base string) string {
	if s, ok := baseStates[base]; ok {
		return s
	}
	baseStates[base] = fullState(t, base)
	return baseStates[base]
}

// fullState hashes everything of a tree a command could change: names,
// types, modes, sizes, modification times, extended attributes and
// content. Not link counts: every open sandbox's trusted builds link the
// base's files.
func fullState(t testing.TB, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			fmt.Fprintf(h, "err %s %v\n", p, err)
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			fmt.Fprintf(h, "lstat %s %v\n", rel, err)
			return nil
		}
		fmt.Fprintf(h, "%s %o %d %d.%d\n", rel, st.Mode, st.Size, st.Mtim.Sec, st.Mtim.Nsec)
		buf := make([]byte, 4096)
		if n, err := unix.Llistxattr(p, buf); err == nil && n > 0 {
			fmt.Fprintf(h, "xattr %q\n", buf[:n])
		}
		if d.Type().IsRegular() {
			b, _ := os.ReadFile(p)
			h.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// baseEntry is one action entry of the base: its action ID, output ID and
// output size.
type baseEntry struct {
	action, output string // hex
	size           int64
}

func someBaseEntry(t *testing.T, base string) baseEntry {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(base, "*", "*-a"))
	sort.Strings(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		fl := strings.Fields(string(b))
		if len(fl) != 5 {
			continue
		}
		var size int64
		fmt.Sscan(fl[3], &size)
		if size > 0 {
			return baseEntry{action: fl[1], output: fl[2], size: size}
		}
	}
	t.Fatal("no action entry in the base")
	return baseEntry{}
}

func b64(hexID string) string {
	b, _ := hex.DecodeString(hexID)
	return base64.StdEncoding.EncodeToString(b)
}

// cacheGet asks the sandbox's own cache program (as GOCACHEPROG names it)
// for action, and returns its response.
func cacheGet(t *testing.T, sb sandbox.Sandbox, action string) (diskPath string, miss bool, content string) {
	t.Helper()
	req := fmt.Sprintf(`{"ID":1,"Command":"get","ActionID":"%s"}`, b64(action))
	res := run(t, sb, "sh", "-c", `printf '%s\n{"ID":2,"Command":"close"}\n' '`+req+`' | $GOCACHEPROG`)
	if res.ExitCode != 0 {
		t.Fatalf("cache program: %+v", res)
	}
	sc := bufio.NewScanner(strings.NewReader(res.Stdout))
	for sc.Scan() {
		var r struct {
			ID       int64
			Err      string
			Miss     bool
			DiskPath string
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("cache program said %q: %v", sc.Text(), err)
		}
		if r.ID == 1 {
			if r.Err != "" {
				t.Fatalf("cache program: %s", r.Err)
			}
			if r.DiskPath != "" {
				c := run(t, sb, "cat", r.DiskPath)
				content = c.Stdout
			}
			return r.DiskPath, r.Miss, content
		}
	}
	t.Fatalf("no response to the get: %q %q", res.Stdout, res.Stderr)
	return
}

// Every way a command has to change the base: through the cache program
// (DIR the base, or a put whose IDs point there), GOCACHE at the base,
// times, extended attributes, truncation, hard links into every writable
// folder, renames out of it, /proc/self/fd reopen, chmod of the root.
func testCacheProgBaseImmutable(t *testing.T, warm, base string) {
	before := fullStateAtStart(t, base)
	e := someBaseEntry(t, base)
	sb, _ := open(t, sandbox.RunSpec{Limits: sandbox.Limits{Timeout: 5 * time.Minute}, Settings: userns.Config{WarmCache: warm}}, map[string]string{
		"w.py": `import os, sys, errno
b = "/.trio/trusted"
d = os.path.join(b, sys.argv[1][:2])
f = os.path.join(d, sys.argv[1] + "-a")
def t(name, fn):
    try:
        fn(); print("CHANGED:", name)
    except OSError as ex:
        print("refused:", name, errno.errorcode.get(ex.errno, ex.errno))
t("utime", lambda: os.utime(f, (0, 0)))
t("utime dir", lambda: os.utime(d, (0, 0)))
t("chmod root", lambda: os.chmod(b, 0o777))
t("chmod file", lambda: os.chmod(f, 0o600))
t("truncate", lambda: os.truncate(f, 0))
t("open rw", lambda: os.close(os.open(f, os.O_RDWR)))
def reopen():
    fd = os.open(f, os.O_RDONLY)
    os.close(os.open("/proc/self/fd/%d" % fd, os.O_WRONLY | os.O_APPEND))
t("reopen via /proc/self/fd", reopen)
t("setxattr", lambda: os.setxattr(f, "user.x", b"1"))
t("link to /cache", lambda: os.link(f, "/cache/l"))
t("link to /workspace", lambda: os.link(f, "/workspace/l"))
t("link to /tmp", lambda: os.link(f, "/tmp/l"))
t("link to HOME", lambda: os.link(f, os.path.expanduser("~/l")))
t("rename out", lambda: os.rename(f, "/cache/moved"))
t("rename dir out", lambda: os.rename(d, "/cache/moveddir"))
t("rename root", lambda: os.rename(b, "/cache/root"))
t("rename within", lambda: os.rename(f, f + "x"))
t("unlink", lambda: os.unlink(f))
t("mkdir", lambda: os.mkdir(os.path.join(b, "new")))
t("symlink", lambda: os.symlink("/etc/passwd", os.path.join(d, "s")))
t("mknod fifo", lambda: os.mkfifo(os.path.join(d, "p")))
`,
	})
	res := run(t, sb, "python3", "w.py", e.action)
	if strings.Contains(res.Stdout, "CHANGED") || !strings.Contains(res.Stdout, "refused: mknod") {
		t.Errorf("a write to the base succeeded (or the script did not run):\n%s%s", res.Stdout, res.Stderr)
	}
	put := fmt.Sprintf(`{"ID":1,"Command":"put","ActionID":"%s","OutputID":"%s","BodySize":6}`, b64(e.action), b64(e.output))
	res = run(t, sb, "sh", "-c", `set -x
printf '%s\n"Rk9SR0VE"\n{"ID":2,"Command":"close"}\n' '`+put+`' | /.trio/init --trio-gocacheprog /.trio/trusted /.trio/trusted
printf '%s\n"Rk9SR0VE"\n{"ID":2,"Command":"close"}\n' '`+put+`' | /.trio/init --trio-gocacheprog /.trio/trusted/`+e.action[:2]+`/.. /cache/go-build
GOCACHE=/.trio/trusted go build -a fmt
GOCACHEPROG= GOCACHE=/.trio/trusted go build -a fmt
GOCACHEPROG="/.trio/init --trio-gocacheprog /.trio/trusted /.trio/trusted" go build -a fmt
GOCACHE=/.trio/trusted go clean -cache -testcache -fuzzcache
GOCACHEPROG= GOCACHE=/.trio/trusted go clean -cache -testcache -fuzzcache
echo done`)
	if !strings.Contains(res.Stdout, "done") {
		t.Fatalf("%+v", res)
	}
	if strings.Contains(res.Stdout, `"DiskPath":"/.trio`) {
		t.Errorf("the cache program claims a put into the base:\n%s", res.Stdout)
	}
	if after := fullState(t, base); after != before {
		t.Fatal("a command changed the trusted base")
	}
}

// Within the Worker's commands the go command works as with a plain
// GOCACHE: std not stale, builds, tests cached from one command to the
// next, vet, -race, -cover, go run, go clean -cache.
func testCacheProgGoWorks(t *testing.T, warm string) {
	sb, _ := open(t, sandbox.RunSpec{Limits: sandbox.Limits{Timeout: 5 * time.Minute}, Settings: userns.Config{WarmCache: warm}}, map[string]string{
		"go.mod":     "module m\n\ngo 1.21\n",
		"m.go":       "package m\n\nimport \"fmt\"\n\nfunc Hello() string { return fmt.Sprint(\"hello\") }\n",
		"m_test.go":  "package m\n\nimport \"testing\"\n\nfunc TestHello(t *testing.T) {\n\tif Hello() != \"hello\" {\n\t\tt.Fatal(Hello())\n\t}\n}\n",
		"cmd/x/x.go": "package main\n\nimport (\"fmt\"; \"m\")\n\nfunc main() { fmt.Println(m.Hello()) }\n",
	})
	check := func(name string, want string, argv ...string) {
		t.Helper()
		res := run(t, sb, argv...)
		if res.ExitCode != 0 || !strings.Contains(res.Stdout+res.Stderr, want) {
			t.Errorf("%s: want %q in the output: %+v", name, want, res)
		}
	}
	check("std not stale", "fmt false\nnet/http false\ntesting false", "go", "list", "-f", "{{.ImportPath}} {{.Stale}}", "fmt", "net/http", "testing")
	check("build", "", "go", "build", "./...")
	check("test", "ok", "go", "test", "./...")
	check("test cached", "(cached)", "go", "test", "./...")
	check("vet", "", "go", "vet", "./...")
	check("run", "hello", "go", "run", "./cmd/x")
	check("run again", "hello", "go", "run", "./cmd/x")
	check("cover", "coverage:", "go", "test", "-cover", "./...")
	// go build above was a trusted build (sandbox.TrustedGo): m is among
	// the trusted builds; an ordinary command's build goes to its cache.
	check("list -export", "/.trio/trusted/", "go", "list", "-export", "-f", "{{.Export}}", "m")
	check("list -export, ordinary", "/cache/go-build/", "sh", "-c", "echo 'package m\n\nfunc Two() int { return 2 }' > two.go && go list -export -f {{.Export}} m")
	check("clean -cache, then std still compiled", "false", "sh", "-c", "go clean -cache && go list -f '{{.Stale}}' fmt")
	check("test after clean", "ok", "go", "test", "./...")
	check("two builds at once", "both", "sh", "-c", "go build -a -o /dev/null ./cmd/x & go build -a -o /dev/null ./cmd/x & wait && go test -count=1 ./... && echo both")
}

// A command plants an entry for one of the base's actions in its own
// cache, pointing at a forged output: the cache program prefers it (the
// writable layer comes first), and after Reset it is gone, the base's
// entry answers again.
func testCacheProgForgedEntry(t *testing.T, warm, base string) {
	e := someBaseEntry(t, base)
	sb, _ := open(t, sandbox.RunSpec{Settings: userns.Config{WarmCache: warm}}, nil)
	forgedOut := strings.Repeat("ab", 32)
	entry := fmt.Sprintf("v1 %s %s %20d %20d\n", e.action, forgedOut, 7, time.Now().UnixNano())
	res := run(t, sb, "sh", "-c", `set -e
mkdir -p /cache/go-build/`+e.action[:2]+` /cache/go-build/ab
printf 'FORGED\n' > /cache/go-build/ab/`+forgedOut+`-d
printf '%s' '`+entry+`' > /cache/go-build/`+e.action[:2]+`/`+e.action+`-a
# and copies where a Reset does not look
for d in /workspace/.forge /tmp /home/trio; do mkdir -p $d/`+e.action[:2]+` $d/ab; cp /cache/go-build/ab/* $d/ab/; cp /cache/go-build/`+e.action[:2]+`/`+e.action+`-a $d/`+e.action[:2]+`/ 2>/dev/null || true; done
echo planted`)
	if !strings.Contains(res.Stdout, "planted") {
		t.Fatalf("%+v", res)
	}
	path, miss, content := cacheGet(t, sb, e.action)
	if miss || !strings.HasPrefix(path, "/cache/go-build/") || content != "FORGED\n" {
		t.Fatalf("the planted entry is not what the cache program answers before Reset (the attack's premise): %q %v %q", path, miss, content)
	}
	if err := sb.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	path, miss, content = cacheGet(t, sb, e.action)
	if miss || !strings.HasPrefix(path, "/.trio/trusted/") || strings.Contains(content, "FORGED") || int64(len(content)) != e.size {
		t.Fatalf("after Reset the cache program answers %q (miss %v, %d bytes, %.20q), want the base's entry", path, miss, len(content), content)
	}
}

// The Worker runs a test (its result is cached), then rewrites the cached
// output to say what it likes (a new output under its checksum, which
// the go command verifies, and the action entry pointed at it): before Reset the go command reports the
// forgery as a cached result; after Reset the test runs again.
func testCacheProgForgedTestResult(t *testing.T, warm string) {
	sb, _ := open(t, sandbox.RunSpec{Settings: userns.Config{WarmCache: warm}}, map[string]string{
		"go.mod":    "module m\n\ngo 1.21\n",
		"m_test.go": "package m\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) { t.Log(\"MARKER-ORIG\") }\n",
	})
	res := run(t, sb, "sh", "-c", `set -e
go test -v ./... >/dev/null
f=$(grep -rl -- '--- PASS: TestX' /cache/go-build | head -1)
test -n "$f"
old=$(basename $f -d)
sed 's/MARKER-ORIG/MARKER-FORG/' $f > /tmp/x
new=$(sha256sum /tmp/x | cut -c1-64)
mkdir -p /cache/go-build/$(echo $new | cut -c1-2) && cp /tmp/x /cache/go-build/$(echo $new | cut -c1-2)/$new-d
for a in $(grep -l $old /cache/go-build/*/*-a); do sed "s/$old/$new/" $a > /tmp/a && cat /tmp/a > $a; done
go test -v ./...`)
	if !strings.Contains(res.Stdout, "MARKER-FORG") || !strings.Contains(res.Stdout, "(cached)") {
		t.Fatalf("the forgery did not work before Reset (the attack's premise): %+v", res)
	}
	if err := sb.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	res = run(t, sb, "go", "test", "-v", "./...")
	if res.ExitCode != 0 || strings.Contains(res.Stdout, "(cached)") || strings.Contains(res.Stdout, "FORG") || !strings.Contains(res.Stdout, "MARKER-ORIG") {
		t.Fatalf("after Reset the test result is the Worker's: %+v", res)
	}
}

// A process the Worker started (an MCP server) outlives Reset and keeps
// planting the forged entry in the cache it sees: the commands after
// Reset never get it, and what it writes still counts against the disk
// limit.
func testCacheProgStartedThroughReset(t *testing.T, warm, base string) {
	e := someBaseEntry(t, base)
	sb, _ := open(t, sandbox.RunSpec{Limits: sandbox.Limits{Disk: 64 << 20}, Settings: userns.Config{WarmCache: warm}}, nil)
	forgedOut := strings.Repeat("cd", 32)
	entry := fmt.Sprintf("v1 %s %s %20d %20d\n", e.action, forgedOut, 7, time.Now().UnixNano())
	script := `while :; do
mkdir -p /cache/go-build/` + e.action[:2] + ` /cache/go-build/cd /cache/go-build 2>/dev/null
printf 'FORGED\n' > /cache/go-build/cd/` + forgedOut + `-d
printf '%s' '` + entry + `' > /cache/go-build/` + e.action[:2] + `/` + e.action + `-a
test -e /cache/go-build/marker || { echo ready; touch /cache/go-build/marker; }
sleep 0.05; done`
	p, err := sb.Start(context.Background(), sandbox.Command{Argv: []string{"sh", "-c", script}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	r := bufio.NewReader(p.Stdout())
	if l, _ := r.ReadString('\n'); l != "ready\n" {
		t.Fatalf("started process: %q %s", l, p.Stderr())
	}
	for i := 0; i < 3; i++ {
		if err := sb.Reset(context.Background()); err != nil {
			t.Fatal(err)
		}
		path, miss, content := cacheGet(t, sb, e.action)
		if miss || !strings.HasPrefix(path, "/.trio/trusted/") || strings.Contains(content, "FORGED") {
			t.Fatalf("after Reset %d, with a started process alive, the cache program answers %q (%.20q)", i+1, path, content)
		}
	}
	// The started process fills the cache it still has: the disk limit
	// sees it.
	res, err := sb.Exec(context.Background(), sandbox.Command{Argv: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	_ = res
	fill, err := sb.Start(context.Background(), sandbox.Command{Argv: []string{"sh", "-c", "head -c 30000000 /dev/zero > /cache/a; echo one"}})
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(fill.Stdout())
	fill.Wait()
	fill.Stop()
	if err := sb.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	fill2, err := sb.Start(context.Background(), sandbox.Command{Argv: []string{"sh", "-c", "head -c 30000000 /dev/zero > /cache/b; echo two"}})
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(fill2.Stdout())
	fill2.Wait()
	fill2.Stop()
	res, err = sb.Exec(context.Background(), sandbox.Command{Argv: []string{"sh", "-c", "head -c 30000000 /dev/zero > /cache/c"}})
	if err != nil {
		t.Fatal(err)
	}
	// 30 MB (the first fill, kept: a started process was alive at Reset)
	// + 30 MB + 30 MB > 64 MiB.
	if !res.DiskExceeded && res.ExitCode == 0 {
		t.Errorf("90 MB of cache through Resets with a started process alive passed a 64 MiB disk limit: %+v", res)
	}
}

// Symlinks in the writable cache: an output that is a symlink to a host
// path (which dangles in the sandbox but not on the host), to a file of
// the base, to the workspace; a cache subfolder that is a symlink into
// the base or to a host folder. Puts never write through them into the
// base or the host, the host file stays as it was, and after Reset none
// of it is used.
func testCacheProgSymlinks(t *testing.T, warm, base string) {
	e := someBaseEntry(t, base)
	victimDir := filepath.Join(t.TempDir(), "victim")
	if err := os.MkdirAll(victimDir, 0o755); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(victimDir, "host-file")
	if err := os.WriteFile(victim, []byte("host data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before, baseBefore := fullState(t, victimDir), fullStateAtStart(t, base)
	sb, _ := open(t, sandbox.RunSpec{Settings: userns.Config{WarmCache: warm}}, map[string]string{
		"go.mod": "module m\n\ngo 1.21\n",
		"m.go":   "package m\n\nimport \"fmt\"\n\nvar X = fmt.Sprint(1)\n",
	})
	out1, out2, out3 := strings.Repeat("11", 32), strings.Repeat("22", 32), strings.Repeat("33", 32)
	entry := func(out string, size int64) string {
		return fmt.Sprintf("v1 %s %s %20d %20d\n", e.action, out, size, time.Now().UnixNano())
	}
	// Every subfolder the base has becomes a symlink to the base's, or to
	// the host folder: the go command's puts (go build -a) go there.
	res := run(t, sb, "sh", "-c", `set -e
cd /cache/go-build
mkdir -p 11 22 33 `+e.action[:2]+`
ln -sf `+victim+` 11/`+out1+`-d
ln -sf /.trio/trusted/`+e.output[:2]+`/`+e.output+`-d 22/`+out2+`-d
echo ws > /workspace/target && ln -sf /workspace/target 33/`+out3+`-d
printf '%s' '`+entry(out1, 10)+`' > `+e.action[:2]+`/`+e.action+`-a
n=0; for d in /.trio/trusted/??; do x=$(basename $d); case $x in 11|22|33|`+e.action[:2]+`) continue;; esac
  rm -rf $x; if [ $((n % 2)) = 0 ]; then ln -s $d $x; else ln -s `+victimDir+` $x; fi; n=$((n+1)); done
echo planted`)
	if !strings.Contains(res.Stdout, "planted") {
		t.Fatalf("%+v", res)
	}
	path, miss, _ := cacheGet(t, sb, e.action)
	t.Logf("output symlink to a host path: %q miss=%v", path, miss)
	res = run(t, sb, "sh", "-c", `printf '%s' '`+entry(out2, e.size)+`' > /cache/go-build/`+e.action[:2]+`/`+e.action+`-a`)
	path, miss, _ = cacheGet(t, sb, e.action)
	t.Logf("output symlink into the base: %q miss=%v", path, miss)
	res = run(t, sb, "sh", "-c", `printf '%s' '`+entry(out3, 3)+`' > /cache/go-build/`+e.action[:2]+`/`+e.action+`-a`)
	path, miss, content := cacheGet(t, sb, e.action)
	t.Logf("output symlink into the workspace: %q miss=%v %q", path, miss, content)
	// Puts through every symlinked subfolder.
	res = run(t, sb, "sh", "-c", "go build -a ./... ; go build -a -race ./... ; echo built")
	if !strings.Contains(res.Stdout, "built") {
		t.Fatalf("%+v", res)
	}
	if after := fullState(t, victimDir); after != before {
		t.Error("the host folder a planted symlink named changed")
	}
	if after := fullState(t, base); after != baseBefore {
		t.Fatal("puts through symlinked cache folders changed the trusted base")
	}
	if err := sb.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	path, miss, content = cacheGet(t, sb, e.action)
	if miss || !strings.HasPrefix(path, "/.trio/trusted/") || int64(len(content)) != e.size {
		t.Fatalf("after Reset: %q miss=%v", path, miss)
	}
	res = run(t, sb, "sh", "-c", "find /cache -type l; go build ./... && go list -f '{{.Stale}}' fmt")
	if strings.TrimSpace(res.Stdout) != "false" {
		t.Fatalf("after Reset: %+v", res)
	}
	if err := sb.Close(); err != nil {
		t.Fatal(err)
	}
	if after := fullState(t, victimDir); after != before {
		t.Error("removing the old cache changed the host folder a planted symlink named")
	}
}

// go env -w writes the command's GOENV file: the next command (the
// Critic's) still gets Trio's GOCACHEPROG, GOCACHE and GOFLAGS.
func testCacheProgEnvOverride(t *testing.T, warm string) {
	sb, _ := open(t, sandbox.RunSpec{Settings: userns.Config{WarmCache: warm}}, nil)
	want := run(t, sb, "go", "env", "GOCACHEPROG", "GOCACHE", "GOFLAGS", "GOENV").Stdout
	run(t, sb, "sh", "-c", `mkdir -p /workspace/evil; go env -w GOFLAGS=-toolexec=/workspace/evil/x GOCACHE=/workspace/evil; `+
		`mkdir -p ~/.config/go; printf 'GOCACHEPROG=/workspace/evil/prog\nGOFLAGS=-toolexec=/workspace/evil/x\n' >> ~/.config/go/env; cat ~/.config/go/env`)
	if err := sb.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := run(t, sb, "go", "env", "GOCACHEPROG", "GOCACHE", "GOFLAGS", "GOENV").Stdout; got != want {
		t.Fatalf("after go env -w the next command's go env is\n%s\nwant\n%s", got, want)
	}
}

// The cache program's puts count against the disk limit: a build that
// puts far more than what is left is stopped, and the cache on the host
// holds not much more than the limit.
func testCacheProgDisk(t *testing.T, warm string) {
	const limit = 48 << 20
	state := t.TempDir()
	sb, _ := open(t, sandbox.RunSpec{Limits: sandbox.Limits{Disk: limit, Timeout: 3 * time.Minute}, Settings: userns.Config{WarmCache: warm, StateDir: state}}, nil)
	res := run(t, sb, "sh", "-c", "head -c 40000000 /dev/zero > /cache/fill && mkdir /tmp/m && cd /tmp/m && printf 'module m\\n' > go.mod && printf 'package m\\nimport _ \"net/http\"\\n' > m.go && go build -a ./...; echo exit $?")
	caches, _ := filepath.Glob(filepath.Join(state, "trio-userns-*", "cache"))
	if len(caches) != 1 {
		t.Fatalf("state: %v", caches)
	}
	used := duBlocks(t, caches[0])
	t.Logf("DiskExceeded=%v exit=%d; cache on the host: %d MiB; %.300s", res.DiskExceeded, res.ExitCode, used>>20, res.Stderr)
	if used > limit+16<<20 {
		t.Errorf("the cache holds %d MiB under a %d MiB disk limit", used>>20, limit>>20)
	}
	if !res.DiskExceeded {
		t.Errorf("a build that put more than the disk limit left was not reported as over the limit: exit %d, %.500s", res.ExitCode, res.Stderr)
	}
}

func duBlocks(t *testing.T, dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		var st syscall.Stat_t
		if syscall.Lstat(p, &st) == nil {
			n += st.Blocks * 512
		}
		return nil
	})
	return n
}

// When the workspace holds the warm cache folder (a run in the user's
// home: ~/.cache/trio is inside it), the base is writable through
// /workspace, whatever the read-only bind at /.trio/trusted.
func testCacheProgWorkspaceHoldsBase(t *testing.T, base string) {
	home := t.TempDir()
	warm := filepath.Join(home, ".cache", "trio")
	if err := os.MkdirAll(warm, 0o700); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(warm, filepath.Base(base))
	if err := sandbox.CopyTree(base, mine); err != nil {
		t.Fatal(err)
	}
	before := fullState(t, mine)
	sb, err := userns.New(context.Background(), sandbox.RunSpec{Workspace: home, Limits: sandbox.Limits{Timeout: 30 * time.Second}, Settings: userns.Config{WarmCache: warm}})
	if err != nil {
		// The fix: New refuses, naming the folder.
		if !errors.Is(err, userns.ErrConfig) || !strings.Contains(err.Error(), "warm build cache") {
			t.Errorf("New with the workspace holding the warm cache: %v, want an ErrConfig naming the warm build cache", err)
		}
		return
	}
	defer sb.Close()
	e := someBaseEntry(t, mine)
	res := run(t, sb, "sh", "-c", `f=/workspace/.cache/trio/`+filepath.Base(base)+`/`+e.action[:2]+`/`+e.action+`-a; echo x >> $f && echo CHANGED`)
	if strings.Contains(res.Stdout, "CHANGED") || fullState(t, mine) != before {
		t.Errorf("with the workspace holding the warm cache folder, a command changed the trusted base through /workspace: %q", res.Stdout)
	}
}

// Reset gives each Critic check an empty cache, but the check itself runs
// the Worker's code (its tests, the code under the trusted tests) with
// that cache writable. In its own commands the Worker learns the test
// cache's keys for the trusted tests (deterministic: same toolchain, same
// sources; here by logging the cache protocol through a GOCACHEPROG of
// its own: the IDs looked up, missed and never put) and forges a passing
// result; during the Critic's `go test ./...`, a test of its own package
// (m/a, which runs before m/t) writes the forgery into the fresh cache,
// and the go command reported the failing trusted test m/t as
// "ok (cached)" (with -p 1 deterministically; with parallel runs m/t's
// lookups race m/a's test). A check's go command now reads only the
// trusted base and stores nothing (sandbox.CheckEnv), so what its own
// processes write is never read back.
func testCacheProgForgeDuringCheck(t *testing.T, warm string, flags string) {
	sb, _ := open(t, sandbox.RunSpec{Limits: sandbox.Limits{Timeout: 2 * time.Minute}, Settings: userns.Config{WarmCache: warm}}, map[string]string{
		"go.mod":      "module m\n\ngo 1.21\n",
		"lib/lib.go":  "package lib\n\nfunc Add(a, b int) int { return a - b } // broken\n",
		"t/t_test.go": "package t\n\nimport (\"testing\"; \"m/lib\")\n\nfunc TestAdd(t *testing.T) {\n\tif lib.Add(2, 2) != 4 {\n\t\tt.Fatal(\"TRUSTED TEST FAILED\")\n\t}\n}\n",
		"a/a_test.go": "package a\n\nimport (\"os\"; \"os/exec\"; \"testing\")\n\nfunc TestPlant(t *testing.T) {\n\texec.Command(\"sh\", \"-c\", \"cp -r /workspace/.payload/. $GOCACHE/ 2>/dev/null\").Run()\n\t_ = os.Getenv\n}\n",
		// What the Worker does in its own commands: learn the keys, make
		// the forgery, keep it in the workspace.
		"log.sh": "tee -a /tmp/req.log | /.trio/init --trio-gocacheprog /cache/go-build /.trio/trusted | tee -a /tmp/resp.log\n",
		"forge.py": `import base64, hashlib, json, os, subprocess, sys, time
flags = sys.argv[1:]
def missed():
    # The action IDs the go command looked up, missed and never put: the
    # test cache's, seen through a GOCACHEPROG that logs the protocol.
    for f in ("/tmp/req.log", "/tmp/resp.log"):
        open(f, "w").close()
    subprocess.run(["go", "test"] + flags + ["./t"], env=dict(os.environ, GOCACHEPROG="sh /workspace/log.sh"), capture_output=True)
    gets, puts, miss = {}, set(), set()
    for line in open("/tmp/req.log"):
        if line.startswith("{"):
            r = json.loads(line)
            if r.get("Command") == "get":
                gets[r["ID"]] = base64.b64decode(r["ActionID"]).hex()
            elif r.get("Command") == "put":
                puts.add(base64.b64decode(r["ActionID"]).hex())
    for line in open("/tmp/resp.log"):
        r = json.loads(line)
        if r.get("Miss") and r.get("ID") in gets:
            miss.add(gets[r["ID"]])
    return miss - puts
def put(aid, data):
    o = hashlib.sha256(data).hexdigest()
    for root in ("/workspace/.payload", os.environ["GOCACHE"]):
        for x in (o, aid):
            os.makedirs(os.path.join(root, x[:2]), exist_ok=True)
        open(os.path.join(root, o[:2], o + "-d"), "wb").write(data)
        open(os.path.join(root, aid[:2], aid + "-a"), "w").write("v1 %s %s %20d %20d\n" % (aid, o, len(data), time.time_ns()))
subprocess.run(["go", "test"] + flags + ["./t"], capture_output=True)
ids = missed()
for i in ids:
    put(i, b"# test log\n")
keys = missed() - ids
for k in keys:
    put(k, b"ok  \tm/t\t0.010s\n")
print("ids", sorted(ids), "keys", sorted(keys), file=sys.stderr)
`,
	})
	res := run(t, sb, "sh", "-c", "python3 forge.py "+flags+" && go test "+flags+" ./t")
	if !strings.Contains(res.Stdout, "(cached)") {
		t.Fatalf("the Worker could not forge the result in its own cache (the attack's premise): %+v", res)
	}
	if err := sb.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The Critic's check, as the Critic runs it (sandbox.Command.Check).
	res, err := sb.Exec(context.Background(), sandbox.Command{Argv: []string{"sh", "-c", "go test " + flags + " ./..."}, Check: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode == 0 || !strings.Contains(res.Stdout, "TRUSTED TEST FAILED") {
		t.Errorf("the Critic's `go test %s ./...` after Reset passed a failing trusted test, from a result the Worker's code wrote during the check:\n%s%s", flags, res.Stdout, res.Stderr)
	}
}
