package summarizer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/summarizer"
)

// counterFor shares one Counter per model across tests: loading the BPE
// ranks is the slow part and the Counter is safe for concurrent use. Tests
// that calibrate build their own.
var counterFor = sync.OnceValues(func() (*summarizer.Counter, error) { return summarizer.NewCounter("gpt-4o") })

func counter(tb testing.TB) *summarizer.Counter {
	tb.Helper()
	c, err := counterFor()
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// replyFunc produces the summarizer's reply content for one call; nil
// means a good summary built from the request.
type replyFunc func(call int, req llm.Request) (string, error)

// fakeSummarizer is an llm.Model that answers summary requests: by default
// with a valid structured summary that copies the tracked errors verbatim
// (as a good model would), or as the script says. It records every request
// and checks that none exceeds the context limit.
type fakeSummarizer struct {
	t       testing.TB
	counter *summarizer.Counter
	limit   int

	mu       sync.Mutex
	calls    int
	script   []replyFunc
	requests []llm.Request
	overs    []string
}

func (f *fakeSummarizer) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.requests = append(f.requests, req)
	if req.Agent != summarizer.AgentName {
		f.overs = append(f.overs, "agent "+req.Agent)
	}
	n := 0
	if f.limit > 0 { // a benchmark skips the check: it is the test's cost, not the window's
		n = f.counter.CountMessages(req.Messages) + f.counter.Count(llm.SchemaPrompt(req.Output))
	}
	if f.limit > 0 && n+req.MaxTokens > f.limit {
		f.overs = append(f.overs, fmt.Sprintf("call %d: %d prompt + %d reply > %d", f.calls, n, req.MaxTokens, f.limit))
	}
	var fn replyFunc
	if i := f.calls - 1; i < len(f.script) {
		fn = f.script[i]
	}
	if fn == nil {
		fn = goodSummary
	}
	content, err := fn(f.calls, req)
	if err != nil {
		return llm.Response{}, err
	}
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: content},
		Usage: llm.Usage{PromptTokens: n, CompletionTokens: f.counter.Count(content)}}, nil
}

func (f *fakeSummarizer) numCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func (f *fakeSummarizer) check() {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, o := range f.overs {
		f.t.Errorf("summarizer request over budget: %s", o)
	}
}

// goodSummary builds a valid summary from a request: the tracked errors
// are copied verbatim and progress names the call, so summaries differ.
func goodSummary(call int, req llm.Request) (string, error) {
	user := req.Messages[1].Content
	var errs []string
	if i := strings.Index(user, "## Errors tracked as unresolved"); i >= 0 {
		sec := user[i:]
		if j := strings.Index(sec, "\n## Transcript"); j >= 0 {
			sec = sec[:j]
		}
		for line := range strings.Lines(sec) {
			if e, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "- "); ok {
				errs = append(errs, e)
			}
		}
	}
	s := summarizer.Summary{
		Progress:         fmt.Sprintf("Summary %d: the parser and the CLI are in place; tests are being fixed.", call),
		CompletedSteps:   []string{"step 1: scaffold the module", fmt.Sprintf("step %d: work folded by summary %d", call+1, call)},
		FilesChanged:     []string{"parser.go: tokenizer and parser", "main.go: CLI entry point"},
		UnresolvedErrors: errs,
		Decisions:        []string{"use the standard library only"},
		NextSteps:        []string{"make the parser tests pass", "write the README"},
	}
	b, err := json.Marshal(s)
	return string(b), err
}

func constReply(content string) replyFunc {
	return func(int, llm.Request) (string, error) { return content, nil }
}

func failReply(int, llm.Request) (string, error) { return "", errors.New("HTTP 500 from the endpoint") }

func testTools() []llm.ToolDef {
	def := func(name, desc string) llm.ToolDef {
		return llm.ToolDef{
			Name:        name,
			Description: desc,
			// Keys out of order: the count does not depend on it.
			Parameters: json.RawMessage(`{"type":"object","required":["path"],"properties":{"path":{"type":"string","description":"workspace-relative path"}}}`),
		}
	}
	return []llm.ToolDef{
		def("read_file", "Read a file of the workspace."),
		def("write_file", "Write a file of the workspace."),
		def("run_tests", "Run the project's tests."),
	}
}

var (
	goal = llm.Message{Role: llm.RoleUser, Content: "GOAL: build a calculator CLI in Go with a parser, an evaluator and tests."}
	plan = llm.Message{Role: llm.RoleUser, Content: "PLAN:\n1. scaffold the module\n2. write parser.go\n3. write eval.go\n4. write main.go\n5. tests pass"}
	sys  = llm.Message{Role: llm.RoleSystem, Content: "You are the Worker. Carry out the plan step by step with the tools."}
)

// codeText returns code-like text of about n bytes, varied by seed.
func codeText(seed, n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "func handler%d_%d(ctx context.Context, req *Request) (*Response, error) {\n", seed, i)
		fmt.Fprintf(&b, "\tif err := validate(req.Field%d); err != nil {\n\t\treturn nil, fmt.Errorf(\"field %d: %%w\", err)\n\t}\n", i%7, i)
		fmt.Fprintf(&b, "\tresult := compute(req.Values[%d:], %d) // keep the %d-th slice\n\treturn &Response{Value: result}, nil\n}\n\n", i%5, seed*i, i)
	}
	return b.String()
}

// failingOutput is a go test output with two failures of turn t.
func failingOutput(t int) string {
	return fmt.Sprintf("=== RUN   TestParse%[1]d\n    parser_test.go:%[2]d: Parse(\"1+%[1]d\") = %[1]d, want %[3]d\n--- FAIL: TestParse%[1]d (0.00s)\n"+
		"=== RUN   TestEval%[1]d\n--- PASS: TestEval%[1]d (0.00s)\nFAIL\nexit status 1\nFAIL\tcalc\t0.0%[1]ds\n", t, 10+t, t+1)
}

// turn is one scripted Worker turn: the assistant's call and its result.
func turn(t int, outputs []string) []llm.Message {
	id := fmt.Sprintf("call_%d", t)
	switch t % 4 {
	case 0:
		return []llm.Message{
			{Role: llm.RoleAssistant, Content: fmt.Sprintf("Turn %d: writing the file.", t),
				ToolCalls: []llm.ToolCall{{ID: id, Name: "write_file", Arguments: fmt.Sprintf(`{"path":"f%d.go","content":%q}`, t, head(outputs[(t+1)%len(outputs)], 2000))}}},
			{Role: llm.RoleTool, ToolCallID: id, Name: "write_file", Content: fmt.Sprintf("wrote f%d.go (2000 bytes)", t)},
		}
	default:
		return []llm.Message{
			{Role: llm.RoleAssistant, Content: fmt.Sprintf("Turn %d: reading.", t),
				ToolCalls: []llm.ToolCall{{ID: id, Name: "read_file", Arguments: fmt.Sprintf(`{"path":"f%d.go"}`, t%17)}}},
			{Role: llm.RoleTool, ToolCallID: id, Name: "read_file", Content: outputs[t%len(outputs)]},
		}
	}
}

// checkStructure fails if a tool message is not answered to an assistant
// call right before it, or if an assistant call has no result.
func checkStructure(t testing.TB, msgs []llm.Message) {
	t.Helper()
	pending := map[string]bool{}
	for i, m := range msgs {
		switch m.Role {
		case llm.RoleAssistant:
			if len(pending) > 0 {
				t.Fatalf("message %d: assistant message while calls %v have no result", i, pending)
			}
			for _, tc := range m.ToolCalls {
				pending[tc.ID] = true
				if !json.Valid([]byte(tc.Arguments)) {
					t.Fatalf("message %d: arguments of %s are not valid JSON: %.80s", i, tc.Name, tc.Arguments)
				}
			}
		case llm.RoleTool:
			if !pending[m.ToolCallID] {
				t.Fatalf("message %d: tool result %s has no call before it", i, m.ToolCallID)
			}
			delete(pending, m.ToolCallID)
		default:
			if len(pending) > 0 {
				t.Fatalf("message %d: %s message while calls %v have no result", i, m.Role, pending)
			}
		}
	}
}

func joined(msgs []llm.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(m.Content)
		b.WriteString("\n")
		for _, tc := range m.ToolCalls {
			b.WriteString(tc.Arguments)
			b.WriteString("\n")
		}
	}
	return b.String()
}

func kinds(evs []summarizer.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, string(e.Kind))
	}
	return out
}

func head(s string, n int) string { return s[:min(n, len(s))] }
