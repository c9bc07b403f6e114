package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/tools"
)

// fakeModel replays replies per role, like the scripted model, with a
// cursor that survives a resume.
type fakeModel struct {
	mu      sync.Mutex
	replies map[string][]llm.Response
	pos     map[string]int
	// requests records every request's role, for assertions.
	requests []llm.Request
	// noUsage makes replies report no token usage, like endpoints that
	// omit it; otherwise a reply without usage reports 100 + 10 tokens.
	noUsage bool
}

func newFake() *fakeModel {
	return &fakeModel{replies: map[string][]llm.Response{}, pos: map[string]int{}}
}

func (m *fakeModel) add(role string, rs ...llm.Response) *fakeModel {
	m.replies[role] = append(m.replies[role], rs...)
	return m
}

func (m *fakeModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return llm.Response{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests = append(m.requests, req)
	i := m.pos[req.Agent]
	if i >= len(m.replies[req.Agent]) {
		return llm.Response{}, fmt.Errorf("fake model: role %s asked for reply %d, script has %d", req.Agent, i+1, len(m.replies[req.Agent]))
	}
	m.pos[req.Agent] = i + 1
	r := m.replies[req.Agent][i]
	if r.Usage == (llm.Usage{}) && !m.noUsage {
		r.Usage = llm.Usage{PromptTokens: 100, CompletionTokens: 10}
	}
	return r, nil
}

func (m *fakeModel) Cursor() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := map[string]int{}
	for k, v := range m.pos {
		c[k] = v
	}
	return c
}

func (m *fakeModel) Seek(c map[string]int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pos = map[string]int{}
	for k, v := range c {
		m.pos[k] = v
	}
	return nil
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func text(s string) llm.Response {
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: s}, FinishReason: "stop"}
}

var callSeq atomic.Int64

// calls is a reply with tool calls; each call is name then args (any JSON
// value, or a raw string for malformed arguments).
func calls(content string, cs ...call) llm.Response {
	msg := llm.Message{Role: llm.RoleAssistant, Content: content}
	for _, c := range cs {
		n := callSeq.Add(1)
		args, ok := c.args.(string)
		if !ok {
			args = mustJSON(c.args)
		}
		msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: fmt.Sprintf("call_%d", n), Name: c.name, Arguments: args})
	}
	return llm.Response{Message: msg, FinishReason: "tool_calls"}
}

// withUsage is r reporting the given token usage.
func withUsage(r llm.Response, prompt, completion int) llm.Response {
	r.Usage = llm.Usage{PromptTokens: prompt, CompletionTokens: completion}
	return r
}

type call struct {
	name string
	args any
}

func write(path, content string) call {
	return call{"write_file", map[string]string{"path": path, "content": content}}
}

func edit(path, old, new string) call {
	return call{"edit_file", map[string]string{"path": path, "old_text": old, "new_text": new}}
}

func finish(note string) call { return call{"finish_step", map[string]string{"note": note}} }

func runTests() call { return call{"run_tests", map[string]string{"command": "go test ./..."}} }

// The small project most tests build: module calc with Add, and an
// acceptance test that Add adds.
const (
	goMod     = "module calc\n\ngo 1.22\n"
	calcBuggy = "// Package calc adds.\npackage calc\n\n// Add returns a plus b.\nfunc Add(a, b int) int { return a - b }\n"
	calcGood  = "// Package calc adds.\npackage calc\n\n// Add returns a plus b.\nfunc Add(a, b int) int { return a + b }\n"
	calcTest  = "package acceptance\n\nimport (\n\t\"testing\"\n\n\t\"calc\"\n)\n\nfunc TestAdd(t *testing.T) {\n\tfor _, c := range []struct{ a, b, want int }{{2, 3, 5}, {0, 0, 0}, {-1, 1, 0}} {\n\t\tif got := calc.Add(c.a, c.b); got != c.want {\n\t\t\tt.Errorf(\"Add(%d, %d) = %d, want %d\", c.a, c.b, got, c.want)\n\t\t}\n\t}\n}\n"
)

func calcPlan() llm.Response {
	return text(mustJSON(map[string]any{
		"steps": []map[string]any{{
			"title": "calc package", "description": "Write go.mod and calc.go with Add.",
			"files": []string{"go.mod", "calc.go"}, "expected": "calc.Add adds", "acceptance": "go test passes",
		}},
		"risks": []string{}, "test_command": "go test ./...", "cli": []string{}, "tests_dir": "acceptance",
	}))
}

func suite(files map[string]string) llm.Response {
	var fs []map[string]string
	for p, c := range files {
		fs = append(fs, map[string]string{"path": p, "content": c})
	}
	return text(mustJSON(map[string]any{"files": fs, "notes": "basic and edge cases"}))
}

func calcSuite() llm.Response {
	return suite(map[string]string{"acceptance/calc_test.go": calcTest})
}

func failing(testID string) llm.Response {
	return text(mustJSON(map[string]any{
		"verdict": "fail",
		"failures": []map[string]string{{"test_id": testID, "location": "acceptance/calc_test.go:12",
			"expected": "5", "actual": "-1", "kind": "assertion"}},
		"suspect_tests": []any{}, "summary": "Add subtracts instead of adding.",
	}))
}

// env is one test's folders.
type env struct {
	runs, ws string
}

func newEnv(t *testing.T) env {
	t.Helper()
	d := t.TempDir()
	e := env{runs: filepath.Join(d, "runs"), ws: filepath.Join(d, "ws")}
	if err := os.MkdirAll(e.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	return e
}

// local is the sandbox of the tests that do not test sandboxes; Resume
// takes it again (the default, auto, would use containerd when it answers,
// and parallel tests share the run id "run", hence the container's name).
var local = agent.WithSandboxConfig(agent.SandboxConfig{Kind: agent.SandboxLocal})

// opts are a test's folders, with the local sandbox so that the tests do
// the same whether containerd is reachable or not (sandbox_test.go covers
// the other kinds).
func (e env) opts(extra ...agent.Option) []agent.Option {
	return append([]agent.Option{agent.WithWorkspace(e.ws), agent.WithRunsDir(e.runs), agent.WithRunID("run"), local}, extra...)
}

func run(t *testing.T, m llm.Model, reg *tools.Registry, opts ...agent.Option) *agent.Report {
	t.Helper()
	a, err := agent.New(m, reg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := a.Run(context.Background(), "Build package calc with Add(a, b int) int.")
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// requestsOf returns the requests a role made.
func (m *fakeModel) requestsOf(role string) []llm.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []llm.Request
	for _, r := range m.requests {
		if r.Agent == role {
			out = append(out, r)
		}
	}
	return out
}
