package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/tools"
)

// envMCPServer makes the test binary a stdio MCP server (TestMain).
const envMCPServer = "TRIO_AGENT_TEST_MCP_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(envMCPServer) == "1" {
		s := mcp.NewServer(&mcp.Implementation{Name: "tickets", Version: "v1"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "lookup", Description: "Look a ticket up."}, func(_ context.Context, _ *mcp.CallToolRequest, in lookupIn) (*mcp.CallToolResult, any, error) {
			// HOME and the pid show where and as what the server runs.
			out := "ticket " + in.ID + ": Add must add; home=" + os.Getenv("HOME") + " pid=" + strconv.Itoa(os.Getpid())
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: out}}}, nil, nil
		})
		mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exit."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			os.Stderr.WriteString("tickets: database gone\n")
			os.Exit(3)
			return nil, nil, nil
		})
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// ticketServer is the test binary as a stdio server, declared without a
// sandbox of its own: the run starts it in its sandbox. rule is the
// policy text that allows its command line.
func ticketServer(t *testing.T) (tools.MCPServer, string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s := tools.MCPServer{Name: "tickets", Command: []string{self}, Env: []string{envMCPServer + "=1"}}
	return s, "  allow: [\"go test *\", \"" + self + "\"]\n  read_only_dirs: [" + filepath.Dir(self) + "]\n"
}

// toolReplies are the Worker's tool results for name, in order.
func toolReplies(m *fakeModel, name string) []string {
	var out []string
	seen := map[string]bool{}
	for _, req := range m.requestsOf(agent.RoleWorker) {
		for _, msg := range req.Messages {
			if msg.Role == llm.RoleTool && msg.Name == name && !seen[msg.ToolCallID] {
				seen[msg.ToolCallID] = true
				out = append(out, msg.Content)
			}
		}
	}
	return out
}

// End to end, a stdio MCP server declared without host runs in the run's
// (local) sandbox: the policy's command rules allowed its start and the
// audit says so; the Worker calls its tool through the gate; the server
// saw the sandbox's environment, not the host's; it is gone when the run
// ends.
func TestRunMCPServerInSandbox(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s, rules := ticketServer(t)
	p, err := policy.Parse("p.yaml", []byte("version: 1\nmode: unattended\ntools:\n  allow: [\"mcp__tickets__*\"]\ncommands:\n"+rules))
	if err != nil {
		t.Fatal(err)
	}
	m := buggyThenFixed()
	m.replies[agent.RoleWorker][0] = calls("", call{"mcp__tickets__lookup", map[string]string{"id": "T-1"}},
		write("go.mod", goMod), write("calc.go", calcBuggy), finish("calc written"))
	var events []agent.Event
	rep := run(t, m, nil, e.opts(agent.WithPolicy(p), agent.WithMCPServers([]string{agent.RoleWorker}, s),
		agent.WithObserver(func(ev agent.Event) { events = append(events, ev) }))...)
	if rep.Reason != agent.StopCompleted {
		t.Fatalf("reason %s (%s)", rep.Reason, rep.Detail)
	}
	got := toolReplies(m, "mcp__tickets__lookup")
	if len(got) != 1 || !strings.Contains(got[0], "ticket T-1: Add must add") {
		t.Fatalf("the Worker read %q", got)
	}
	if home := os.Getenv("HOME"); !strings.Contains(got[0], "home="+os.TempDir()) || (home != "" && strings.Contains(got[0], "home="+home+" ")) {
		t.Errorf("the server's HOME is not the sandbox's private one: %s", got[0])
	}
	audit := readFile(t, filepath.Join(e.runs, "run", agent.AuditFile))
	var start string
	for _, line := range strings.Split(audit, "\n") {
		if strings.Contains(line, `"tool":"mcp__tickets"`) {
			start = line
		}
	}
	if !strings.Contains(start, `"verdict":"allow"`) || !strings.Contains(start, "commands.allow") || !strings.Contains(start, `"outcome":"ok"`) {
		t.Errorf("audit's record of the server's start %q, want allowed by commands.allow", start)
	}
	if !strings.Contains(audit, `"tool":"mcp__tickets__lookup"`) {
		t.Errorf("audit lacks the tool call:\n%s", audit)
	}
	connected := false
	for _, ev := range events {
		connected = connected || strings.Contains(ev.Message, "MCP server tickets connected in the local sandbox, which does NOT isolate it")
	}
	if !connected {
		t.Error("no event says where the server runs")
	}
	_, pid, _ := strings.Cut(got[0], "pid=")
	pid = strings.TrimRightFunc(pid, func(r rune) bool { return r < '0' || r > '9' })
	if n, err := strconv.Atoi(pid); err != nil || running(n) {
		t.Errorf("the server (pid %q) still runs after the run ended", pid)
	}
	for _, req := range m.requestsOf(agent.RoleCritic) {
		for _, tl := range req.Tools {
			if strings.Contains(mustJSON(tl), "mcp__") {
				t.Error("the Critic was offered an MCP tool given to the Worker only")
			}
		}
	}
}

// A server whose command line the policy does not allow never starts:
// the run fails before any step with an error naming the server and the
// rule, and the audit has the denial. Unattended, ask is deny.
func TestRunMCPServerDenied(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, rules, rule string }{
		{"unlisted", "  allow: [\"go test *\"]\n", "default-deny"},
		{"denied", "  allow: [\"go test *\"]\n  deny: [\"%s\"]\n", "commands.deny"},
		{"ask unattended", "  allow: [\"go test *\"]\n  ask: [\"%s\"]\n", "commands.ask"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			s, _ := ticketServer(t)
			rules := strings.ReplaceAll(tt.rules, "%s", s.Command[0]) + "  read_only_dirs: [" + filepath.Dir(s.Command[0]) + "]\n"
			p, err := policy.Parse("p.yaml", []byte("version: 1\nmode: unattended\ntools:\n  allow: [\"mcp__tickets__*\"]\ncommands:\n"+rules))
			if err != nil {
				t.Fatal(err)
			}
			m := buggyThenFixed()
			a, err := agent.New(m, nil, e.opts(agent.WithPolicy(p), agent.WithMCPServers([]string{agent.RoleWorker}, s))...)
			if err != nil {
				t.Fatal(err)
			}
			_, err = a.Run(context.Background(), "Build package calc.")
			var se *agent.MCPStartError
			if !errors.Is(err, agent.ErrMCPStart) || !errors.As(err, &se) || se.Server != "tickets" ||
				!strings.Contains(err.Error(), "server tickets: not started") || !strings.Contains(err.Error(), tt.rule) {
				t.Fatalf("error %v, want a start-up error naming the server and %s", err, tt.rule)
			}
			if n := len(m.requestsOf(agent.RolePlanner)) + len(m.requestsOf(agent.RoleWorker)); n != 0 {
				t.Errorf("%d model requests before the server started", n)
			}
			audit := readFile(t, filepath.Join(e.runs, "run", agent.AuditFile))
			if !strings.Contains(audit, `"tool":"mcp__tickets"`) || !strings.Contains(audit, `"outcome":"denied"`) || !strings.Contains(audit, tt.rule) {
				t.Errorf("audit lacks the denied start:\n%s", audit)
			}
		})
	}
}

// A server that crashes mid-run gives the Worker tool errors that say it
// ended and what it wrote on stderr, and the run goes on.
func TestRunMCPServerCrashes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s, rules := ticketServer(t)
	p, err := policy.Parse("p.yaml", []byte("version: 1\nmode: unattended\ntools:\n  allow: [\"mcp__tickets__*\"]\ncommands:\n"+rules))
	if err != nil {
		t.Fatal(err)
	}
	m := buggyThenFixed()
	m.replies[agent.RoleWorker][0] = calls("", call{"mcp__tickets__crash", map[string]string{}}, call{"mcp__tickets__lookup", map[string]string{"id": "T-2"}},
		write("go.mod", goMod), write("calc.go", calcBuggy), finish("calc written"))
	rep := run(t, m, nil, e.opts(agent.WithPolicy(p), agent.WithMCPServers([]string{agent.RoleWorker}, s))...)
	if rep.Reason != agent.StopCompleted {
		t.Fatalf("reason %s (%s)", rep.Reason, rep.Detail)
	}
	crash := toolReplies(m, "mcp__tickets__crash")
	if len(crash) != 1 || !strings.Contains(crash[0], "MCP server tickets failed") || !strings.Contains(crash[0], "exited with code 3") ||
		!strings.Contains(crash[0], "tickets: database gone") {
		t.Errorf("the crash's tool result %q, want a tool error with the exit and the stderr", crash)
	}
	after := toolReplies(m, "mcp__tickets__lookup")
	if len(after) != 1 || !strings.Contains(after[0], "MCP server tickets") || strings.Contains(after[0], "Add must add") {
		t.Errorf("a call after the crash read %q, want a tool error", after)
	}
}

// noStarter is a sandbox that cannot start long-lived processes.
type noStarter struct{ sandbox.Sandbox }

// A stdio server needs a sandbox that can start it: one that cannot is an
// error before any step.
func TestRunMCPServerNeedsStarter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	l, err := sandbox.NewLocal(e.ws, sandbox.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s, rules := ticketServer(t)
	p, _ := policy.Parse("p.yaml", []byte("version: 1\nmode: unattended\ncommands:\n"+rules))
	m := buggyThenFixed()
	a, err := agent.New(m, nil, agent.WithWorkspace(e.ws), agent.WithRunsDir(e.runs), agent.WithRunID("run"),
		agent.WithSandbox(noStarter{l}), agent.WithPolicy(p), agent.WithMCPServers([]string{agent.RoleWorker}, s))
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Run(context.Background(), "Build package calc.")
	if !errors.Is(err, agent.ErrMCPStart) || !strings.Contains(err.Error(), "cannot start a long-lived process") {
		t.Fatalf("error %v, want one saying the sandbox cannot start the server", err)
	}
	if n := len(m.requestsOf(agent.RolePlanner)); n != 0 {
		t.Errorf("%d Planner requests", n)
	}
}

// running reports whether pid is a live process (not gone, not a zombie).
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// A run whose server the policy refused keeps its run folder; Resume with
// a policy that allows the command starts the server in the new session's
// sandbox, and the Worker calls it.
func TestResumeStartsMCPServer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s, rules := ticketServer(t)
	deny, err := policy.Parse("p.yaml", []byte("version: 1\nmode: unattended\ntools:\n  allow: [\"mcp__tickets__*\"]\ncommands:\n  allow: [\"go test *\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(buggyThenFixed(), nil, e.opts(agent.WithPolicy(deny), agent.WithMCPServers([]string{agent.RoleWorker}, s))...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background(), "Build package calc with Add(a, b int) int."); !errors.Is(err, agent.ErrMCPStart) {
		t.Fatalf("first session: %v, want ErrMCPStart", err)
	}
	allow, err := policy.Parse("p.yaml", []byte("version: 1\nmode: unattended\ntools:\n  allow: [\"mcp__tickets__*\"]\ncommands:\n"+rules))
	if err != nil {
		t.Fatal(err)
	}
	m := buggyThenFixed()
	m.replies[agent.RoleWorker][0] = calls("", call{"mcp__tickets__lookup", map[string]string{"id": "T-3"}},
		write("go.mod", goMod), write("calc.go", calcBuggy), finish("calc written"))
	rep, err := agent.Resume(context.Background(), filepath.Join(e.runs, "run"), m, nil,
		local, agent.WithPolicy(allow), agent.WithMCPServers([]string{agent.RoleWorker}, s))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Reason != agent.StopCompleted {
		t.Fatalf("reason %s (%s)", rep.Reason, rep.Detail)
	}
	if got := toolReplies(m, "mcp__tickets__lookup"); len(got) != 1 || !strings.Contains(got[0], "ticket T-3") {
		t.Errorf("the Worker read %q after resume", got)
	}
	audit := readFile(t, filepath.Join(e.runs, "run", agent.AuditFile))
	if strings.Count(audit, `"tool":"mcp__tickets"`) != 2 || !strings.Contains(audit, `"outcome":"denied"`) {
		t.Errorf("audit should hold both starts, the denied and the allowed:\n%s", audit)
	}
}
