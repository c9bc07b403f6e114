package landlock_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trioagent/trio/internal/sandboxtest"
	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/sandbox/internal/confine"
	"github.com/trioagent/trio/sandbox/landlock"
	"github.com/trioagent/trio/tools"
)

// childEnv carries, to a test re-run as nobody, the folder that user
// owns; its presence says "this is the re-run".
const childEnv = "TRIO_LANDLOCK_TEST_BASE"

const shippedPolicyFile = "../../configs/policy.unattended.yaml"

// requireLandlock skips where the kernel has no Landlock, and fails
// instead under CI=true, where it must work.
func requireLandlock(t testing.TB) {
	t.Helper()
	if err := landlock.Available(context.Background()); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and the landlock sandbox is unavailable: %v", err)
		}
		t.Skipf("landlock sandbox unavailable: %v", err)
	}
}

// asNobody re-runs the test named name as nobody (uid 65534) when this
// process is root, after running it here as root (both must pass), and
// reports whether this is root's run. Not root: false.
func asNobody(t *testing.T, name string) {
	t.Helper()
	asNobodyWith(t, name, nil)
}

// asNobodyWith is asNobody that first lets prepare put what the re-run
// needs in its base folder (as root; the re-run finds the folder in
// $TRIO_LANDLOCK_TEST_BASE).
func asNobodyWith(t *testing.T, name string, prepare func(t *testing.T, base string)) {
	t.Helper()
	if os.Getuid() != 0 {
		return
	}
	t.Run("as-nobody", func(t *testing.T) {
		setpriv, err := exec.LookPath("setpriv")
		if err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("CI=true, running as root, and setpriv is missing (util-linux): %v", err)
			}
			t.Skipf("running as root without setpriv: %v", err)
		}
		base, err := os.MkdirTemp("/tmp", "trio-landlock-test-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(base) })
		for _, f := range []func() error{func() error { return os.Chmod(base, 0o755) }, func() error { return os.Chown(base, 65534, 65534) }} {
			if err := f(); err != nil {
				t.Fatal(err)
			}
		}
		self, _ := os.Executable()
		bin := filepath.Join(base, "landlock.test")
		copyFile(t, self, bin, 0o755)
		copyFile(t, shippedPolicyFile, filepath.Join(base, "policy.yaml"), 0o644)
		if prepare != nil {
			prepare(t, base)
		}
		cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--",
			bin, "-test.run=^"+name+"$", "-test.v", "-test.count=1")
		cmd.Dir = base
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "CI=" + os.Getenv("CI"), "TMPDIR=" + base, "HOME=" + base,
			childEnv + "=" + base, sandbox.WarmCacheEnv + "=none", sandboxtest.PolicyEnv + "=" + filepath.Join(base, "policy.yaml")}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err = cmd.Run()
		for _, line := range strings.Split(strings.TrimRight(out.String(), "\n"), "\n") {
			t.Log("nobody| " + line)
		}
		if err != nil {
			t.Fatalf("%s as nobody: %v", name, err)
		}
		if strings.Contains(out.String(), "--- SKIP: "+name+" (") {
			t.Fatal("skipped as nobody")
		}
	})
}

func copyFile(t testing.TB, src, dst string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

func open(t testing.TB, dir string, rules sandbox.PathRules, limits sandbox.Limits) sandbox.Sandbox {
	sb, err := landlock.New(context.Background(), sandbox.RunSpec{Workspace: dir, Limits: limits, PathRules: rules, Settings: landlock.Config{WarmCache: "none"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	return sb
}

// TestSharedEffects runs the effect table every isolating kind passes
// (internal/sandboxtest) on workspaces without denied paths, as root and
// as nobody. The two rows about a denied file present are
// TestDeniedPathRefused's: this kind runs nothing there.
func TestSharedEffects(t *testing.T) {
	requireLandlock(t)
	sandboxtest.RunWith(t, open, sandboxtest.Options{WithoutDenied: true, Skip: map[string]string{
		"canary-secret-unreadable": "a workspace holding .env is refused (TestDeniedPathRefused)",
		"git-unchanged":            "a workspace holding .git is refused (TestDeniedPathRefused)",
		"background-process-dead-after-command": "its beacon is a new file at the workspace's root, which holds read-only tests/ and vendor/ " +
			"and so takes no new entries here (Landlock grants entry by entry): TestBackgroundKilled is this row in a subfolder",
		"disk-limit-honoured": "its file is new at the workspace's root (see above): TestDiskLimit is this row in a subfolder",
	}})
	if os.Getenv(childEnv) == "" {
		asNobody(t, "TestSharedEffects")
	}
}

// A workspace holding a path the policy denies is refused before any
// command runs, with the path named; so is one where it appears later
// (put there by the host), at the next Exec, and the canary never
// reaches an output.
func TestDeniedPathRefused(t *testing.T) {
	requireLandlock(t)
	p := sandboxtest.ShippedPolicy(t)
	dir := sandboxtest.Workspace(t)
	sandboxtest.WriteFiles(t, dir, map[string]string{".env": "KEY=" + sandboxtest.Canary + "\n", "app.py": "print(1)\n"})
	_, err := landlock.New(context.Background(), sandbox.RunSpec{Workspace: dir, PathRules: tools.PathRules(p), Settings: landlock.Config{WarmCache: "none"}})
	if !errors.Is(err, landlock.ErrDeniedPath) || !strings.Contains(err.Error(), ".env") {
		t.Fatalf("New on a workspace holding .env: %v, want ErrDeniedPath naming .env", err)
	}
	os.Remove(filepath.Join(dir, ".env"))
	sb := open(t, dir, tools.PathRules(p), sandboxtest.Limits(p))
	sandboxtest.WriteFiles(t, dir, map[string]string{"sub/.env": "KEY=" + sandboxtest.Canary + "\n"})
	res, err := sb.Exec(context.Background(), sandbox.Command{Argv: []string{"cat", "sub/.env"}})
	if !errors.Is(err, landlock.ErrDeniedPath) || strings.Contains(res.Stdout+res.Stderr, sandboxtest.Canary) {
		t.Fatalf("Exec with sub/.env present: %+v %v, want ErrDeniedPath and no canary", res, err)
	}
	if os.Getenv(childEnv) == "" {
		asNobody(t, "TestDeniedPathRefused")
	}
}

// The background-process row of the table, its beacon in a folder the
// command may write: a setsid grandchild dies with its command.
func TestBackgroundKilled(t *testing.T) {
	requireLandlock(t)
	dir := sandboxtest.Workspace(t)
	sb := open(t, dir, nil, sandbox.Limits{Timeout: time.Minute})
	res, err := sb.Exec(context.Background(), sandbox.Command{Argv: []string{"python3", "-c", `import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        while True:
            with open("beacon", "a") as f: f.write("x")
            time.sleep(0.02)
    os._exit(0)
time.sleep(0.3)
`}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%+v %v", res, err)
	}
	size := func() int64 {
		st, err := os.Stat(filepath.Join(dir, "beacon"))
		if err != nil {
			return -1
		}
		return st.Size()
	}
	a := size()
	if a <= 0 {
		t.Fatal("the background child never wrote its beacon: the test proves nothing")
	}
	// The command has returned: every process of it is dead and reaped,
	// so the beacon cannot grow; a second command is the witness that
	// time passed on the helper's side too.
	sb.Exec(context.Background(), sandbox.Command{Argv: []string{"sleep", "0.5"}})
	if b := size(); b != a {
		t.Fatalf("a background process kept writing after its command ended (%d -> %d bytes)", a, b)
	}
	if os.Getenv(childEnv) == "" {
		asNobody(t, "TestBackgroundKilled")
	}
}

// TestSupervisorOutOfReach: a command that sends SIGKILL to every thread
// of its helper (tgkill, which a kill of the process would not try) gets
// EPERM from Landlock's signal scope, so a setsid background process it
// left still dies when it ends. This is why the command runs in a domain
// no thread of its supervisor is in (two stages, see package confine).
func TestSupervisorOutOfReach(t *testing.T) {
	requireLandlock(t)
	if abi := confine.ABI(); abi < 6 {
		t.Skipf("Landlock ABI %d scopes no signals (6 needed); the kind says so in NotEnforced", abi)
	}
	dir := sandboxtest.Workspace(t)
	sb := open(t, dir, nil, sandbox.Limits{Timeout: time.Minute})
	res, err := sb.Exec(context.Background(), sandbox.Command{Argv: []string{"python3", "-c", `import ctypes, os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        while True:
            with open("beacon", "a") as f: f.write("x")
            time.sleep(0.02)
    os._exit(0)
while not os.path.exists("beacon"): time.sleep(0.01)
libc = ctypes.CDLL(None, use_errno=True)
ppid, killed, refused = os.getppid(), 0, 0
for tid in os.listdir("/proc/%d/task" % ppid):
    if libc.tgkill(ppid, int(tid), 9) == 0: killed += 1
    else: refused += 1
print("killed", killed, "refused", refused)
`}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%+v %v", res, err)
	}
	if !strings.Contains(res.Stdout, "killed 0 refused") || strings.Contains(res.Stdout, "refused 0") {
		t.Fatalf("the command reached its supervisor's threads: %q", res.Stdout)
	}
	size := func() int64 {
		st, err := os.Stat(filepath.Join(dir, "beacon"))
		if err != nil {
			return -1
		}
		return st.Size()
	}
	a := size()
	sb.Exec(context.Background(), sandbox.Command{Argv: []string{"sleep", "0.5"}})
	if b := size(); b != a {
		t.Fatalf("a background process kept writing after its command ended (%d -> %d bytes)", a, b)
	}
	if os.Getenv(childEnv) == "" {
		asNobody(t, "TestSupervisorOutOfReach")
	}
}

// The disk row of the table: a 400 MiB file against a 64 MiB limit stops
// at the limit and the result says so.
func TestDiskLimit(t *testing.T) {
	requireLandlock(t)
	dir := sandboxtest.Workspace(t)
	sb := open(t, dir, nil, sandbox.Limits{Timeout: time.Minute, Disk: 64 << 20})
	res, err := sb.Exec(context.Background(), sandbox.Command{Argv: []string{"python3", "-c", `import os
with open("big.bin", "wb") as f:
    for i in range(400):
        f.write(os.urandom(1 << 20)); f.flush()
`}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.DiskExceeded || !strings.Contains(res.Stderr, "disk limit") {
		t.Errorf("the result does not say the disk limit stopped it: %+v", res)
	}
	if st, err := os.Stat(filepath.Join(dir, "big.bin")); err == nil && st.Size() > 64<<20 {
		t.Fatalf("big.bin grew to %d MiB past a 64 MiB limit", st.Size()>>20)
	}
	if os.Getenv(childEnv) == "" {
		asNobody(t, "TestDiskLimit")
	}
}
