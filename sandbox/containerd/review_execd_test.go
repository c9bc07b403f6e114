package containerd

// Attacks of a review of the exec server (package execd) as the
// container's init, each driven by a command through the gate, each
// checking what happened on the host.

import (
	"context"
	"strings"
	"testing"

	"github.com/trioagent/trio/internal/sandboxtest"
	"github.com/trioagent/trio/sandbox"
)

// A command fills the memory limit with pages no process's RSS counts (an
// unmapped memfd), from a process smaller than init. The OOM killer picks
// the largest process: where the host cannot lower init's oom_score_adj
// (no CAP_SYS_RESOURCE), that is the exec server, ~23 MB of Go binary
// resident against python's ~9 MB. Init dies, the command comes back as a
// sandbox error instead of an OOM kill, and the agent stops the run
// (StopSandboxError). The shell init (sh and cat, ~1 MB each) lost no such
// contest: the same command was OOM-killed and reported as such.
func TestReviewMemoryHogKillsInit(t *testing.T) {
	e := sandboxtest.NewEnv(t, attackOpen(t), nil, func(l *sandbox.Limits) { l.Memory = 256 << 20 })
	r, err := pyNoFatal(t, e, "hog.py", `import os
fd = os.memfd_create("hog", 0)
chunk = b"\0" * (1 << 20)
while True:
    os.write(fd, chunk)
`)
	if err != nil {
		t.Fatalf("a command that exhausts the memory limit took init down; the run stops with a sandbox error: %v", err)
	}
	if !strings.Contains(sandboxtest.Everything(r), "out of memory") {
		t.Errorf("the command was not reported as killed for memory:\n%s", sandboxtest.Everything(r))
	}
}

// The same hog lowers its OOM score as far as it may first. Where the
// host cannot fix commands' scores (no CAP_SYS_RESOURCE), that can make
// the kernel pick init; then the command is reported as killed with it,
// the run goes on, and the next command runs in a new container.
func TestReviewLoweredHogDoesNotStopTheRun(t *testing.T) {
	e := sandboxtest.NewEnv(t, attackOpen(t), nil, func(l *sandbox.Limits) { l.Memory = 256 << 20 })
	r, err := pyNoFatal(t, e, "hog.py", `import os
for v in ("-1000", "-500", "0", "1"):
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write(v)
        break
    except OSError:
        pass
fd = os.memfd_create("hog", 0)
chunk = b"\0" * (1 << 20)
while True:
    os.write(fd, chunk)
`)
	if err != nil {
		t.Fatalf("a command that exhausts the memory limit stopped the run: %v", err)
	}
	out := sandboxtest.Everything(r)
	if !strings.Contains(out, "out of memory") && !strings.Contains(out, "init was killed") {
		t.Errorf("the command was reported neither as OOM-killed nor as killed with init:\n%s", out)
	}
	if after := e.Command(t, "true"); after.Denied || !strings.Contains(after.Output, "exit code 0") {
		t.Errorf("the next command did not run:\n%s", sandboxtest.Everything(after))
	}
}

// The exec server is the host's own executable, bound at /.trio-init with
// its host mode (0755): every command can read all of it. For an embedder
// that is their program, with whatever it has compiled in (keys set with
// -ldflags -X, embedded configuration), handed to the sandboxed code. The
// server needs only to execute it.
func TestReviewInitExecutableUnreadable(t *testing.T) {
	e := sandboxtest.NewEnv(t, attackOpen(t), nil, nil)
	r := e.Python(t, "exe.py", `try:
    with open("/.trio-init", "rb") as f:
        b = f.read()
    print("READ %d bytes, ELF=%s" % (len(b), b[:4] == b"\x7fELF"))
except Exception as ex:
    print("no: %r" % ex)
`)
	if strings.Contains(r.Stdout+r.Output, "READ ") {
		t.Errorf("a command read the host's executable through /.trio-init:\n%s", sandboxtest.Everything(r))
	}
}

// Descriptors the server holds (its listener, connections, the liveness
// FIFO, /dev/null, other commands' pipes as they arrive) must not reach a
// command: only 0, 1 and 2 are open, before and after a request the server
// refused (its error path closes what it received).
func TestReviewNoDescriptorLeak(t *testing.T) {
	e := sandboxtest.NewEnv(t, attackOpen(t), nil, nil)
	check := `import os
open_fds = []
for fd in range(3, 1024):
    try:
        os.fstat(fd); open_fds.append((fd, os.readlink("/proc/self/fd/%d" % fd)))
    except OSError: pass
print("LEAKED", open_fds if open_fds else "none")
print("stdin", os.readlink("/proc/self/fd/0"))
`
	for i := range 2 {
		r := e.Python(t, "fds.py", check)
		if !strings.Contains(r.Stdout+r.Output, "LEAKED none") || !strings.Contains(r.Stdout+r.Output, "stdin /dev/null") {
			t.Errorf("command %d got descriptors it was not given:\n%s", i, sandboxtest.Everything(r))
		}
		// A start that fails (no such program) between the two.
		if res, err := e.Sandbox.Exec(context.Background(), sandbox.Command{Argv: []string{"no-such-program"}}); err != nil || res.ExitCode != 127 {
			t.Fatalf("missing program: %+v %v", res, err)
		}
	}
}
