package userns_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trioagent/trio/internal/sandboxtest"
	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/sandbox/userns"
)

// Exec's commands, a kill -9 -1 among them, leave the started process
// running; its kill -9 -1 does not reach a command either.
func TestStartSurvivesExec(t *testing.T) {
	if asOrdinaryUser(t, "TestStartSurvivesExec") {
		return
	}
	requireUserns(t)
	sb, ws := open(t, sandbox.RunSpec{}, nil)
	p := sandboxtest.Start(t, sb, sandboxtest.EchoLoop...)
	r := bufio.NewReader(p.Stdout())
	if got := sandboxtest.Line(t, p, r, "a"); got != "got:a" {
		t.Fatalf("got %q", got)
	}
	res := run(t, sb, "/bin/sh", "-c", "kill -9 -1; sleep 0.2; echo after")
	t.Logf("kill -9 -1 in a command: exit %d %q", res.ExitCode, res.Stdout)
	run(t, sb, "/bin/sh", "-c", "sleep 1000 & echo left")
	if got := sandboxtest.Line(t, p, r, "b"); got != "got:b" {
		t.Fatalf("after Exec and kill -9 -1 the started process answers %q", got)
	}

	done := make(chan sandbox.Result, 1)
	go func() {
		res, err := sb.Exec(context.Background(), sandbox.Command{Argv: []string{"/bin/sh", "-c",
			"touch /workspace/waiting; i=0; while [ ! -e /workspace/killed ] && [ $i -lt 3000 ]; do sleep 0.1; i=$((i+1)); done; echo alive"}})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	for i := 0; ; i++ {
		if _, err := os.Stat(filepath.Join(ws, "waiting")); err == nil {
			break
		}
		if i == 6000 {
			t.Fatal("the command never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	io.WriteString(p.Stdin(), "run kill -9 -1 2>/dev/null; touch /workspace/killed\n")
	res = <-done
	if res.ExitCode != 0 || !strings.Contains(res.Stdout, "alive") {
		t.Errorf("a command's run ended by the started process's kill -9 -1: %+v", res)
	}
}

// BenchmarkStart is the cost of a started process: Start until its first
// line comes back, then Stop (reported apart).
func BenchmarkStart(b *testing.B) {
	requireUserns(b)
	ws := b.TempDir()
	sb, err := userns.New(context.Background(), sandbox.RunSpec{Workspace: ws, Limits: sandbox.Limits{Timeout: time.Minute}})
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close()
	var first, stop []time.Duration
	for b.Loop() {
		t0 := time.Now()
		p, err := sb.Start(context.Background(), sandbox.Command{Argv: sandboxtest.EchoLoop})
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
	b.ReportMetric(float64(medianOf(first).Microseconds())/1000, "start-echo-ms")
	b.ReportMetric(float64(medianOf(stop).Microseconds())/1000, "stop-ms")
}

func medianOf(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// A started process keeps the cache it started with across a Reset: what
// it writes there afterwards is not in the cache the next commands (the
// Critic's checks) use, and it still counts against the disk limit.
func TestStartAcrossReset(t *testing.T) {
	if asOrdinaryUser(t, "TestStartAcrossReset") {
		return
	}
	requireUserns(t)
	sb, _ := open(t, sandbox.RunSpec{Limits: sandbox.Limits{Timeout: time.Minute, Disk: 64 << 20}}, nil)
	p := sandboxtest.Start(t, sb, sandboxtest.EchoLoop...)
	r := bufio.NewReader(p.Stdout())
	if err := sb.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	sandboxtest.RunIn(t, p, r, "echo PLANTED > /cache/planted; head -c 41943040 /dev/zero > /cache/big")
	res := run(t, sb, "sh", "-c", "cat /cache/planted /cache/big 2>/dev/null | head -c 10; echo end")
	if res.Stdout != "end\n" {
		t.Fatalf("after Reset a command sees what a started process wrote into the cache: %q", res.Stdout)
	}
	res = run(t, sb, "sh", "-c", "head -c 41943040 /dev/zero > /workspace/more")
	if !res.DiskExceeded {
		t.Fatalf("80 MiB (40 by the started process into its cache after a Reset) passed a 64 MiB disk limit: %+v", res)
	}
}

// TestStarter runs the conformance rows for started processes
// (internal/sandboxtest) as an ordinary user: pipes, Stop and Close
// killing every process, no kill between commands and started processes,
// an MCP server answering tools/list, hidden paths, the disk limit.
func TestStarter(t *testing.T) {
	if asOrdinaryUserWith(t, "TestStarter", func(base string) {
		sandboxtest.BuildMCPServer(t, filepath.Join(base, "mcpserver"))
	}) {
		return
	}
	requireUserns(t)
	var o sandboxtest.StarterOptions
	if base := os.Getenv(childEnv); base != "" {
		o.MCPServer = filepath.Join(base, "mcpserver")
	}
	sandboxtest.RunStarterWith(t, func(t testing.TB, dir string, rules sandbox.PathRules, limits sandbox.Limits) sandbox.Sandbox {
		sb, err := userns.New(context.Background(), sandbox.RunSpec{Workspace: dir, Limits: limits, PathRules: rules})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sb.Close() })
		return sb
	}, o)
}
