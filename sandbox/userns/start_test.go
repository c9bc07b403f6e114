package userns_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trioagent/trio/internal/sandboxtest"
	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/sandbox/userns"
)

func TestStartEchoesOverStdio(t *testing.T) {
	if asOrdinaryUser(t, "TestStartEchoesOverStdio") {
		return
	}
	requireUserns(t)
	sb, _ := open(t, userns.Config{}, nil)
	p := sandboxtest.Start(t, sb, sandboxtest.EchoLoop...)
	r := bufio.NewReader(p.Stdout())
	for _, l := range []string{"one", "two words", strings.Repeat("x", 100<<10)} {
		if got := sandboxtest.Line(t, p, r, l); got != "got:"+l {
			t.Fatalf("sent %.40q, got back %.40q", l, got)
		}
	}
	p.Stdin().Close()
	res, err := p.Wait()
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Wait after closing stdin: %+v, %v", res, err)
	}
	if rest, _ := io.ReadAll(p.Stdout()); len(rest) != 0 {
		t.Errorf("output after the last line: %q", rest)
	}
}

// A secret next to the workspace on the host, and one the path rules
// hide inside it (.env): neither reaches the started process.
func TestStartCannotReadHostSecret(t *testing.T) {
	if asOrdinaryUser(t, "TestStartCannotReadHostSecret") {
		return
	}
	requireUserns(t)
	const word = "hunter2-userns-start"
	sb, ws := open(t, userns.Config{PathRules: rulesOf(shippedPolicy(t))}, map[string]string{".env": "KEY=" + word + "-env"})
	secret := filepath.Join(filepath.Dir(ws), "secret")
	if err := os.WriteFile(secret, []byte(word), 0o644); err != nil {
		t.Fatal(err)
	}
	p := sandboxtest.Start(t, sb, "/bin/sh", "-c", "cat ../secret "+secret+" .env 2>&1; echo end")
	out, _ := io.ReadAll(p.Stdout())
	if !strings.Contains(string(out), "end") {
		t.Fatalf("the process did not run to its end: %q (stderr %q)", out, p.Stderr())
	}
	if strings.Contains(string(out), word) {
		t.Errorf("the started process read a secret: %q", out)
	}
}

// Exec's commands, a kill -9 -1 among them, leave the started process
// running; its kill -9 -1 does not reach a command either.
func TestStartSurvivesExec(t *testing.T) {
	if asOrdinaryUser(t, "TestStartSurvivesExec") {
		return
	}
	requireUserns(t)
	sb, ws := open(t, userns.Config{}, nil)
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

// Stop ends the process and everything it started: none of their pids
// exists on the host afterwards.
func TestStopLeavesNoProcess(t *testing.T) {
	if asOrdinaryUser(t, "TestStopLeavesNoProcess") {
		return
	}
	requireUserns(t)
	sb, _ := open(t, userns.Config{}, nil)
	marker := fmt.Sprintf("4242.%d", time.Now().UnixNano()%1e6)
	p := sandboxtest.Start(t, sb, "/bin/sh", "-c", "sleep "+marker+" & (setsid sleep "+marker+" &) ; echo ready; exec sleep "+marker)
	r := bufio.NewReader(p.Stdout())
	if l, err := r.ReadString('\n'); err != nil || l != "ready\n" {
		t.Fatalf("got %q, %v", l, err)
	}
	pids := sandboxtest.HostPids(t, marker)
	if len(pids) < 3 {
		t.Fatalf("found %d of the 3 sleeps on the host: %v", len(pids), pids)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if left := sandboxtest.HostPids(t, marker); len(left) > 0 {
		t.Errorf("after Stop, processes it started still exist on the host: %v", left)
	}
	res, err := p.Wait()
	if err != nil || res.ExitCode != -1 {
		t.Errorf("Wait after Stop: %+v, %v; want exit -1 (killed)", res, err)
	}
	if err := p.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if res := run(t, sb, "echo", "still"); res.Stdout != "still\n" {
		t.Errorf("a command after Stop: %+v", res)
	}
}

// Close stops every started process: none is left on the host.
func TestCloseStopsStarted(t *testing.T) {
	if asOrdinaryUser(t, "TestCloseStopsStarted") {
		return
	}
	requireUserns(t)
	sb, _ := open(t, userns.Config{}, nil)
	marker := fmt.Sprintf("4343.%d", time.Now().UnixNano()%1e6)
	p1 := sandboxtest.Start(t, sb, "sleep", marker)
	sandboxtest.Start(t, sb, "sleep", marker)
	// Each sleep, and the bwrap processes whose arguments name it.
	if n := len(sandboxtest.HostPids(t, marker)); n < 2 {
		t.Fatalf("before Close: %d processes of the two started on the host, want 2 or more", n)
	}
	if err := sb.Close(); err != nil {
		t.Fatal(err)
	}
	if left := sandboxtest.HostPids(t, marker); len(left) > 0 {
		t.Errorf("after Close, started processes exist on the host: %v", left)
	}
	if res, _ := p1.Wait(); res.ExitCode != -1 {
		t.Errorf("Wait after Close: %+v", res)
	}
	if _, err := sb.Start(context.Background(), sandbox.Command{Argv: []string{"true"}}); err == nil {
		t.Error("Start after Close succeeded")
	}
}

// A real MCP server, built from the go-sdk's server API, runs in the
// sandbox: a client over the Process's pipes calls its tools, and what it
// may read is the sandbox's view, not the host's.
func TestStartMCPServer(t *testing.T) {
	if asOrdinaryUserWith(t, "TestStartMCPServer", func(base string) {
		sandboxtest.BuildMCPServer(t, filepath.Join(base, "mcpserver"))
	}) {
		return
	}
	requireUserns(t)
	server := filepath.Join(os.Getenv(childEnv), "mcpserver")
	if os.Getenv(childEnv) == "" {
		server = filepath.Join(t.TempDir(), "mcpserver")
		sandboxtest.BuildMCPServer(t, server)
	}
	sb, ws := open(t, userns.Config{}, map[string]string{"notes.txt": "in the workspace"})
	copyFile(t, server, filepath.Join(ws, "mcpserver"), 0o755)
	secret := filepath.Join(filepath.Dir(ws), "secret")
	os.WriteFile(secret, []byte("hunter2-mcp"), 0o644)
	p := sandboxtest.Start(t, sb, "/workspace/mcpserver")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "trio-test", Version: "v1"}, nil)
	session, err := client.Connect(ctx, &mcp.IOTransport{Reader: p.Stdout(), Writer: p.Stdin()}, nil)
	if err != nil {
		t.Fatalf("connect: %v (stderr %q)", err, p.Stderr())
	}
	call := func(tool string, args map[string]any) (string, bool) {
		t.Helper()
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String(), res.IsError
	}
	if got, _ := call("echo", map[string]any{"text": "hi"}); got != "echo: hi" {
		t.Errorf("echo: %q", got)
	}
	if got, isErr := call("read", map[string]any{"path": "/workspace/notes.txt"}); isErr || got != "in the workspace" {
		t.Errorf("read of a workspace file: %q (error %v)", got, isErr)
	}
	if got, _ := call("read", map[string]any{"path": secret}); strings.Contains(got, "hunter2") {
		t.Errorf("the sandboxed MCP server read the host's secret: %q", got)
	}
	session.Close()
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
}

// buildMCPServer builds testdata/mcpserver, statically linked, at dst.

// A .git a started process makes (a hostile config would act on the
// host's git) is gone from the host once it stops; the user's .env,
// hidden from it, is left as it was.
func TestStartPathRules(t *testing.T) {
	if asOrdinaryUser(t, "TestStartPathRules") {
		return
	}
	requireUserns(t)
	rules := func(rel string) sandbox.Access {
		if rel == ".env" || rel == ".git" || strings.HasPrefix(rel, ".git/") {
			return sandbox.Hidden
		}
		return sandbox.Writable
	}
	sb, ws := open(t, userns.Config{PathRules: rules}, map[string]string{".env": "KEY=hunter2-env"})
	p := sandboxtest.Start(t, sb, sandboxtest.EchoLoop...)
	r := bufio.NewReader(p.Stdout())
	if got := sandboxtest.RunIn(t, p, r, "cat /workspace/.env 2>&1"); strings.Contains(got, "hunter2") {
		t.Errorf("the started process read the hidden .env: %q", got)
	}
	sandboxtest.RunIn(t, p, r, `mkdir -p /workspace/.git && printf '[core]\n\tfsmonitor = touch /tmp/pwned\n' > /workspace/.git/config`)
	if _, err := os.Stat(filepath.Join(ws, ".git", "config")); err != nil {
		t.Fatalf("the process could not write .git/config, so this test shows nothing: %v", err)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ws, ".git")); err == nil {
		t.Error("the .git the started process made is still on the host after Stop")
	}
	if b, err := os.ReadFile(filepath.Join(ws, ".env")); err != nil || string(b) != "KEY=hunter2-env" {
		t.Errorf("the user's .env changed: %q, %v", b, err)
	}
}

// The run's disk limit holds for a started process: writing past it
// kills it, and Wait says why.
func TestStartDiskLimit(t *testing.T) {
	if asOrdinaryUser(t, "TestStartDiskLimit") {
		return
	}
	requireUserns(t)
	sb, _ := open(t, userns.Config{Limits: sandbox.Limits{Timeout: time.Minute, Disk: 16 << 20}}, nil)
	p := sandboxtest.Start(t, sb, "/bin/sh", "-c", `i=0; while [ $i -lt 200 ]; do head -c 1048576 /dev/zero > /workspace/f$i || exit 9; i=$((i+1)); sleep 0.05; done; echo wrote-all`)
	out, _ := io.ReadAll(p.Stdout())
	res, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if !res.DiskExceeded || strings.Contains(string(out), "wrote-all") {
		t.Errorf("a started process wrote 200 MiB past a 16 MiB disk limit: %+v, %q", res, out)
	}
}

// BenchmarkStart is the cost of a started process: Start until its first
// line comes back, then Stop (reported apart).
func BenchmarkStart(b *testing.B) {
	requireUserns(b)
	ws := b.TempDir()
	sb, err := userns.New(context.Background(), userns.Config{Workspace: ws, Limits: sandbox.Limits{Timeout: time.Minute}})
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
	sb, _ := open(t, userns.Config{Limits: sandbox.Limits{Timeout: time.Minute, Disk: 64 << 20}}, nil)
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
