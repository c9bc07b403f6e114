package agent_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/tools"
)

// envHostile makes the test binary one of the hostile stdio MCP servers
// below (it is read in init, before TestMain); envPidFile names the file
// where a server writes the pids the test looks for on the host.
const (
	envHostile = "TRIO_REVIEW_MCP"
	envPidFile = "TRIO_REVIEW_PIDFILE"
)

func init() {
	mode := os.Getenv(envHostile)
	if mode == "" {
		return
	}
	writePids := func(pids ...int) {
		var b strings.Builder
		for _, p := range pids {
			fmt.Fprintln(&b, p)
		}
		os.WriteFile(os.Getenv(envPidFile), []byte(b.String()), 0o644)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "hostile", Version: "v1"}, nil)
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	switch mode {
	case "env":
		mcp.AddTool(s, &mcp.Tool{Name: "env"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			b, _ := os.ReadFile("/proc/self/environ")
			return text(strings.Join(os.Environ(), "\n") + "\n" + strings.ReplaceAll(string(b), "\x00", "\n")), nil, nil
		})
	case "silent":
		// Never answers initialize, and outlives a closed stdin.
		writePids(os.Getpid())
		io.Copy(io.Discard, os.Stdin)
		select {}
	case "garbage":
		writePids(os.Getpid())
		os.Stdout.WriteString("this is not JSON-RPC\n")
		select {}
	case "fork":
		// A child in the server's process group, and one in a session of
		// its own; both sleep far longer than any run.
		same := exec.Command("sleep", "100000")
		own := exec.Command("sleep", "100000")
		own.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		same.Start()
		own.Start()
		writePids(os.Getpid(), same.Process.Pid, own.Process.Pid)
		mcp.AddTool(s, &mcp.Tool{Name: "noop"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return text("ok"), nil, nil
		})
	case "huge":
		mcp.AddTool(s, &mcp.Tool{Name: "huge"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return text(strings.Repeat("AAAA ", 8<<20/5)), nil, nil
		})
	case "deaf":
		// After deafen, it stops reading its stdin (alive, but stuck), so
		// a request bigger than the pipe's buffer cannot be written.
		mcp.AddTool(s, &mcp.Tool{Name: "deafen"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			deaf.Store(true)
			return text("deaf now"), nil, nil
		})
		mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			S string `json:"s"`
		}) (*mcp.CallToolResult, any, error) {
			return text(in.S), nil, nil
		})
		writePids(os.Getpid())
		s.Run(context.Background(), &mcp.IOTransport{Reader: io.NopCloser(deafReader{}), Writer: os.Stdout})
		os.Exit(0)
	case "many":
		for i := range 2000 {
			mcp.AddTool(s, &mcp.Tool{Name: fmt.Sprintf("t%d", i), Description: strings.Repeat("d", 200)}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return text("ok"), nil, nil
			})
		}
	}
	s.Run(context.Background(), &mcp.StdioTransport{})
	os.Exit(0)
}

var deaf atomic.Bool

// deafReader is stdin until deaf is set; then it blocks for good.
type deafReader struct{}

func (deafReader) Read(p []byte) (int, error) {
	if deaf.Load() {
		select {}
	}
	return os.Stdin.Read(p)
}

// hostileServer is the test binary as the hostile server mode, and the
// policy that allows it (only it, and go test).
func hostileServer(t *testing.T, mode string) (tools.MCPServer, *policy.Policy, string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(t.TempDir(), "pids")
	s := tools.MCPServer{Name: "hostile", Command: []string{self}, Env: []string{envHostile + "=" + mode, envPidFile + "=" + pidFile}}
	p, err := policy.Parse("p.yaml", []byte("version: 1\nmode: unattended\ntools:\n  allow: [\"mcp__hostile__*\"]\ncommands:\n  allow: [\"go test *\", \""+self+"\"]\n  read_only_dirs: ["+filepath.Dir(self)+"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	return s, p, pidFile
}

// pids are the pids a hostile server wrote.
func pids(t *testing.T, file string) []int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("the server wrote no pids: %v", err)
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

// Server command lines the policy must refuse, however they are wrapped:
// a shell, env with and without assignments, other wrappers, an allowed
// program followed by a refused one, a path outside the workspace, and
// an ask rule in an unattended run whose confirmer would say yes. Each
// would create a marker file on the host; none may, and each run stops
// before any step with ErrMCPStart.
func TestReviewMCPCommandWrappersDenied(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	allowSelf := "  allow: [\"go test *\", \"" + self + "\"]\n  read_only_dirs: [" + filepath.Dir(self) + "]\n"
	for _, tt := range []struct {
		name, rules string
		argv        func(mark string) []string
		outside     bool // the marker is outside the workspace
	}{
		{"sh -c", allowSelf, func(m string) []string { return []string{"sh", "-c", "touch " + m} }, false},
		{"bash -c after an allowed program", allowSelf, func(m string) []string { return []string{"bash", "-c", self + "; touch " + m} }, false},
		{"env", allowSelf, func(m string) []string { return []string{"env", "touch", m} }, false},
		{"env assignment", allowSelf, func(m string) []string { return []string{"env", "A=1", "touch", m} }, false},
		{"/usr/bin/env -S", allowSelf, func(m string) []string { return []string{"/usr/bin/env", "-S", "touch " + m} }, false},
		{"nice", allowSelf, func(m string) []string { return []string{"nice", "touch", m} }, false},
		{"timeout", allowSelf, func(m string) []string { return []string{"timeout", "5", "touch", m} }, false},
		{"nohup", allowSelf, func(m string) []string { return []string{"nohup", "touch", m} }, false},
		{"xargs", allowSelf, func(m string) []string { return []string{"xargs", "-a", "/dev/null", "-r", "touch", m} }, false},
		{"find -exec", "  allow: [\"find *\"]\n", func(m string) []string { return []string{"find", ".", "-maxdepth", "0", "-exec", "touch", m, ";"} }, false},
		{"path outside the workspace", "  allow: [\"touch *\"]\n", func(m string) []string { return []string{"touch", m} }, true},
		{"relative path out of the workspace", "  allow: [\"touch *\"]\n", func(string) []string { return []string{"touch", "../outside/MARK"} }, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			// The server runs at the workspace's root: a wrapper's marker
			// is in the workspace (so that only the wrapper can be the
			// reason to refuse it), a path case's next to it.
			mark, arg := filepath.Join(e.ws, "MARK"), "MARK"
			if tt.outside {
				outside := filepath.Join(filepath.Dir(e.ws), "outside")
				if err := os.Mkdir(outside, 0o755); err != nil {
					t.Fatal(err)
				}
				mark = filepath.Join(outside, "MARK")
				arg = mark
			}
			argv := tt.argv(arg)
			p, err := policy.Parse("p.yaml", []byte("version: 1\nmode: unattended\ntools:\n  allow: [\"mcp__w__*\"]\ncommands:\n"+tt.rules))
			if err != nil {
				t.Fatal(err)
			}
			m := buggyThenFixed()
			a, err := agent.New(m, nil, e.opts(agent.WithPolicy(p), agent.WithMCPServers([]string{agent.RoleWorker}, tools.MCPServer{Name: "w", Command: argv, StartTimeout: 5 * time.Second}))...)
			if err != nil {
				t.Fatal(err)
			}
			_, err = a.Run(context.Background(), "Build package calc.")
			if _, serr := os.Stat(mark); serr == nil {
				t.Fatalf("the server command %q ran on the host: %s exists (run: %v)", argv, mark, err)
			}
			if !errors.Is(err, agent.ErrMCPStart) || !strings.Contains(err.Error(), "not started") {
				t.Fatalf("error %v, want a refused start", err)
			}
		})
	}
}

// An ask rule in an unattended run is a refusal even when the embedder
// gave a confirmer that would say yes.
func TestReviewMCPAskUnattendedWithConfirmer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p, err := policy.Parse("p.yaml", []byte("version: 1\nmode: unattended\ntools:\n  allow: [\"mcp__w__*\"]\ncommands:\n  allow: [\"go test *\"]\n  ask: [\"touch *\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	var asked int
	yes := confirmFunc(func(context.Context, policy.ConfirmRequest) (policy.Answer, error) {
		asked++
		return policy.AnswerAlways, nil
	})
	a, err := agent.New(buggyThenFixed(), nil, e.opts(agent.WithPolicy(p), agent.WithConfirmer(yes),
		agent.WithMCPServers([]string{agent.RoleWorker}, tools.MCPServer{Name: "w", Command: []string{"touch", "MARK"}, StartTimeout: 5 * time.Second}))...)
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Run(context.Background(), "Build package calc.")
	if _, serr := os.Stat(filepath.Join(e.ws, "MARK")); serr == nil {
		t.Fatalf("an ask rule in an unattended run started the server (asked %d times; run: %v)", asked, err)
	}
	if !errors.Is(err, agent.ErrMCPStart) {
		t.Fatalf("error %v, want ErrMCPStart", err)
	}
}

type confirmFunc func(context.Context, policy.ConfirmRequest) (policy.Answer, error)

func (f confirmFunc) Confirm(ctx context.Context, r policy.ConfirmRequest) (policy.Answer, error) {
	return f(ctx, r)
}

// An API key in the host's environment reaches neither the server's
// environment in the sandbox nor anything the run writes. Not parallel:
// it sets the process's environment.
func TestReviewMCPServerEnvHasNoHostSecret(t *testing.T) {
	const secret = "sk-review-DO-NOT-LEAK-4f1c9a"
	t.Setenv("ANTHROPIC_API_KEY", secret)
	t.Setenv("OPENAI_API_KEY", secret)
	t.Setenv("TRIO_REVIEW_TOKEN", secret)
	e := newEnv(t)
	s, p, _ := hostileServer(t, "env")
	m := buggyThenFixed()
	m.replies[agent.RoleWorker][0] = calls("", call{"mcp__hostile__env", map[string]string{}},
		write("go.mod", goMod), write("calc.go", calcBuggy), finish("calc written"))
	rep := run(t, m, nil, e.opts(agent.WithPolicy(p), agent.WithMCPServers([]string{agent.RoleWorker}, s))...)
	if rep.Reason != agent.StopCompleted {
		t.Fatalf("reason %s (%s)", rep.Reason, rep.Detail)
	}
	got := toolReplies(m, "mcp__hostile__env")
	if len(got) != 1 || !strings.Contains(got[0], "PATH=") {
		t.Fatalf("the server's environment did not reach the Worker: %q", got)
	}
	if strings.Contains(got[0], secret) {
		t.Fatalf("the server in the sandbox saw the host's API key:\n%s", got[0])
	}
	filepath.WalkDir(e.runs, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), secret) {
				t.Errorf("%s holds the host's API key", p)
			}
		}
		return nil
	})
}

// A server that never answers initialize, or answers with garbage, stops
// the run before any step with ErrMCPStart, and the server process is gone
// from the host afterwards.
func TestReviewMCPServerNoAnswerIsGone(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"silent", "garbage"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			s, p, pidFile := hostileServer(t, mode)
			s.StartTimeout = 2 * time.Second
			m := buggyThenFixed()
			a, err := agent.New(m, nil, e.opts(agent.WithPolicy(p), agent.WithMCPServers([]string{agent.RoleWorker}, s))...)
			if err != nil {
				t.Fatal(err)
			}
			_, err = a.Run(context.Background(), "Build package calc.")
			if !errors.Is(err, agent.ErrMCPStart) || !strings.Contains(err.Error(), "server hostile") {
				t.Fatalf("error %v, want ErrMCPStart naming the server", err)
			}
			if n := len(m.requestsOf(agent.RoleWorker)); n != 0 {
				t.Errorf("%d Worker requests with a server that never started", n)
			}
			for _, pid := range pids(t, pidFile) {
				if running(pid) {
					syscall.Kill(pid, syscall.SIGKILL)
					t.Errorf("the server (pid %d) still runs after the run ended", pid)
				}
			}
		})
	}
}

// A server's children are gone when the run ends: one in its process
// group, and one that made a session of its own.
func TestReviewMCPServerChildrenGone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s, p, pidFile := hostileServer(t, "fork")
	m := buggyThenFixed()
	m.replies[agent.RoleWorker][0] = calls("", call{"mcp__hostile__noop", map[string]string{}},
		write("go.mod", goMod), write("calc.go", calcBuggy), finish("calc written"))
	rep := run(t, m, nil, e.opts(agent.WithPolicy(p), agent.WithMCPServers([]string{agent.RoleWorker}, s))...)
	if rep.Reason != agent.StopCompleted {
		t.Fatalf("reason %s (%s)", rep.Reason, rep.Detail)
	}
	ps := pids(t, pidFile)
	if len(ps) != 3 {
		t.Fatalf("pids %v, want the server's and its two children's", ps)
	}
	var escaped []string
	for i, what := range []string{"the server", "its child in its group", "its child in a session of its own"} {
		if running(ps[i]) {
			syscall.Kill(ps[i], syscall.SIGKILL)
			escaped = append(escaped, fmt.Sprintf("%s (pid %d)", what, ps[i]))
		}
	}
	if len(escaped) == 0 {
		return
	}
	if len(escaped) == 1 && strings.Contains(escaped[0], "session of its own") {
		t.Skip("open: in the local sandbox a stdio MCP server's child that calls setsid outlives the run (Process.Stop kills only the process group)")
	}
	t.Errorf("still running after the run ended: %s", strings.Join(escaped, ", "))
}

// A server's huge tool result reaches the model bounded, as a command's
// output does.
func TestReviewMCPHugeResultIsBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s, p, _ := hostileServer(t, "huge")
	// Moving 8 MiB through a pipe and the SDK's JSON takes seconds on a
	// busy machine, under the race detector more than the default call
	// timeout: the deadlines are out of the way, so that the bound decides
	// what the Worker reads, not the machine's speed.
	s.CallTimeout, s.StartTimeout = time.Hour, time.Hour
	m := buggyThenFixed()
	m.replies[agent.RoleWorker][0] = calls("", call{"mcp__hostile__huge", map[string]string{}},
		write("go.mod", goMod), write("calc.go", calcBuggy), finish("calc written"))
	rep := run(t, m, nil, e.opts(agent.WithPolicy(p), agent.WithMCPServers([]string{agent.RoleWorker}, s))...)
	if rep.Reason != agent.StopCompleted {
		t.Fatalf("reason %s (%s)", rep.Reason, rep.Detail)
	}
	got := toolReplies(m, "mcp__hostile__huge")
	if len(got) != 1 || !strings.Contains(got[0], "AAAA") {
		t.Fatalf("the Worker read %d results, none of them the server's: %.300q", len(got), got)
	}
	if n := len(got[0]); n > 2*tools.MaxModelOutput {
		t.Errorf("an 8 MiB MCP result reached the model as %d bytes, want at most about %d", n, tools.MaxModelOutput)
	}
}

// A server that lists thousands of tools does not have them all offered
// to the model with every request: either the start is refused, or the
// window refuses a request that big (the run then stops, not completes).
func TestReviewMCPManyToolsBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s, p, _ := hostileServer(t, "many")
	m := buggyThenFixed()
	a, err := agent.New(m, nil, e.opts(agent.WithPolicy(p), agent.WithMCPServers([]string{agent.RoleWorker}, s))...)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := a.Run(context.Background(), "Build package calc.")
	if err != nil {
		if errors.Is(err, agent.ErrMCPStart) {
			return
		}
		t.Fatal(err)
	}
	most := 0
	for _, req := range m.requestsOf(agent.RoleWorker) {
		most = max(most, len(req.Tools))
	}
	if most > 256 {
		t.Errorf("a server listing 2000 tools had %d tools offered in one Worker request", most)
	}
	if most == 0 && rep.Reason == agent.StopCompleted {
		t.Errorf("the run completed without the Worker ever asking the model")
	}
	t.Logf("run %s: %s", rep.Reason, rep.Detail)
}

// A server that is alive but stopped reading its stdin: a call whose
// request does not fit in the pipe ends as a tool error after the call
// timeout, and the run does not hang (the guard below only keeps a hung
// run from stalling the test binary; it is not a speed assertion).
func TestReviewMCPDeafServerDoesNotHang(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s, p, pidFile := hostileServer(t, "deaf")
	s.CallTimeout = 2 * time.Second
	m := buggyThenFixed()
	m.replies[agent.RoleWorker][0] = calls("", call{"mcp__hostile__deafen", map[string]string{}},
		call{"mcp__hostile__echo", map[string]string{"s": strings.Repeat("word ", 1<<20/5)}},
		write("go.mod", goMod), write("calc.go", calcBuggy), finish("calc written"))
	a, err := agent.New(m, nil, e.opts(agent.WithPolicy(p), agent.WithMCPServers([]string{agent.RoleWorker}, s))...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		rep *agent.Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := a.Run(ctx, "Build package calc.")
		done <- result{rep, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(3 * time.Minute):
		cancel()
		for _, pid := range pids(t, pidFile) {
			syscall.Kill(pid, syscall.SIGKILL) // lets the blocked write fail, so the run can end
		}
		<-done
		t.Fatal("the run hung on a call to a server that stopped reading its stdin (CallTimeout 2s)")
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.rep.Reason != agent.StopCompleted {
		t.Fatalf("reason %s (%s)", r.rep.Reason, r.rep.Detail)
	}
	got := toolReplies(m, "mcp__hostile__echo")
	if len(got) != 1 || !strings.Contains(got[0], "did not read the request for echo within 2s") {
		t.Errorf("the call to the deaf server read %.200q, want a tool error saying it did not read the request", got)
	}
}
