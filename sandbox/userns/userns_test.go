package userns_test

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/sandbox/userns"
)

// open returns a sandbox on a fresh workspace with files in it.
func open(t *testing.T, spec sandbox.RunSpec, files map[string]string) (*userns.Sandbox, string) {
	t.Helper()
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	writeTree(t, ws, files)
	spec.Workspace = ws
	if spec.Limits.Timeout == 0 {
		// Only a bound on a hung command, never a verdict: go build -a
		// under the race detector on 2 loaded cores took over 30 s.
		spec.Limits.Timeout = 10 * time.Minute
	}
	sb, err := userns.New(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	return sb, ws
}

func run(t *testing.T, sb sandbox.Sandbox, argv ...string) sandbox.Result {
	t.Helper()
	res, err := sb.Exec(context.Background(), sandbox.Command{Argv: argv})
	if err != nil {
		t.Fatalf("%q: %v", argv, err)
	}
	return res
}

// TestSeccomp calls each system call the filter must refuse, from a
// program in the sandbox, and expects the kernel's refusal: the call did
// not happen. unshare and clone with CLONE_NEWUSER would otherwise fail
// with ENOSPC (no user namespace inside), keyctl and ptrace(TRACEME) would
// succeed.
func TestSeccomp(t *testing.T) {
	if asOrdinaryUser(t, "TestSeccomp") {
		return
	}
	requireUserns(t)
	sb, _ := open(t, sandbox.RunSpec{}, map[string]string{"sys.py": `
import ctypes, errno, sys
libc = ctypes.CDLL(None, use_errno=True)
nr, args, want = int(sys.argv[1]), [int(a) for a in sys.argv[2:-1]], sys.argv[-1]
r = libc.syscall(nr, *[ctypes.c_long(a) for a in args])
e = ctypes.get_errno()
print(r, errno.errorcode.get(e, e))
sys.exit(0 if r == -1 and errno.errorcode.get(e) == want else 1)
`})
	const cloneNewUser, cloneNewNS = "268435456", "131072" // CLONE_NEWUSER, CLONE_NEWNS
	tests := []struct {
		call string
		argv []string // x86_64 numbers, arguments, wanted errno
	}{
		{"unshare(CLONE_NEWUSER)", []string{"272", cloneNewUser, "EPERM"}},
		{"unshare(CLONE_NEWNS)", []string{"272", cloneNewNS, "EPERM"}},
		{"clone(CLONE_NEWUSER)", []string{"56", cloneNewUser, "0", "0", "0", "0", "EPERM"}},
		{"clone3 (flags out of the filter's sight)", []string{"435", "0", "0", "ENOSYS"}},
		{"setns", []string{"308", "0", "0", "EPERM"}},
		{"mount", []string{"165", "0", "0", "0", "0", "0", "EPERM"}},
		{"keyctl(KEYCTL_GET_KEYRING_ID)", []string{"250", "0", "-3", "0", "EPERM"}},
		{"add_key", []string{"248", "0", "0", "0", "0", "0", "EPERM"}},
		{"bpf", []string{"321", "0", "0", "0", "EPERM"}},
		{"perf_event_open", []string{"298", "0", "0", "-1", "-1", "0", "EPERM"}},
		{"ptrace(PTRACE_TRACEME)", []string{"101", "0", "0", "0", "0", "EPERM"}},
		{"process_vm_readv", []string{"310", "1", "0", "0", "0", "0", "0", "EPERM"}},
		{"kexec_load", []string{"246", "0", "0", "0", "0", "EPERM"}},
		{"init_module", []string{"175", "0", "0", "0", "EPERM"}},
		{"io_uring_setup", []string{"425", "1", "0", "EPERM"}},
		{"open_by_handle_at", []string{"304", "0", "0", "0", "EPERM"}},
	}
	if arch := runtimeArch(); arch != "x86_64" {
		t.Skipf("system call numbers are x86_64's; this is %s", arch)
	}
	for _, tt := range tests {
		t.Run(tt.call, func(t *testing.T) {
			res := run(t, sb, append([]string{"python3", "sys.py"}, tt.argv...)...)
			if res.ExitCode != 0 {
				t.Errorf("%s: got %s%s, want %s", tt.call, res.Stdout, res.Stderr, tt.argv[len(tt.argv)-1])
			}
		})
	}
	// An i386 system call (int 0x80) is not checked against x86_64
	// numbers: the process dies instead. Which signal kills it depends
	// on the kernel: seccomp's SIGSYS where the filter sees the call,
	// SIGSEGV where int 0x80 faults before it (as on CI's kernels). Any
	// death in which the call never returned holds.
	res := run(t, sb, "python3", "-c", `
import ctypes, mmap
code = bytes([0xb8, 0x1a, 0x00, 0x00, 0x00, 0xcd, 0x80, 0xc3])  # mov eax, 26 (i386 ptrace); int 0x80; ret
m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
m.write(code)
f = ctypes.CFUNCTYPE(ctypes.c_long)(ctypes.addressof(ctypes.c_char.from_buffer(m)))
print("returned", f())
`)
	if res.ExitCode <= 128 || strings.Contains(res.Stdout, "returned") {
		t.Errorf("an i386 system call was not fatal: exit %d, %s%s", res.ExitCode, res.Stdout, res.Stderr)
	}
}

func runtimeArch() string {
	out, err := exec.Command("uname", "-m").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// TestLayoutFollowsRules shows that the rules are planned again before
// every command: a secret a command makes is hidden from the next one, and
// a folder that becomes read-only (the tests folder, once the plan names
// it) is from then on.
func TestLayoutFollowsRules(t *testing.T) {
	if asOrdinaryUser(t, "TestLayoutFollowsRules") {
		return
	}
	requireUserns(t)
	var testsKnown atomic.Bool
	rules := func(rel string) sandbox.Access {
		switch {
		case rel == ".env":
			return sandbox.Hidden
		case testsKnown.Load() && (rel == "tests" || strings.HasPrefix(rel, "tests/")):
			return sandbox.ReadOnly
		}
		return sandbox.Writable
	}
	sb, ws := open(t, sandbox.RunSpec{PathRules: rules}, map[string]string{"tests/test_a.py": "ok\n"})
	run(t, sb, "sh", "-c", "echo SECRET-made-by-a-command > .env")
	if res := run(t, sb, "cat", ".env"); strings.Contains(res.Stdout, "SECRET") {
		t.Errorf("the next command read the .env a command made: %q", res.Stdout)
	}
	if res := run(t, sb, "sh", "-c", "echo changed > tests/test_a.py"); res.ExitCode != 0 {
		t.Fatalf("tests folder not writable before its rule applied: %s", res.Stderr)
	}
	testsKnown.Store(true)
	run(t, sb, "sh", "-c", "echo tampered > tests/test_a.py; echo new > tests/test_b.py")
	if b, _ := os.ReadFile(filepath.Join(ws, "tests", "test_a.py")); string(b) != "changed\n" {
		t.Errorf("tests/test_a.py = %q after its folder became read-only", b)
	}
	if _, err := os.Stat(filepath.Join(ws, "tests", "test_b.py")); err == nil {
		t.Error("a command added a file to the read-only tests folder")
	}
}

// TestTCP: without DenyTCP a test may serve and connect on the sandbox's
// own loopback (httptest does); with it, Landlock refuses both.
func TestTCP(t *testing.T) {
	if asOrdinaryUser(t, "TestTCP") {
		return
	}
	requireUserns(t)
	files := map[string]string{"srv.py": `
import socket, threading
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
threading.Thread(target=lambda: s.accept()[0].sendall(b"pong"), daemon=True).start()
c = socket.create_connection(s.getsockname(), timeout=5); print(c.recv(4).decode())
`}
	for _, deny := range []bool{false, true} {
		sb, _ := open(t, sandbox.RunSpec{Settings: userns.Config{DenyTCP: deny}}, files)
		res := run(t, sb, "python3", "srv.py")
		if got := strings.Contains(res.Stdout, "pong"); got == deny {
			t.Errorf("DenyTCP=%v: loopback server answered=%v: %s%s", deny, got, res.Stdout, res.Stderr)
		}
	}
}

// TestLimits: a fork bomb stops at the pids limit, an allocation past the
// memory limit fails, output is capped, and a timeout or a cancelled
// context kills the command.
func TestLimits(t *testing.T) {
	if asOrdinaryUser(t, "TestLimits") {
		return
	}
	requireUserns(t)
	sb, _ := open(t, sandbox.RunSpec{Limits: sandbox.Limits{Pids: 64, Memory: 256 << 20, Output: 1 << 10, Timeout: 2 * time.Second}}, nil)
	t.Run("pids", func(t *testing.T) {
		res := run(t, sb, "python3", "-c", `
import os, time
n = 0
try:
    while n < 1000:
        if os.fork() == 0:
            time.sleep(5); os._exit(0)
        n += 1
except OSError as e:
    print("stopped", e)
print("forked", n)
`)
		var n int
		for _, line := range strings.Split(res.Stdout, "\n") {
			if strings.HasPrefix(line, "forked ") {
				n = atoi(strings.TrimPrefix(line, "forked "))
			}
		}
		if n == 0 || n >= 64 {
			t.Errorf("forked %d processes with a limit of 64: %s%s", n, res.Stdout, res.Stderr)
		}
	})
	t.Run("memory", func(t *testing.T) {
		res := run(t, sb, "python3", "-c", "b = bytearray(512 << 20); print('allocated')")
		if res.ExitCode == 0 || strings.Contains(res.Stdout, "allocated") {
			t.Errorf("allocated 512MiB with a limit of 256MiB: %+v", res)
		}
	})
	t.Run("output", func(t *testing.T) {
		res := run(t, sb, "head", "-c", "1000000", "/dev/zero")
		if !res.StdoutTruncated || len(res.Stdout) > 2<<10 {
			t.Errorf("1MB of output kept as %d bytes, truncated=%v", len(res.Stdout), res.StdoutTruncated)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		res := run(t, sb, "sleep", "30")
		if !res.TimedOut || res.Duration > 10*time.Second {
			t.Errorf("sleep 30 with a 2s timeout: %+v", res)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := sb.Exec(ctx, sandbox.Command{Argv: []string{"sleep", "30"}})
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
			t.Errorf("cancelled sleep 30: %v after %s", err, time.Since(start))
		}
	})
}

func atoi(s string) int {
	n := 0
	for _, c := range strings.TrimSpace(s) {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// TestWorkdir: a working folder that leads out is refused; one that does
// not exist is the command's problem.
func TestWorkdir(t *testing.T) {
	if asOrdinaryUser(t, "TestWorkdir") {
		return
	}
	requireUserns(t)
	sb, ws := open(t, sandbox.RunSpec{}, map[string]string{"app/x": ""})
	if err := os.Symlink(t.TempDir(), filepath.Join(ws, "out")); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"..", "../x", "/etc", "out"} {
		_, err := sb.Exec(context.Background(), sandbox.Command{Argv: []string{"pwd"}, Dir: dir})
		if !errors.Is(err, sandbox.ErrOutsideWorkspace) {
			t.Errorf("dir %q: err %v, want ErrOutsideWorkspace", dir, err)
		}
	}
	res, err := sb.Exec(context.Background(), sandbox.Command{Argv: []string{"pwd"}, Dir: "app"})
	if err != nil || strings.TrimSpace(res.Stdout) != "/workspace/app" {
		t.Errorf("dir app: %q, %v", res.Stdout, err)
	}
	res, err = sb.Exec(context.Background(), sandbox.Command{Argv: []string{"pwd"}, Dir: "missing"})
	if err != nil || res.ExitCode != 127 {
		t.Errorf("dir missing: %+v, %v; want exit 127", res, err)
	}
}

// TestClose: nothing of the sandbox is left on disk, and Exec refuses.
func TestClose(t *testing.T) {
	if asOrdinaryUser(t, "TestClose") {
		return
	}
	requireUserns(t)
	state := t.TempDir()
	sb, _ := open(t, sandbox.RunSpec{Settings: userns.Config{StateDir: state}}, nil)
	run(t, sb, "sh", "-c", "mkdir -p /cache/go-build/x && echo x > /cache/go-build/x/y && chmod -R a-w /cache/go-build/x")
	if err := sb.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(state); len(left) != 0 {
		t.Errorf("Close left %v in the state folder", left)
	}
	if _, err := sb.Exec(context.Background(), sandbox.Command{Argv: []string{"true"}}); !errors.Is(err, sandbox.ErrClosed) {
		t.Errorf("Exec after Close: %v, want ErrClosed", err)
	}
}

// TestUnavailable: a missing bwrap, and user namespaces switched off (in a
// throwaway user namespace whose limit is 0, which is what bwrap's
// --disable-userns sets), both give ErrUnavailable with a way forward.
func TestUnavailable(t *testing.T) {
	_, err := userns.New(context.Background(), sandbox.RunSpec{Workspace: t.TempDir(), Settings: userns.Config{Bwrap: "/nonexistent/bwrap"}})
	if !errors.Is(err, userns.ErrUnavailable) || !strings.Contains(err.Error(), "apt-get install bubblewrap") {
		t.Errorf("missing bwrap: %v", err)
	}
	if os.Getenv("TRIO_USERNS_DISABLED") == "1" {
		err := userns.Available(context.Background(), "")
		if !errors.Is(err, userns.ErrUnavailable) || !strings.Contains(err.Error(), "user namespaces") {
			t.Fatalf("user namespaces disabled: Available = %v", err)
		}
		t.Logf("user namespaces disabled: %v", err)
		return
	}
	requireUserns(t)
	bwrap, _ := exec.LookPath("bwrap")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bwrap, "--unshare-user", "--disable-userns", "--dev-bind", "/", "/", "--",
		self, "-test.run=^TestUnavailable$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "TRIO_USERNS_DISABLED=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "user namespaces disabled:") {
		t.Errorf("with user namespaces disabled: %v\n%s", err, out)
	}
}

// TestLandlock: where the mounts alone would let a command write (the
// tmpfs root bwrap builds, its /etc, the folder of the init helper),
// Landlock refuses; the writable folders stay writable.
func TestLandlock(t *testing.T) {
	if asOrdinaryUser(t, "TestLandlock") {
		return
	}
	requireUserns(t)
	sb, _ := open(t, sandbox.RunSpec{}, nil)
	for _, p := range []string{"/planted", "/etc/planted", "/.trio/planted", "/home/planted"} {
		if res := run(t, sb, "touch", p); res.ExitCode == 0 {
			t.Errorf("touch %s succeeded outside the writable folders", p)
		}
	}
	for _, p := range []string{"/workspace/f", "/tmp/f", "/home/trio/f", "/cache/f", "/dev/null"} {
		if res := run(t, sb, "sh", "-c", "echo x > "+p); res.ExitCode != 0 {
			t.Errorf("write %s: %s", p, res.Stderr)
		}
	}
}

// TestLeftovers: the state folder of a sandbox whose process was killed
// (kill -9, no Close) is removed by the next New; a live one's is not.
func TestLeftovers(t *testing.T) {
	if asOrdinaryUser(t, "TestLeftovers") {
		return
	}
	requireUserns(t)
	state := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	gone := filepath.Join(state, "trio-userns-gone")
	writeTree(t, gone, map[string]string{"owner": host + "/" + itoa(dead.Process.Pid) + "/1\n", "cache/go-build/x": "x"})
	os.Chmod(filepath.Join(gone, "cache", "go-build"), 0o555)
	open(t, sandbox.RunSpec{Settings: userns.Config{StateDir: state}}, nil)
	if _, err := os.Stat(gone); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dead sandbox's state folder is still there: %v", err)
	}
	open(t, sandbox.RunSpec{Settings: userns.Config{StateDir: state}}, nil)
	if left, _ := filepath.Glob(filepath.Join(state, "trio-userns-*")); len(left) != 2 {
		t.Errorf("state folders %v, want the two live sandboxes'", left)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// killedEnv names the workspace of TestKilledRun's child, the process that
// is killed with -9 while its command runs.
const killedEnv = "TRIO_USERNS_KILLED_WS"

// TestKilledRun: when the process that runs a command is killed with -9,
// the command and its background children die with it (nothing acts
// later), and the next sandbox on the host removes what the dead one left:
// its state folder and its trusted builds beside the warm base.
func TestKilledRun(t *testing.T) {
	if ws := os.Getenv(killedEnv); ws != "" {
		// The child: run a command that outlives us if it can.
		sb, err := userns.New(context.Background(), sandbox.RunSpec{Workspace: ws, Settings: userns.Config{StateDir: filepath.Join(ws, "..", "state"), WarmCache: os.Getenv(killedEnv + "_WARM")}})
		if err != nil {
			t.Fatal(err)
		}
		sb.Exec(context.Background(), sandbox.Command{Argv: []string{"python3", "-c", `
import os, time
if os.fork() == 0:
    os.setsid()
    time.sleep(3)
    open("ghost", "w").write("I outlived a killed run\n")
    os._exit(0)
open("started", "w").write("x")
time.sleep(60)
`}})
		return
	}
	if asOrdinaryUser(t, "TestKilledRun") {
		return
	}
	requireUserns(t)
	base, warm := t.TempDir(), warmFor(t)
	ws, state := filepath.Join(base, "ws"), filepath.Join(base, "state")
	for _, d := range []string{ws, state} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command(self, "-test.run=^TestKilledRun$", "-test.count=1")
	child.Env = append(os.Environ(), killedEnv+"="+ws, killedEnv+"_WARM="+warm)
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(ws, "started")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			child.Process.Kill()
			t.Fatal("the child's command did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	child.Process.Kill() // SIGKILL: no Close, no cleanup
	child.Wait()
	time.Sleep(4 * time.Second)
	if _, err := os.Stat(filepath.Join(ws, "ghost")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a process of the killed run acted after it died (stat: %v)", err)
	}
	left, _ := filepath.Glob(filepath.Join(state, "trio-userns-*"))
	if len(left) != 1 {
		t.Fatalf("state folders after kill -9: %v, want the dead sandbox's", left)
	}
	dead := filepath.Join(warm, "runs", filepath.Base(left[0]))
	if _, err := os.Stat(filepath.Join(dead, "go-build")); err != nil {
		t.Fatalf("the dead sandbox's trusted builds: %v", err)
	}
	sb, err := userns.New(context.Background(), sandbox.RunSpec{Workspace: ws, Settings: userns.Config{StateDir: state, WarmCache: warm}})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if left, _ := filepath.Glob(filepath.Join(state, "trio-userns-*")); len(left) != 1 {
		t.Errorf("state folders after the next New: %v, want only its own", left)
	}
	if _, err := os.Stat(dead); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dead sandbox's trusted builds are still there: %v", err)
	}
}

// TestDiskManyEmptyFiles: empty files take no blocks but inodes; they
// count against the disk limit too.
func TestDiskManyEmptyFiles(t *testing.T) {
	if asOrdinaryUser(t, "TestDiskManyEmptyFiles") {
		return
	}
	requireUserns(t)
	sb, ws := open(t, sandbox.RunSpec{Limits: sandbox.Limits{Disk: 8 << 20, Timeout: 60 * time.Second}}, nil)
	res := run(t, sb, "python3", "-c", `
import os
os.mkdir("many")
for i in range(200000):
    open("many/%d" % i, "w").close()
print("made all")
`)
	n, _ := os.ReadDir(filepath.Join(ws, "many"))
	// Uncounted, the 200,000 empty files would all be made. How far past
	// the limit the command gets depends on the machine's load (the watch
	// polls less often as its walk slows): about 2,200 files on a quiet
	// machine, 29,250 once in CI with other packages' tests running.
	if !res.DiskExceeded || strings.Contains(res.Stdout, "made all") || len(n) > 100000 {
		t.Errorf("made %d empty files against an 8 MiB limit (%d entries' worth): exceeded=%v %s", len(n), (8<<20)/4096, res.DiskExceeded, res.Stdout)
	}
}

// TestNetwork: only Limits.Network gives commands the host's network; by
// default a listener on the host's loopback is out of reach.
func TestNetwork(t *testing.T) {
	if asOrdinaryUser(t, "TestNetwork") {
		return
	}
	requireUserns(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var accepted atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	connect := []string{"python3", "-c", "import socket; socket.create_connection(('127.0.0.1', " + itoa(l.Addr().(*net.TCPAddr).Port) + "), timeout=5); print('connected')"}
	for _, network := range []bool{false, true} {
		sb, _ := open(t, sandbox.RunSpec{Limits: sandbox.Limits{Network: network}}, nil)
		before := accepted.Load()
		res := run(t, sb, connect...)
		time.Sleep(100 * time.Millisecond)
		if got := accepted.Load() > before; got != network {
			t.Errorf("Network=%v: the host's listener accepted=%v: %s%s", network, got, res.Stdout, res.Stderr)
		}
	}
}
