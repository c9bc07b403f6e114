package landlock_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trioagent/trio/internal/sandboxtest"
	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/sandbox/internal/confine"
)

// TestStarter runs the conformance rows for started processes (MCP
// servers, background processes) as root and as nobody: pipes, Stop and
// Close killing every process (setsid ones included), no signal between
// them and Exec's commands, an MCP server answering tools/list, the path
// rules and the disk limit.
func TestStarter(t *testing.T) {
	requireLandlock(t)
	o := sandboxtest.StarterOptions{WithoutDenied: true}
	if base := os.Getenv(childEnv); base != "" {
		o.MCPServer = filepath.Join(base, "mcpserver")
	}
	if confine.ABI() < 6 {
		o.Skip = map[string]string{"commands-and-started-cannot-kill-each-other": "signal scoping needs Landlock ABI 6 (Info says so)"}
	}
	sandboxtest.RunStarterWith(t, open, o)
	if os.Getenv(childEnv) == "" {
		asNobodyWith(t, "TestStarter", func(t *testing.T, base string) {
			sandboxtest.BuildMCPServer(t, filepath.Join(base, "mcpserver"))
		})
	}
}

// A command that runs out of time takes every process it started with
// it, a setsid one included: its helper kills them all on SIGTERM. (The
// helper's signal goroutine once killed from a thread whose Landlock
// domain was not the command's parent, got EPERM, and was killed itself
// five seconds later, leaving the processes to init.)
func TestTimeoutKillsEveryProcess(t *testing.T) {
	requireLandlock(t)
	sb := open(t, sandboxtest.Workspace(t), nil, sandbox.Limits{Timeout: time.Minute})
	m := fmt.Sprintf("4444.%d%d", os.Getpid(), time.Now().UnixNano()%1e9)
	res, err := sb.Exec(context.Background(), sandbox.Command{Argv: []string{"/bin/sh", "-c",
		"sleep " + m + " & (setsid sleep " + m + " &); exec sleep " + m}, Timeout: time.Second})
	if err != nil || !res.TimedOut {
		t.Fatalf("%+v %v, want a timeout", res, err)
	}
	if left := sandboxtest.HostPids(t, m); len(left) > 0 {
		t.Errorf("after the timeout, processes of the command still exist on the host: %v", left)
	}
	if os.Getenv(childEnv) == "" {
		asNobody(t, "TestTimeoutKillsEveryProcess")
	}
}

// BenchmarkStart is the cost of a started process: Start until its first
// line comes back, then Stop (reported apart).
func BenchmarkStart(b *testing.B) {
	requireLandlock(b)
	sb := open(b, b.TempDir(), nil, sandbox.Limits{Timeout: time.Minute})
	st := sb.(sandbox.Starter)
	var first, stop []time.Duration
	for b.Loop() {
		t0 := time.Now()
		p, err := st.Start(context.Background(), sandbox.Command{Argv: sandboxtest.EchoLoop})
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

// A program the sandbox will not show (beside the workspace: its folder
// holds the workspace, see sandbox.ResolveProgram), or one that does not
// exist, or one the kernel cannot execute, fails the Start with the
// reason, instead of a process that exits at once.
func TestStartProgramNotRunnable(t *testing.T) {
	requireLandlock(t)
	dir := sandboxtest.Workspace(t)
	outside := filepath.Join(filepath.Dir(dir), "server")
	copyFile(t, "/bin/true", outside, 0o755)
	// Found, but the exec fails after the helper said ready.
	if err := os.WriteFile(filepath.Join(dir, "junk"), []byte("\x00\x01not a program"), 0o755); err != nil {
		t.Fatal(err)
	}
	sb := open(t, dir, nil, sandbox.Limits{Timeout: time.Minute})
	for _, tt := range []struct{ prog, want string }{
		{outside, "holding the workspace"},
		{filepath.Join(dir, "junk"), "exec format error"},
		{"no-such-server", "not found"},
	} {
		p, err := sb.(sandbox.Starter).Start(context.Background(), sandbox.Command{Argv: []string{tt.prog}})
		if err == nil {
			p.Stop()
			t.Errorf("Start %s succeeded", tt.prog)
			continue
		}
		if !strings.Contains(err.Error(), tt.prog) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Start %s: %v, want an error naming it with %q", tt.prog, err, tt.want)
		}
	}
	if os.Getenv(childEnv) == "" {
		asNobody(t, "TestStartProgramNotRunnable")
	}
}
