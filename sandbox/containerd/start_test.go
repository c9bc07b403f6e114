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

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trioagent/trio/internal/sandboxtest"
	"github.com/trioagent/trio/sandbox"
)

func TestStartEchoesOverStdio(t *testing.T) {
	s := newSandbox(t, Config{})
	p := sandboxtest.Start(t, s, sandboxtest.EchoLoop...)
	r := bufio.NewReader(p.Stdout())
	for _, l := range []string{"one", "two words", strings.Repeat("x", 100<<10)} {
		if got := sandboxtest.Line(t, p, r, l); got != "got:"+l {
			t.Fatalf("sent %.40q, got back %.40q", l, got)
		}
	}
	// Closing stdin ends it: the read loop sees EOF.
	p.Stdin().Close()
	res, err := p.Wait()
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Wait after closing stdin: %+v, %v", res, err)
	}
	if rest, _ := io.ReadAll(p.Stdout()); len(rest) != 0 {
		t.Errorf("output after the last line: %q", rest)
	}
}

// A secret next to the workspace on the host, and the host's view of it
// by absolute path: neither reaches the started process.
func TestStartCannotReadHostSecret(t *testing.T) {
	top := t.TempDir()
	ws := filepath.Join(top, "ws")
	os.Mkdir(ws, 0o755)
	secret := filepath.Join(top, "secret")
	const word = "hunter2-containerd-start"
	if err := os.WriteFile(secret, []byte(word), 0o644); err != nil {
		t.Fatal(err)
	}
	s := newSandbox(t, Config{Workspace: ws})
	p := sandboxtest.Start(t, s, "/bin/sh", "-c", "cat ../secret "+secret+" /proc/1/root"+secret+" 2>&1; echo end")
	out, _ := io.ReadAll(p.Stdout())
	if !strings.Contains(string(out), "end") {
		t.Fatalf("the process did not run to its end: %q (stderr %q)", out, p.Stderr())
	}
	if strings.Contains(string(out), word) {
		t.Errorf("the started process read the host's secret: %q", out)
	}
}

// Exec's reaper, a kill -9 -1 from a command, and Reset leave the started
// process running; its kill -9 -1 does not reach a command either.
func TestStartSurvivesExecAndReset(t *testing.T) {
	s := newSandbox(t, Config{})
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

// Stop ends the process and everything it started: none of their pids
// exists on the host afterwards.
func TestStopLeavesNoProcess(t *testing.T) {
	s := newSandbox(t, Config{})
	marker := fmt.Sprintf("4242.%d", time.Now().UnixNano()%1e6)
	p := sandboxtest.Start(t, s, "/bin/sh", "-c", "sleep "+marker+" & (setsid sleep "+marker+" &) ; echo ready; exec sleep "+marker)
	r := bufio.NewReader(p.Stdout())
	if l, err := r.ReadString('\n'); err != nil || l != "ready\n" {
		t.Fatalf("got %q, %v", l, err)
	}
	// The subshell's setsid may exec after the echo.
	pids := sandboxtest.HostPids(t, marker)
	for i := 0; len(pids) < 3 && i < 100; i++ {
		time.Sleep(20 * time.Millisecond)
		pids = sandboxtest.HostPids(t, marker)
	}
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
	if res := run(t, s, "echo", "still"); res.Stdout != "still\n" {
		t.Errorf("the run's container after Stop: %+v", res)
	}
}

// Close removes every container Start made: none is left with the run's
// label, and the started processes are gone from the host.
func TestCloseRemovesStarted(t *testing.T) {
	requireContainerd(t)
	s, err := New(context.Background(), Config{Workspace: t.TempDir(),
		Limits: sandbox.Limits{Timeout: time.Minute, Memory: 256 << 20, Pids: 64}})
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

// A real MCP server, built from the go-sdk's server API, runs in the
// sandbox: a client over the Process's pipes lists and calls its tools,
// and what it may read is the sandbox's view, not the host's.
func TestStartMCPServer(t *testing.T) {
	top := t.TempDir()
	ws := filepath.Join(top, "ws")
	os.Mkdir(ws, 0o755)
	secret := filepath.Join(top, "secret")
	os.WriteFile(secret, []byte("hunter2-mcp"), 0o644)
	os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("in the workspace"), 0o644)
	sandboxtest.BuildMCPServer(t, filepath.Join(ws, "mcpserver"))
	s := newSandbox(t, Config{Workspace: ws})
	p := sandboxtest.Start(t, s, "/workspace/mcpserver")

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

// BenchmarkStart is the cost of a started process: Start until its first
// line comes back, then Stop (reported apart).
func BenchmarkStart(b *testing.B) {
	s := newSandbox(b, Config{})
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

// The path rules hold for a started process: a hidden .env reads empty,
// and a .git it makes (a hostile config would act on the host's git) is
// gone from the host once it stops.
func TestStartPathRules(t *testing.T) {
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, ".env"), []byte("KEY=hunter2-env"), 0o644)
	rules := func(rel string) sandbox.Access {
		if rel == ".env" || rel == ".git" || strings.HasPrefix(rel, ".git/") {
			return sandbox.Hidden
		}
		return sandbox.Writable
	}
	s := newSandbox(t, Config{Workspace: ws, Rules: rules})
	p := sandboxtest.Start(t, s, sandboxtest.EchoLoop...)
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
	s := newSandbox(t, Config{Limits: sandbox.Limits{Timeout: time.Minute, Memory: 512 << 20, Pids: 256, Disk: 16 << 20}})
	p := sandboxtest.Start(t, s, "/bin/sh", "-c", `i=0; while [ $i -lt 200 ]; do head -c 1048576 /dev/zero > /workspace/f$i || exit 9; i=$((i+1)); sleep 0.05; done; echo wrote-all`)
	out, _ := io.ReadAll(p.Stdout())
	res, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if !res.DiskExceeded || strings.Contains(string(out), "wrote-all") {
		t.Errorf("a started process wrote 200 MiB past a 16 MiB disk limit: %+v, %q", res, out)
	}
}

// The run's memory limit holds for a started process, and an OOM kill
// is reported.
func TestStartOOM(t *testing.T) {
	s := newSandbox(t, Config{Limits: sandbox.Limits{Timeout: time.Minute, Memory: 64 << 20, Pids: 256}})
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
	s := newSandbox(t, Config{Workspace: ws, Rules: rules})
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
