package agent_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/internal/sandboxtest"
	"github.com/trioagent/trio/sandbox"
)

// noUsernsEnv marks the re-run of TestAutoWithoutUserNamespaces that
// runs under the seccomp filter; its value is the folder the re-run may
// use ("-" for none).
const noUsernsEnv = "TRIO_TEST_NO_USERNS"

// TestAutoWithoutUserNamespaces is the machine Docker's default seccomp
// profile makes (and an AppArmor-restricted Ubuntu): no user namespace
// can be made, so bubblewrap cannot run, and no containerd answers. The
// test re-runs itself under a seccomp filter that refuses unshare and
// clone with CLONE_NEWUSER (EPERM) and clone3 (ENOSYS, as Docker's
// profile does), as root and as nobody; there auto must choose the
// landlock kind without asking anyone, and the landlock kind must pass
// the shared effect table as it does elsewhere.
func TestAutoWithoutUserNamespaces(t *testing.T) {
	if v := os.Getenv(noUsernsEnv); v != "" {
		autoWithoutUserns(t)
		return
	}
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	_, file, _, _ := runtime.Caller(0)
	pol := filepath.Join(filepath.Dir(file), "..", "configs", "policy.unattended.yaml")
	rerun := func(t *testing.T, prefix []string, bin, dir string, env []string) {
		argv := append(prefix, bin, "-test.run=^TestAutoWithoutUserNamespaces$", "-test.v", "-test.count=1")
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = dir
		cmd.Env = append(env, "PATH="+os.Getenv("PATH"), "CI="+os.Getenv("CI"),
			// No containerd: the address names nothing.
			"TRIO_CONTAINERD_ADDRESS="+filepath.Join(dir, "no-containerd.sock"),
			sandbox.WarmCacheEnv+"=none")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		for _, line := range strings.Split(strings.TrimRight(out.String(), "\n"), "\n") {
			t.Log("| " + line)
		}
		if err != nil {
			t.Fatalf("the re-run without user namespaces: %v", err)
		}
		if strings.Contains(out.String(), "--- SKIP: TestAutoWithoutUserNamespaces ") || !strings.Contains(out.String(), "--- PASS: TestAutoWithoutUserNamespaces ") {
			t.Fatal("the re-run did not pass")
		}
	}
	t.Run("this-user", func(t *testing.T) {
		dir := t.TempDir()
		rerun(t, nil, self, dir, []string{noUsernsEnv + "=-", "HOME=" + os.Getenv("HOME"), "TMPDIR=" + dir,
			sandboxtest.PolicyEnv + "=" + pol})
	})
	if os.Getuid() != 0 {
		return
	}
	t.Run("nobody", func(t *testing.T) {
		setpriv, err := exec.LookPath("setpriv")
		if err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("CI=true, running as root, and setpriv is missing (util-linux): %v", err)
			}
			t.Skipf("running as root without setpriv: %v", err)
		}
		base, err := os.MkdirTemp("/tmp", "trio-nouserns-test-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(base) })
		if err := os.Chmod(base, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(base, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		bin := filepath.Join(base, "agent.test")
		copyTo(t, self, bin, 0o755)
		copyTo(t, pol, filepath.Join(base, "policy.yaml"), 0o644)
		rerun(t, []string{setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--"}, bin, base,
			[]string{noUsernsEnv + "=" + base, "HOME=" + base, "TMPDIR=" + base, sandboxtest.PolicyEnv + "=" + filepath.Join(base, "policy.yaml")})
	})
}

// autoWithoutUserns is the re-run: it denies user namespaces to this
// process and everything it starts, then checks what auto chooses and
// what that kind enforces.
func autoWithoutUserns(t *testing.T) {
	denyUserNamespaces(t)
	// The filter holds: neither this process nor a program it starts
	// (bubblewrap) can make a user namespace.
	if err := unshareUser(); !errors.Is(err, unix.EPERM) {
		t.Fatalf("unshare(CLONE_NEWUSER) under the filter: %v, want EPERM", err)
	}
	if out, err := exec.Command("bwrap", "--unshare-user", "--ro-bind", "/", "/", "true").CombinedOutput(); err == nil {
		t.Fatalf("bwrap made a user namespace under the filter: %s", out)
	}
	ctx := context.Background()
	if err := sandbox.Available(ctx, agent.SandboxUserns, nil, "", nil); !errors.Is(err, sandbox.ErrUnavailable) {
		t.Fatalf("userns under the filter: %v, want ErrUnavailable", err)
	}
	// Unattended and with nobody to ask: auto must not need anyone.
	ch, err := agent.ChooseSandbox(ctx, agent.SandboxConfig{Kind: agent.SandboxAuto}, sandboxtest.ShippedPolicy(t), nil)
	if err != nil {
		t.Fatalf("auto without user namespaces: %v", err)
	}
	if ch.Config.Kind != agent.SandboxLandlock || ch.Fallback != nil {
		t.Fatalf("auto chose %q (fallback %v), want landlock", ch.Config.Kind, ch.Fallback)
	}
	open := func(t testing.TB, dir string, rules sandbox.PathRules, limits sandbox.Limits) sandbox.Sandbox {
		sb, err := agent.OpenSandbox(ctx, ch.Config, sandbox.RunSpec{Workspace: dir, Limits: limits, PathRules: rules})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sb.Close() })
		if got := sb.Info().Kind; got != agent.SandboxLandlock {
			t.Fatalf("opened %q, want landlock", got)
		}
		return sb
	}
	// The rows the landlock kind's own TestSharedEffects skips, for the
	// same reasons (its tests cover them in subfolders).
	sandboxtest.RunWith(t, open, sandboxtest.Options{WithoutDenied: true, Skip: map[string]string{
		"canary-secret-unreadable":              "a workspace holding .env is refused by the landlock kind",
		"git-unchanged":                         "a workspace holding .git is refused by the landlock kind",
		"background-process-dead-after-command": "new files at a root holding read-only tests/ are refused by Landlock (sandbox/landlock TestBackgroundKilled)",
		"disk-limit-honoured":                   "new files at a root holding read-only tests/ are refused by Landlock (sandbox/landlock TestDiskLimit)",
	}})
}

// denyUserNamespaces installs, on every thread of this process (and so
// on everything it starts), a seccomp filter that refuses unshare and
// clone with CLONE_NEWUSER with EPERM and clone3 with ENOSYS.
func denyUserNamespaces(t *testing.T) {
	t.Helper()
	const (
		ldNr   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq    = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jset   = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		ret    = unix.BPF_RET | unix.BPF_K
		argLow = 16 // seccomp_data.args[0], its low 32 bits on little-endian
	)
	if unix.SizeofPtr != 8 || !littleEndian() {
		t.Skip("the filter reads a 64-bit little-endian seccomp_data")
	}
	eperm := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	filter := []unix.SockFilter{
		{Code: ldNr, K: 0}, // 0: nr
		{Code: jeq, K: uint32(unix.SYS_CLONE3), Jt: 0, Jf: 1},        // 1
		{Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)}, // 2
		{Code: jeq, K: uint32(unix.SYS_UNSHARE), Jt: 1, Jf: 0},       // 3
		{Code: jeq, K: uint32(unix.SYS_CLONE), Jt: 0, Jf: 3},         // 4
		{Code: ldNr, K: argLow},                                      // 5: flags
		{Code: jset, K: unix.CLONE_NEWUSER, Jt: 0, Jf: 1},            // 6
		{Code: ret, K: eperm},                                        // 7
		{Code: ret, K: unix.SECCOMP_RET_ALLOW},                       // 8
	}
	if os.Getuid() != 0 {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog))); errno != 0 {
		t.Fatalf("seccomp: %v", errno)
	}
	runtime.KeepAlive(filter)
}

// unshareUser tries to make a user namespace on a thread of its own,
// which is discarded after.
func unshareUser() error {
	done := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with it
		done <- unix.Unshare(unix.CLONE_NEWUSER)
	}()
	return <-done
}

func littleEndian() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}

func copyTo(t *testing.T, src, dst string, mode os.FileMode) {
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
