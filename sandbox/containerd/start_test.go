package containerd

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trioagent/trio/internal/sandboxtest"
	"github.com/trioagent/trio/sandbox"
)

// Exec's reaper, a kill -9 -1 from a command, and Reset leave the started
// process running; its kill -9 -1 does not reach a command either.
func TestStartSurvivesExecAndReset(t *testing.T) {
	s := newSandbox(t, sandbox.RunSpec{})
	p := sandboxtest.Start(t, s, sandboxtest.EchoLoop...)
	r := bufio.NewReader(p.Stdout())
	if got := sandboxtest.Line(t, p, r, "a"); got != "got:a" {
		t.Fatalf("got %q", got)
	}
	res := run(t, s, "/bin/sh", "-c", "kill -9 -1; sleep 0.2; echo after")
	t.Logf("kill -9 -1 in the run's container: exit %d %q", res.ExitCode, res.Stdout)
	run(t, s, "/bin/sh", "-c", "sleep 1000 & echo left")
	if err := s.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	if res := run(t, s, "true"); res.ExitCode != 0 {
		t.Fatalf("after Reset: %+v", res)
	}
	if got := sandboxtest.Line(t, p, r, "b"); got != "got:b" {
		t.Fatalf("after Exec, kill -9 -1 and Reset the started process answers %q", got)
	}

	// The other way: a command waits for the started process's kill -9 -1.
	done := make(chan sandbox.Result, 1)
	go func() {
		res, err := s.Exec(context.Background(), sandbox.Command{Argv: []string{"/bin/sh", "-c",
			"touch /workspace/waiting; i=0; while [ ! -e /workspace/killed ] && [ $i -lt 3000 ]; do sleep 0.1; i=$((i+1)); done; echo alive"}})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	for i := 0; ; i++ {
		if _, err := os.Stat(filepath.Join(s.cfg.Workspace, "waiting")); err == nil {
			break
		}
		if i == 6000 {
			t.Fatal("the command never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The loop's shell dies with its own kill -9 -1 if it can signal
	// itself, so the reply comes from the shell's status.
	io.WriteString(p.Stdin(), "run kill -9 -1 2>/dev/null; touch /workspace/killed\n")
	res = <-done
	if res.ExitCode != 0 || !strings.Contains(res.Stdout, "alive") {
		t.Errorf("a command's run ended by the started process's kill -9 -1: %+v", res)
	}
}

// Close removes every container Start made: none is left with the run's
// label, and the started processes are gone from the host.
func TestCloseRemovesStarted(t *testing.T) {
	requireContainerd(t)
	s, err := New(context.Background(), sandbox.RunSpec{Workspace: t.TempDir(), Limits: sandbox.Limits{Timeout: time.Minute, Memory: 256 << 20, Pids: 64}})
	if err != nil {
		t.Fatal(err)
	}
	marker := fmt.Sprintf("4343.%d", time.Now().UnixNano()%1e6)
	p1, err := s.Start(context.Background(), sandbox.Command{Argv: []string{"sleep", marker}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Start(context.Background(), sandbox.Command{Argv: []string{"sleep", marker}}); err != nil {
		t.Fatal(err)
	}
	filter := fmt.Sprintf(`labels.%q==%q`, LabelRun, s.cfg.RunID)
	ctx := s.ctx
	if cs, err := s.client.Containers(ctx, filter); err != nil || len(cs) != 2 {
		t.Fatalf("before Close: %d containers with the run's label, want 2: the started ones (the run's starts with its first command) (%v)", len(cs), err)
	}
	if n := len(sandboxtest.HostPids(t, marker)); n != 2 {
		t.Fatalf("before Close: %d started processes on the host, want 2", n)
	}
	// Close closes the sandbox's client: ask with another.
	c, err := connect(ctx, s.cfg.Address, s.cfg.Namespace, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if cs, err := c.Containers(ctx, filter); err != nil || len(cs) != 0 {
		t.Errorf("after Close: %d containers with the run's label (%v)", len(cs), err)
	}
	if left := sandboxtest.HostPids(t, marker); len(left) > 0 {
		t.Errorf("after Close, started processes exist on the host: %v", left)
	}
	if res, _ := p1.Wait(); res.ExitCode != -1 {
		t.Errorf("Wait after Close: %+v", res)
	}
	if _, err := s.Start(context.Background(), sandbox.Command{Argv: []string{"true"}}); err == nil {
		t.Error("Start after Close succeeded")
	}
}

// BenchmarkStart is the cost of a started process: Start until its first
// line comes back, then Stop (reported apart).
func BenchmarkStart(b *testing.B) {
	s := newSandbox(b, sandbox.RunSpec{})
	var first, stop []time.Duration
	for b.Loop() {
		t0 := time.Now()
		p, err := s.Start(context.Background(), sandbox.Command{Argv: sandboxtest.EchoLoop})
		if err != nil {
			b.Fatal(err)
		}
		if got := sandboxtest.Line(b, p, bufio.NewReader(p.Stdout()), "x"); got != "got:x" {
			b.Fatal(got)
		}
		t1 := time.Now()
		if err := p.Stop(); err != nil {
			b.Fatal(err)
		}
		first, stop = append(first, t1.Sub(t0)), append(stop, time.Since(t1))
	}
	b.ReportMetric(float64(median(first).Microseconds())/1000, "start-echo-ms")
	b.ReportMetric(float64(median(stop).Microseconds())/1000, "stop-ms")
}

// The run's memory limit holds for a started process, and an OOM kill
// is reported.
func TestStartOOM(t *testing.T) {
	s := newSandbox(t, sandbox.RunSpec{Limits: sandbox.Limits{Timeout: time.Minute, Memory: 64 << 20, Pids: 256}})
	p := sandboxtest.Start(t, s, "python3", "-c", "b = bytearray(400 << 20); b[::4096] = b'x' * len(b[::4096]); print('survived')")
	out, _ := io.ReadAll(p.Stdout())
	res, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if !res.OOMKilled || strings.Contains(string(out), "survived") {
		t.Errorf("400 MiB under a 64 MiB limit: %+v, %q (stderr %q)", res, out, p.Stderr())
	}
}

// A started process that keeps swapping a read-only folder for a symlink
// to a host folder cannot get that folder bound into the run's container:
// it is frozen while the layout is planned and mounted (runc follows a
// bind's source on the host). Each Reset makes the next command mount the
// layout again; without the freeze, some of the 40 tries see the folder
// planned and the symlink mounted (or nothing there, and fail).
func TestStartCannotRaceTheLayout(t *testing.T) {
	top := t.TempDir()
	ws, host := filepath.Join(top, "ws"), filepath.Join(top, "host")
	os.MkdirAll(ws, 0o755)
	os.MkdirAll(host, 0o755)
	os.WriteFile(filepath.Join(host, "secret"), []byte("hunter2-host"), 0o644)
	rules := func(rel string) sandbox.Access {
		if rel == "vendor" || strings.HasPrefix(rel, "vendor/") {
			return sandbox.ReadOnly
		}
		return sandbox.Writable
	}
	s := newSandbox(t, sandbox.RunSpec{Workspace: ws, PathRules: rules})
	// vendor does not exist when it starts, so its own container has no
	// mount there and it may rename the folder it makes.
	p := sandboxtest.Start(t, s, "/bin/sh", "-c", `cd /workspace && mkdir vendor.real && echo mine > vendor.real/secret && echo ready && while :; do
mv vendor.real vendor; sleep 0.005; mv vendor vendor.real; ln -s `+host+` vendor; sleep 0.005; rm vendor; done`)
	if l, err := bufio.NewReader(p.Stdout()).ReadString('\n'); l != "ready\n" {
		t.Fatalf("the swapper did not start: %q, %v (stderr %q)", l, err, p.Stderr())
	}
	for i := range 40 {
		if err := s.Reset(context.Background()); err != nil {
			t.Fatal(err)
		}
		res, err := s.Exec(context.Background(), sandbox.Command{Argv: []string{"/bin/sh", "-c", "cat /workspace/vendor/secret 2>/dev/null; true"}})
		if err != nil && strings.Contains(err.Error(), "path escapes from parent") {
			// Frozen with vendor a symlink out of the workspace: the
			// layout is refused, which is the safe outcome.
			continue
		}
		if err != nil {
			t.Errorf("try %d: %v", i, err)
			continue
		}
		if strings.Contains(res.Stdout, "hunter2") {
			t.Fatalf("try %d: the host folder was bound into the run's container: %q", i, res.Stdout)
		}
	}
}

// TestStarter runs the conformance rows for started processes
// (internal/sandboxtest) against real containerd: pipes, Stop and Close
// killing every process, no kill between commands and started processes,
// an MCP server answering tools/list, hidden paths, the disk limit.
func TestStarter(t *testing.T) {
	requireContainerd(t)
	sandboxtest.RunStarterWith(t, openForEffects, sandboxtest.StarterOptions{Skip: map[string]string{
		"mcp-server-from-anywhere": "a container runs the programs of its image and the workspace, never the host's"}})
}
