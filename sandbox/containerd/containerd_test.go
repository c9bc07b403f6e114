package containerd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/moby/sys/mountinfo"

	"github.com/trioagent/trio/sandbox"
)

func TestExecBasics(t *testing.T) {
	t.Parallel()
	s := newSandbox(t, sandbox.RunSpec{})
	if err := os.MkdirAll(filepath.Join(s.cfg.Workspace, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		cmd        sandbox.Command
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{"echo", sandbox.Command{Argv: []string{"echo", "hi"}}, 0, "hi\n", ""},
		{"exit code and stderr", sandbox.Command{Argv: []string{"sh", "-c", "echo oops >&2; exit 3"}}, 3, "", "oops\n"},
		{"dir", sandbox.Command{Argv: []string{"pwd"}, Dir: "sub"}, 0, "/workspace/sub\n", ""},
		{"env added", sandbox.Command{Argv: []string{"sh", "-c", "echo $FOO"}, Env: []string{"FOO=bar"}}, 0, "bar\n", ""},
		{"env overrides", sandbox.Command{Argv: []string{"sh", "-c", "echo $TERM; env | grep -c ^TERM="}, Env: []string{"TERM=xterm"}}, 0, "xterm\n1\n", ""},
		{"not found", sandbox.Command{Argv: []string{"no-such-program-trio"}}, 127, "", "trio: cannot run no-such-program-trio"},
		{"no capabilities, no new privileges, seccomp", sandbox.Command{Argv: []string{"sh", "-c", "grep -E '^(Cap...|NoNewPrivs|Seccomp):' /proc/self/status"}}, 0,
			"CapInh:\t0000000000000000\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\nCapAmb:\t0000000000000000\nNoNewPrivs:\t1\nSeccomp:\t2\n", ""},
		{"go toolchain", sandbox.Command{Argv: []string{"go", "env", "GOROOT", "GOTOOLCHAIN"}}, 0, "/usr/local/go\nlocal\n", ""},
		{"no python bytecode", sandbox.Command{Argv: []string{"sh", "-c", "echo $PYTHONDONTWRITEBYTECODE"}}, 0, "1\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := s.Exec(context.Background(), tt.cmd)
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != tt.wantCode {
				t.Errorf("exit code %d, want %d (stderr %q)", res.ExitCode, tt.wantCode, res.Stderr)
			}
			if res.Stdout != tt.wantStdout {
				t.Errorf("stdout %q, want %q", res.Stdout, tt.wantStdout)
			}
			if !strings.HasPrefix(res.Stderr, tt.wantStderr) {
				t.Errorf("stderr %q, want prefix %q", res.Stderr, tt.wantStderr)
			}
		})
	}
}

func TestDirEscapeRejected(t *testing.T) {
	t.Parallel()
	s := newSandbox(t, sandbox.RunSpec{})
	for _, dir := range []string{"..", "../x", "/etc", "a/../../b"} {
		if _, err := s.Exec(context.Background(), sandbox.Command{Argv: []string{"true"}, Dir: dir}); !errors.Is(err, sandbox.ErrOutsideWorkspace) {
			t.Errorf("Dir %q: err = %v, want ErrOutsideWorkspace", dir, err)
		}
	}
}

func TestFileSystem(t *testing.T) {
	t.Parallel()
	s := newSandbox(t, sandbox.RunSpec{})
	res := run(t, s, "sh", "-c", "echo from-inside > /workspace/made.txt")
	if res.ExitCode != 0 {
		t.Fatalf("write to /workspace: %+v", res)
	}
	b, err := os.ReadFile(filepath.Join(s.cfg.Workspace, "made.txt"))
	if err != nil || string(b) != "from-inside\n" {
		t.Errorf("host sees %q, %v", b, err)
	}
	// The host writes as root; the sandbox user can still change it.
	if err := os.WriteFile(filepath.Join(s.cfg.Workspace, "host.txt"), []byte("host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if res := run(t, s, "sh", "-c", "echo changed >> /workspace/host.txt"); res.ExitCode != 0 {
		t.Errorf("append to a host-written file: %+v", res)
	}
	for _, target := range []string{"/usr/trio", "/usr/local/go/trio", "/etc/trio", "/trio", "/bin/trio", "/go/pkg/mod/trio", "/proc/sys/kernel/hostname"} {
		t.Run(target, func(t *testing.T) {
			res := run(t, s, "sh", "-c", "echo x > "+target)
			if res.ExitCode == 0 {
				t.Errorf("write to %s succeeded", target)
			}
			if _, err := os.Stat(target); err == nil && !strings.HasPrefix(target, "/proc") {
				t.Errorf("%s exists on the host", target)
			}
		})
	}
	for _, hidden := range []string{"/root", "/home/" + "nonexistent", "/var/lib", "/etc/shadow", "/etc/ssh"} {
		if res := run(t, s, "ls", hidden); res.ExitCode == 0 {
			t.Errorf("%s is visible inside: %q", hidden, res.Stdout)
		}
	}
	if res := run(t, s, "sh", "-c", "echo x > /tmp/t && echo y > $HOME/h && cat /tmp/t $HOME/h"); res.Stdout != "x\ny\n" {
		t.Errorf("tmpfs /tmp and HOME: %+v", res)
	}
}

func TestNoNetwork(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
			accepted <- struct{}{}
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	s := newSandbox(t, sandbox.RunSpec{})
	tests := []struct {
		name string
		argv []string
	}{
		{"tcp to host loopback", []string{"bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d", port)}},
		{"tcp to a public address", []string{"bash", "-c", "exec 3<>/dev/tcp/1.1.1.1/53"}},
		{"resolve a name", []string{"getent", "hosts", "example.com"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := s.Exec(context.Background(), sandbox.Command{Argv: tt.argv, Timeout: 20 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode == 0 {
				t.Errorf("%q succeeded: %+v", tt.argv, res)
			}
		})
	}
	select {
	case <-accepted:
		t.Error("the host listener accepted a connection from inside")
	default:
	}
	if res := run(t, s, "cat", "/proc/net/dev"); strings.Count(res.Stdout, ":") != 1 || !strings.Contains(res.Stdout, "lo:") {
		t.Errorf("interfaces other than lo:\n%s", res.Stdout)
	}
}

func TestMemoryHogIsOOMKilled(t *testing.T) {
	t.Parallel()
	s := newSandbox(t, sandbox.RunSpec{Limits: sandbox.Limits{Timeout: time.Minute, Memory: 128 << 20, Pids: 256}})
	// tail keeps the whole newline-free line in memory.
	res := run(t, s, "sh", "-c", "head -c 1000000000 /dev/zero | tail -n 1 | wc -c")
	if !res.OOMKilled {
		t.Errorf("OOMKilled = false: %+v", res)
	}
	if res := run(t, s, "echo", "alive"); res.Stdout != "alive\n" || res.OOMKilled {
		t.Errorf("after OOM: %+v", res)
	}
}

func TestForkBombStoppedByPidsLimit(t *testing.T) {
	t.Parallel()
	s := newSandbox(t, sandbox.RunSpec{Limits: sandbox.Limits{Timeout: 5 * time.Second, Memory: 256 << 20, Pids: 64}})
	start := time.Now()
	res, err := s.Exec(context.Background(), sandbox.Command{Argv: []string{"sh", "-c", "bomb() { bomb | bomb & }; bomb; sleep 3"}})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 30*time.Second {
		t.Errorf("fork bomb ran %v", el)
	}
	t.Logf("fork bomb: %+v", res)
	// The host answers, and the container is usable and quiet again.
	hostStart := time.Now()
	if err := exec.Command("true").Run(); err != nil || time.Since(hostStart) > 5*time.Second {
		t.Errorf("host unresponsive: %v after %v", err, time.Since(hostStart))
	}
	res = run(t, s, "sh", "-c", "ls /proc | grep -c '^[0-9]'")
	if res.ExitCode != 0 {
		t.Fatalf("after the bomb: %+v", res)
	}
	var n int
	fmt.Sscan(res.Stdout, &n)
	if n > 6 {
		t.Errorf("%d processes remain in the container after the bomb", n)
	}
}

func TestTimeoutKillsProcessTree(t *testing.T) {
	t.Parallel()
	s := newSandbox(t, sandbox.RunSpec{})
	start := time.Now()
	res, err := s.Exec(context.Background(), sandbox.Command{Argv: []string{"sh", "-c", "sleep 600 & sleep 600"}, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	el := time.Since(start)
	if !res.TimedOut || el > 10*time.Second {
		t.Errorf("TimedOut=%v after %v: %+v", res.TimedOut, el, res)
	}
	res = run(t, s, "sh", "-c", "for p in /proc/[0-9]*; do cat $p/comm; done")
	if strings.Contains(res.Stdout, "sleep\nsleep") || strings.Count(res.Stdout, "sleep") > 1 {
		t.Errorf("sleep processes survived the timeout:\n%s", res.Stdout)
	}
}

func TestContextCancel(t *testing.T) {
	t.Parallel()
	s := newSandbox(t, sandbox.RunSpec{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	res, err := s.Exec(ctx, sandbox.Command{Argv: []string{"sleep", "600"}})
	if !errors.Is(err, context.DeadlineExceeded) || res.TimedOut {
		t.Errorf("err = %v, TimedOut = %v", err, res.TimedOut)
	}
}

func TestOutputTruncatedWithBoundedMemory(t *testing.T) {
	s := newSandbox(t, sandbox.RunSpec{})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res := run(t, s, "head", "-c", "52428800", "/dev/zero")
	runtime.ReadMemStats(&after)
	if res.ExitCode != 0 || !res.StdoutTruncated || len(res.Stdout) > 64<<10+100 {
		t.Fatalf("exit=%d truncated=%v kept=%d", res.ExitCode, res.StdoutTruncated, len(res.Stdout))
	}
	if !strings.Contains(res.Stdout, "bytes truncated") {
		t.Error("no truncation marker")
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Errorf("allocated %d bytes for 50 MB of output", alloc)
	}
}

func TestNonRootAndNoHostEnv(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-fake-trio-test-key")
	t.Setenv("TRIO_TEST_SECRET", "fake-secret-value")
	s := newSandbox(t, sandbox.RunSpec{})
	if res := run(t, s, "id", "-u"); strings.TrimSpace(res.Stdout) == "0" || res.ExitCode != 0 {
		t.Errorf("id -u: %+v", res)
	}
	// init runs as a uid of its own: its environment is not even readable.
	if res := run(t, s, "cat", "/proc/1/environ"); res.ExitCode == 0 {
		t.Errorf("a command read init's environment: %+v", res)
	}
	for _, argv := range [][]string{{"env"}, {"sh", "-c", "cat /proc/self/environ"}} {
		res := run(t, s, argv...)
		if res.Stdout == "" {
			t.Errorf("%q printed nothing: %+v", argv, res)
		}
		for _, leak := range []string{"OPENAI_API_KEY", "sk-fake-trio-test-key", "fake-secret-value"} {
			if strings.Contains(res.Stdout, leak) {
				t.Errorf("%q shows %s", argv, leak)
			}
		}
	}
}

func TestConfiguredUID(t *testing.T) {
	t.Parallel()
	s := newSandbox(t, sandbox.RunSpec{Settings: Config{UID: 4242, GID: 4343}})
	if res := run(t, s, "id", "-u", "-g"); res.Stdout != "4242\n" && res.Stdout != "4242\n4343\n" {
		// id prints one line per flag only with coreutils >= 9; accept either.
		res2 := run(t, s, "sh", "-c", "id -u; id -g")
		if res2.Stdout != "4242\n4343\n" {
			t.Errorf("id: %q", res2.Stdout)
		}
	}
}

func TestWorkspaceOwnerUID(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	if err := os.Chown(ws, 1234, 1234); err != nil {
		t.Skipf("cannot chown: %v", err)
	}
	s := newSandbox(t, sandbox.RunSpec{Workspace: ws})
	res := run(t, s, "sh", "-c", "id -u; touch /workspace/f")
	if res.Stdout != "1234\n" || res.ExitCode != 0 {
		t.Errorf("%+v", res)
	}
}

// trioContainers lists the containers and tasks of runID in the namespace.
func trioContainers(t *testing.T, runID string) []string {
	t.Helper()
	addr := os.Getenv(AddressEnv)
	if addr == "" {
		addr = DefaultAddress
	}
	c, err := client.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := namespaces.WithNamespace(context.Background(), DefaultNamespace)
	cs, err := c.Containers(ctx, fmt.Sprintf(`labels.%q==%q`, LabelRun, runID))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, ctr := range cs {
		ids = append(ids, ctr.ID())
	}
	tasks, err := c.TaskService().List(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range tasks.Tasks {
		if tk.ID == "trio-"+runID {
			ids = append(ids, "task "+tk.ID)
		}
	}
	return ids
}

func TestCloseRemovesEverything(t *testing.T) {
	t.Parallel()
	requireContainerd(t)
	runID := fmt.Sprintf("close-%d", time.Now().UnixNano())
	s, err := New(context.Background(), sandbox.RunSpec{Workspace: t.TempDir(), RunID: runID})
	if err != nil {
		t.Fatal(err)
	}
	if got := trioContainers(t, runID); len(got) != 0 {
		t.Errorf("before the first command: %v", got)
	}
	// The first command starts the run's container, the second a spare.
	run(t, s, "true")
	run(t, s, "true")
	waitSpare(s)
	// The run's container, its task and the spare box's container.
	if got := trioContainers(t, runID); len(got) != 3 {
		t.Errorf("while open: %v", got)
	}
	state := s.stateDir
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := trioContainers(t, runID); len(got) != 0 {
		t.Errorf("after Close: %v remain", got)
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("state %s remains: %v", state, err)
	}
	if _, err := s.Exec(context.Background(), sandbox.Command{Argv: []string{"true"}}); !errors.Is(err, sandbox.ErrClosed) {
		t.Errorf("Exec after Close: %v", err)
	}
}

// TestCrashChild is the crashing process of TestLeftoversOfCrashedRunRemoved:
// it runs a command, or none with TRIO_TEST_CRASH_NOCMD set, and dies
// without Close.
func TestCrashChild(t *testing.T) {
	runID := os.Getenv("TRIO_TEST_CRASH_RUN")
	if runID == "" {
		t.Skip("helper process only")
	}
	s, err := New(context.Background(), sandbox.RunSpec{Workspace: os.Getenv("TRIO_TEST_CRASH_WS"), RunID: runID})
	if err != nil {
		fmt.Println("crash child:", err)
		os.Exit(2)
	}
	if os.Getenv("TRIO_TEST_CRASH_NOCMD") == "" {
		run(t, s, "true")
	}
	os.Exit(0) // no Close: a crash
}

// A run that dies without Close, after its first command or before it
// (the sandbox opened, the planner still thinking), leaves nothing once
// the next sandbox opens: no container, no state folder, no mount under
// it, and the lent workspace is its owner's again.
func TestLeftoversOfCrashedRunRemoved(t *testing.T) {
	t.Parallel()
	requireContainerd(t)
	for _, command := range []bool{true, false} {
		runID := fmt.Sprintf("crash-%v-%d", command, time.Now().UnixNano())
		ws := t.TempDir()
		host := filepath.Join(ws, "host.txt")
		if err := os.WriteFile(host, []byte("mine\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "TRIO_TEST_CRASH_RUN="+runID, "TRIO_TEST_CRASH_WS="+ws)
		if !command {
			cmd.Env = append(cmd.Env, "TRIO_TEST_CRASH_NOCMD=1")
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("crash child: %v\n%s", err, out)
		}
		state := filepath.Join(defaultStateDir(), runID)
		got := trioContainers(t, runID)
		if command && (!slices.Contains(got, "trio-"+runID) || !slices.Contains(got, "task trio-"+runID)) {
			t.Fatalf("the crashed run left %v, want its container and task", got)
		}
		if _, err := os.Stat(state); err != nil {
			t.Fatalf("command %v: the crashed run left no state folder: %v", command, err)
		}
		s := newSandbox(t, sandbox.RunSpec{RunID: runID + "-next"})
		run(t, s, "true")
		if got := trioContainers(t, runID); len(got) != 0 {
			t.Errorf("command %v: after a new sandbox: %v of the crashed run remain", command, got)
		}
		if _, err := os.Lstat(state); !os.IsNotExist(err) {
			t.Errorf("command %v: the crashed run's state folder remains: %v", command, err)
		}
		if ms, err := mountinfo.GetMounts(mountinfo.PrefixFilter(state)); err != nil || len(ms) != 0 {
			t.Errorf("command %v: mounts under the crashed run's state remain: %d (%v)", command, len(ms), err)
		}
		if st, err := os.Stat(host); err != nil || st.Sys().(*syscall.Stat_t).Uid != uint32(os.Getuid()) {
			t.Errorf("command %v: the lent workspace's file is not its owner's again: %v", command, err)
		}
	}
}

// TestKillChild is the process TestKilledRunLeavesNothingRunning kills:
// it starts a command that writes a beacon forever and never returns.
func TestKillChild(t *testing.T) {
	runID := os.Getenv("TRIO_TEST_KILL_RUN")
	if runID == "" {
		t.Skip("helper process only")
	}
	s, err := New(context.Background(), sandbox.RunSpec{Workspace: os.Getenv("TRIO_TEST_KILL_WS"), RunID: runID})
	if err != nil {
		fmt.Println("kill child:", err)
		os.Exit(2)
	}
	fmt.Println("ready")
	s.Exec(context.Background(), sandbox.Command{Argv: []string{"sh", "-c",
		"setsid sh -c 'while :; do echo x >> /workspace/beacon; sleep 0.05; done' & while :; do echo y >> /workspace/beacon; sleep 0.05; done"}})
	os.Exit(3)
}

// A run killed with SIGKILL in the middle of a command leaves nothing
// running: the container's init sees its liveness FIFO close and exits,
// which ends every process in the container. A prune then removes the
// container and gives the lent workspace back.
func TestKilledRunLeavesNothingRunning(t *testing.T) {
	t.Parallel()
	requireContainerd(t)
	runID := fmt.Sprintf("kill-%d", time.Now().UnixNano())
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "host.txt"), []byte("mine\n"), 0o644)
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "TRIO_TEST_KILL_RUN="+runID, "TRIO_TEST_KILL_WS="+ws)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	beacon := filepath.Join(ws, "beacon")
	size := func() int64 {
		st, err := os.Stat(beacon)
		if err != nil {
			return 0
		}
		return st.Size()
	}
	for i := 0; size() < 10; i++ {
		if i > 600 {
			cmd.Process.Kill()
			t.Fatal("the command never wrote its beacon")
		}
		time.Sleep(50 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	// The liveness FIFO closes with the process; the beacon must stop.
	var last int64 = -1
	for i := 0; ; i++ {
		now := size()
		if now == last {
			break
		}
		if i > 50 {
			t.Fatalf("processes of the killed run still write to the workspace (%d bytes)", now)
		}
		last = now
		time.Sleep(200 * time.Millisecond)
	}
	removed, err := Prune(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	// Any sandbox opened meanwhile (other tests, other packages) sweeps
	// dead runs too, so the run may be gone before Prune looks.
	for _, l := range removed {
		if l.Run == runID && l.Workspace != ws {
			t.Errorf("Prune removed %+v without giving %s back", l, ws)
		}
	}
	if got := trioContainers(t, runID); len(got) != 0 {
		t.Errorf("after Prune: %v remain", got)
	}
	if os.Geteuid() == 0 {
		filepath.WalkDir(ws, func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			st, _ := os.Lstat(p)
			if uid := st.Sys().(*syscall.Stat_t).Uid; uid != 0 {
				t.Errorf("after Prune: %s belongs to uid %d, not the workspace owner", p, uid)
			}
			return nil
		})
	}
}

func TestConcurrentSandboxesAreSeparate(t *testing.T) {
	t.Parallel()
	a, b := newSandbox(t, sandbox.RunSpec{}), newSandbox(t, sandbox.RunSpec{})
	var wg sync.WaitGroup
	results := make([]sandbox.Result, 2)
	for i, s := range []*Sandbox{a, b} {
		other := []*Sandbox{b, a}[i]
		wg.Go(func() {
			name := fmt.Sprintf("mine-%d", i)
			results[i] = run(t, s, "sh", "-c", fmt.Sprintf("touch /workspace/%s; sleep 1; ls /workspace; ls %s 2>&1 || true", name, other.cfg.Workspace))
		})
	}
	wg.Wait()
	for i, res := range results {
		mine, theirs := fmt.Sprintf("mine-%d", i), fmt.Sprintf("mine-%d", 1-i)
		if !strings.Contains(res.Stdout, mine) || strings.Contains(res.Stdout, theirs) {
			t.Errorf("sandbox %d sees:\n%s", i, res.Stdout)
		}
	}
}

func TestUnavailable(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "no.sock")
	err := Available(context.Background(), missing)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "the local sandbox kind") ||
		strings.Contains(err.Error(), "--sandbox") {
		t.Errorf("Available: %v; want the address and the local kind, in the library's words (no CLI flag)", err)
	}
	_, err = New(context.Background(), sandbox.RunSpec{Workspace: t.TempDir(), Settings: Config{Address: missing}})
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("New: %v", err)
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		spec sandbox.RunSpec
		want string
	}{
		{"no workspace", sandbox.RunSpec{}, "Workspace"},
		{"bad run id", sandbox.RunSpec{Workspace: t.TempDir(), RunID: "../x"}, "RunID"},
		{"bad rootfs", sandbox.RunSpec{Workspace: t.TempDir(), Settings: Config{RootFS: "vm"}}, "RootFS"},
		{"image without ref", sandbox.RunSpec{Workspace: t.TempDir(), Settings: &Config{RootFS: RootFSImage}}, "Image"},
		{"workspace missing", sandbox.RunSpec{Workspace: "/nonexistent/trio"}, "Workspace"},
		{"settings of another kind", sandbox.RunSpec{Workspace: t.TempDir(), Settings: struct{ RootFS string }{}}, "containerd.Config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The settings are checked before containerd is asked.
			_, err := New(context.Background(), tt.spec)
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want ErrConfig naming %s", err, tt.want)
			}
		})
	}
}

func TestSameRunIDRefused(t *testing.T) {
	t.Parallel()
	s := newSandbox(t, sandbox.RunSpec{})
	_, err := New(context.Background(), sandbox.RunSpec{Workspace: t.TempDir(), RunID: s.cfg.RunID})
	if err == nil {
		t.Fatal("a second sandbox with the same RunID was created")
	}
	if res := run(t, s, "true"); res.ExitCode != 0 {
		t.Errorf("the first sandbox broke: %+v", res)
	}
}

func TestMissingDir(t *testing.T) {
	t.Parallel()
	s := newSandbox(t, sandbox.RunSpec{})
	if err := os.WriteFile(filepath.Join(s.cfg.Workspace, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for dir, code := range map[string]int{"nope": 127, "file": 126} {
		res, err := s.Exec(context.Background(), sandbox.Command{Argv: []string{"true"}, Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if res.ExitCode != code || !strings.Contains(res.Stderr, dir) {
			t.Errorf("Dir %s: %+v", dir, res)
		}
	}
}

func TestEscapedChildDoesNotHang(t *testing.T) {
	t.Parallel()
	s := newSandbox(t, sandbox.RunSpec{})
	start := time.Now()
	// setsid leaves the command's process group and keeps stdout open.
	res := run(t, s, "sh", "-c", "setsid sleep 600 & sleep 0.2; echo out")
	if el := time.Since(start); el > 15*time.Second {
		t.Errorf("Exec took %v; an escaped child held the output", el)
	}
	if !strings.HasPrefix(res.Stdout, "out") {
		t.Errorf("%+v", res)
	}
	t.Logf("took %v", time.Since(start))
}

func TestNetworkWhenAllowed(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	s := newSandbox(t, sandbox.RunSpec{Limits: sandbox.Limits{Timeout: time.Minute, Network: true}})
	port := ln.Addr().(*net.TCPAddr).Port
	if res := run(t, s, "bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d", port)); res.ExitCode != 0 {
		t.Errorf("with Limits.Network the host listener is unreachable: %+v", res)
	}
}

// A root-owned workspace is lent to nobody while the run lasts; Close gives
// back every entry nobody owns then, and nothing a symlink points to.
func TestCloseGivesWorkspaceBack(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("the sandbox adopts the workspace only when it belongs to root")
	}
	ws := t.TempDir()
	for _, f := range []string{"host.txt", "d/inner.txt"} {
		p := filepath.Join(ws, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("host\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(ws, 0, 0); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "nobodys.txt")
	if err := os.WriteFile(outside, []byte("n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(outside, NobodyID, NobodyID); err != nil {
		t.Fatal(err)
	}
	owner := func(p string) (int, int) {
		st, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		sys := st.Sys().(*syscall.Stat_t)
		return int(sys.Uid), int(sys.Gid)
	}

	s := newSandbox(t, sandbox.RunSpec{Workspace: ws})
	res := run(t, s, "sh", "-c", "echo x > /workspace/made.txt && mkdir -p /workspace/new/deep && touch /workspace/new/deep/f && "+
		"echo y >> /workspace/d/inner.txt && ln -s "+outside+" /workspace/link")
	if res.ExitCode != 0 {
		t.Fatalf("%+v", res)
	}
	for _, f := range []string{".", "host.txt", "made.txt", "new/deep/f", "link"} {
		if uid, _ := owner(filepath.Join(ws, f)); uid != NobodyID {
			t.Errorf("while open: %s belongs to uid %d, want nobody", f, uid)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(ws, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if uid, gid := owner(p); uid != 0 || gid != 0 {
			t.Errorf("after Close: %s belongs to %d:%d, want 0:0", p, uid, gid)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := os.ReadDir(ws); len(n) != 5 {
		t.Errorf("workspace has %d entries, want 5 (host.txt d made.txt new link)", len(n))
	}
	if uid, gid := owner(outside); uid != NobodyID || gid != NobodyID {
		t.Errorf("the file a symlink points to now belongs to %d:%d", uid, gid)
	}
}

// Python leaves no __pycache__ stray in the workspace.
func TestPythonLeavesNoBytecode(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed on the host toolchain")
	}
	s := newSandbox(t, sandbox.RunSpec{})
	if err := os.WriteFile(filepath.Join(s.cfg.Workspace, "mod.py"), []byte("X = 42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if res := run(t, s, "python3", "-c", "import mod; print(mod.X)"); res.ExitCode != 0 || res.Stdout != "42\n" {
		t.Fatalf("python3: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(s.cfg.Workspace, "__pycache__")); !os.IsNotExist(err) {
		t.Errorf("__pycache__ left in the workspace: %v", err)
	}
}

// The sweep acts as root on what state folders say, so it believes only
// folders and labels nobody else could have written, and gives back only
// a workspace lent to nobody: forged labels that ask for the files of the
// lent uid (nobody's, or root's) to be given to another user change
// nothing, in Prune and in New.
func TestSweepRefusesForgedLabels(t *testing.T) {
	t.Parallel()
	requireContainerd(t)
	if os.Geteuid() != 0 {
		t.Skip("the sweep's chown needs root")
	}
	const other = 4242
	host := strings.SplitN(sandbox.OwnerLabel(), "/", 2)[0]
	cases := []struct {
		name                string
		stateMode, fileMode os.FileMode
		stateUID, fileUID   int
		lent                int
	}{
		{"state folder of another user", 0o777, 0o644, other, other, NobodyID},
		{"labels of another user", 0o700, 0o644, 0, other, NobodyID},
		{"labels others may write", 0o700, 0o666, 0, 0, NobodyID},
		{"a loan of root's files", 0o700, 0o644, 0, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ws := t.TempDir()
			victim := filepath.Join(ws, "shadow")
			if err := os.WriteFile(victim, []byte("secret\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Lchown(victim, c.lent, c.lent); err != nil {
				t.Fatal(err)
			}
			state := filepath.Join(t.TempDir(), "trio-state")
			run := filepath.Join(state, "evil")
			if err := os.MkdirAll(run, 0o700); err != nil {
				t.Fatal(err)
			}
			labels, _ := json.Marshal(map[string]string{LabelManaged: "true", LabelRun: "evil", LabelState: run,
				LabelOwner: host + "/3999999/1", LabelGiveBack: fmt.Sprintf("%d:%d:%d", c.lent, other, other), LabelWorkspace: ws})
			f := filepath.Join(run, labelsFile)
			if err := os.WriteFile(f, labels, 0o600); err != nil {
				t.Fatal(err)
			}
			for _, e := range []struct {
				path string
				uid  int
				mode os.FileMode
			}{{f, c.fileUID, c.fileMode}, {run, c.fileUID, 0o700}, {state, c.stateUID, c.stateMode}} {
				if err := os.Lchown(e.path, e.uid, e.uid); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(e.path, e.mode); err != nil {
					t.Fatal(err)
				}
			}
			same := func(when string) {
				t.Helper()
				st, err := os.Stat(victim)
				if err != nil {
					t.Fatalf("%s: %v", when, err)
				}
				if uid := st.Sys().(*syscall.Stat_t).Uid; uid != uint32(c.lent) {
					t.Errorf("%s acted on forged labels: %s now belongs to uid %d, not %d", when, victim, uid, c.lent)
				}
				if _, err := os.Stat(f); err != nil {
					t.Errorf("%s removed the forged folder: %v", when, err)
				}
			}
			Prune(context.Background(), Config{StateDir: state})
			same("Prune")
			s, err := New(context.Background(), sandbox.RunSpec{Workspace: t.TempDir(), Settings: Config{StateDir: state}})
			if err == nil {
				s.Close()
			}
			if c.stateUID != 0 && err == nil {
				t.Error("New accepted a state folder of another user")
			}
			same("New")
		})
	}
}

// A dead run's labels are the only record of the workspace it lent: the
// sweep removes its state folder only once the workspace is back, so a
// give-back that fails (here: the workspace is not a folder yet) leaves
// the folder for the next sweep, which finishes the job.
func TestSweepKeepsTheLoanUntilGivenBack(t *testing.T) {
	t.Parallel()
	requireContainerd(t)
	if os.Geteuid() != 0 {
		t.Skip("the sweep's chown needs root")
	}
	host := strings.SplitN(sandbox.OwnerLabel(), "/", 2)[0]
	state := filepath.Join(t.TempDir(), "trio-state")
	run := filepath.Join(state, "dead")
	if err := os.MkdirAll(run, 0o700); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.WriteFile(ws, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	labels, _ := json.Marshal(map[string]string{LabelManaged: "true", LabelRun: "dead", LabelState: run,
		LabelOwner: host + "/3999999/1", LabelGiveBack: fmt.Sprintf("%d:0:0", NobodyID), LabelWorkspace: ws})
	if err := os.WriteFile(filepath.Join(run, labelsFile), labels, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Prune(context.Background(), Config{StateDir: state}); err == nil {
		t.Error("a give-back that failed was not an error")
	}
	if _, err := os.Stat(filepath.Join(run, labelsFile)); err != nil {
		t.Fatalf("the loan's record went before the workspace was back: %v", err)
	}
	// Now the workspace is a folder with a file the dead run's nobody owns.
	if err := os.Remove(ws); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	lent := filepath.Join(ws, "made-inside")
	if err := os.WriteFile(lent, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(lent, NobodyID, NobodyID); err != nil {
		t.Fatal(err)
	}
	removed, err := Prune(context.Background(), Config{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0].Workspace != ws || removed[0].State != run {
		t.Errorf("prune reported %+v", removed)
	}
	if st, err := os.Stat(lent); err != nil || st.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Errorf("the workspace was not given back: %v", err)
	}
	if _, err := os.Lstat(run); !os.IsNotExist(err) {
		t.Errorf("the state folder remains after the give-back: %v", err)
	}
}
