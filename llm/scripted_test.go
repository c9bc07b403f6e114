package llm_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/trioagent/trio/llm"
)

const demoScript = `# a small script
roles:
  planner:
    - output: {steps: [{id: s1, description: write main}], test_command: "go test ./..."}
      usage: {prompt_tokens: 50, completion_tokens: 10}
  worker:
    - content: "I'll write the file"
      tool_calls:
        - {name: write_file, arguments: {path: main.go, content: "package main\n"}}
        - {name: read_file, arguments_raw: '{"path": '}
    - expect: "wrote main.go"
      tool_calls: [{name: finish_step, arguments: {note: done}}]
    - content: "out of words"
      finish_reason: length
`

func mustScript(t *testing.T) *llm.Scripted {
	t.Helper()
	s, err := llm.ParseScript("demo.yaml", []byte(demoScript))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func turn(agent string, msgs ...llm.Message) llm.Request {
	return llm.Request{Agent: agent, Messages: msgs}
}

func TestScriptedReplays(t *testing.T) {
	t.Parallel()
	s := mustScript(t)
	ctx := context.Background()

	resp, err := s.Complete(ctx, turn("planner", llm.Message{Role: llm.RoleUser, Content: "goal"}))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"steps":[{"description":"write main","id":"s1"}],"test_command":"go test ./..."}`; resp.Message.Content != want {
		t.Errorf("planner output = %s, want %s", resp.Message.Content, want)
	}
	if resp.Usage != (llm.Usage{PromptTokens: 50, CompletionTokens: 10}) || resp.FinishReason != "stop" {
		t.Errorf("planner resp = %+v", resp)
	}

	resp, err = s.Complete(ctx, turn("worker", llm.Message{Role: llm.RoleUser, Content: "step 1"}))
	if err != nil {
		t.Fatal(err)
	}
	want := []llm.ToolCall{
		{ID: "call_worker_1_1", Name: "write_file", Arguments: `{"content":"package main\n","path":"main.go"}`},
		{ID: "call_worker_1_2", Name: "read_file", Arguments: `{"path": `},
	}
	if fmt.Sprint(resp.Message.ToolCalls) != fmt.Sprint(want) || resp.Message.Content != "I'll write the file" || resp.FinishReason != "tool_calls" {
		t.Errorf("worker turn 1 = %+v", resp)
	}
	if resp.Usage.PromptTokens != 1 || resp.Usage.CompletionTokens != (len("I'll write the file")+len("write_file")+len(want[0].Arguments)+len("read_file")+len(want[1].Arguments))/4 {
		t.Errorf("estimated usage = %+v", resp.Usage)
	}
	if s.Remaining("worker") != 2 || s.Remaining("planner") != 0 || s.Remaining("nobody") != 0 {
		t.Errorf("remaining worker %d planner %d", s.Remaining("worker"), s.Remaining("planner"))
	}
}

func TestScriptedExpect(t *testing.T) {
	t.Parallel()
	s := mustScript(t)
	ctx := context.Background()
	if err := s.Seek(map[string]int{"worker": 1}); err != nil {
		t.Fatal(err)
	}
	history := []llm.Message{
		{Role: llm.RoleUser, Content: "step 1"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "a"}, {ID: "b"}}},
		{Role: llm.RoleTool, ToolCallID: "a", Content: "ok: wrote main.go"},
		{Role: llm.RoleTool, ToolCallID: "b", Content: "error: bad arguments"},
	}
	// Diverged: neither new tool result holds the text.
	bad := append([]llm.Message(nil), history...)
	bad[2].Content = "denied"
	_, err := s.Complete(ctx, turn("worker", bad...))
	if !errors.Is(err, llm.ErrScriptDiverged) || !strings.Contains(err.Error(), "script demo.yaml:11: role worker turn 2") || !strings.Contains(err.Error(), `"wrote main.go"`) {
		t.Fatalf("err = %v", err)
	}
	if s.Remaining("worker") != 2 {
		t.Fatal("a diverged turn advanced the script")
	}
	resp, err := s.Complete(ctx, turn("worker", history...))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.ToolCalls[0].ID != "call_worker_2_1" || resp.Message.ToolCalls[0].Arguments != `{"note":"done"}` {
		t.Errorf("resp = %+v", resp)
	}
}

func TestScriptedExhaustion(t *testing.T) {
	t.Parallel()
	s := mustScript(t)
	ctx := context.Background()
	if err := s.Seek(map[string]int{"worker": 3}); err != nil {
		t.Fatal(err)
	}
	_, err := s.Complete(ctx, turn("worker"))
	if want := "script demo.yaml: role worker has 3 replies; turn 4 asked for more"; err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, llm.ErrScriptExhausted) {
		t.Fatalf("err = %v, want %q", err, want)
	}
	_, err = s.Complete(ctx, turn("critic"))
	if err == nil || !strings.Contains(err.Error(), `no replies for role "critic" (script has roles planner, worker)`) {
		t.Fatalf("err = %v", err)
	}
}

func TestScriptedCursorSeek(t *testing.T) {
	t.Parallel()
	s := mustScript(t)
	ctx := context.Background()
	for range 2 {
		if _, err := s.Complete(ctx, turn("worker", llm.Message{Role: llm.RoleTool, ToolCallID: "x", Content: "wrote main.go"})); err != nil {
			t.Fatal(err)
		}
	}
	cur := s.Cursor()
	if fmt.Sprint(cur) != "map[planner:0 worker:2]" {
		t.Fatalf("cursor = %v", cur)
	}
	// A resumed run: a fresh model seeks to the checkpoint and continues.
	r := mustScript(t)
	if err := r.Seek(cur); err != nil {
		t.Fatal(err)
	}
	resp, err := r.Complete(ctx, turn("worker"))
	if err != nil || resp.Message.Content != "out of words" || resp.FinishReason != "length" {
		t.Fatalf("resumed turn = %+v, %v", resp, err)
	}
	for _, bad := range []map[string]int{{"critic": 1}, {"worker": 4}, {"worker": -1}} {
		if err := r.Seek(bad); err == nil {
			t.Errorf("Seek(%v) accepted", bad)
		}
	}
	if r.Remaining("worker") != 0 {
		t.Error("a failed Seek changed the cursor")
	}
}

func TestScriptedConcurrent(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("roles:\n  worker:\n")
	for i := range 50 {
		fmt.Fprintf(&b, "    - content: reply %d\n", i)
	}
	s, err := llm.ParseScript("many.yaml", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[string]bool{}
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				resp, err := s.Complete(context.Background(), turn("worker"))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				seen[resp.Message.Content] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != 50 || s.Remaining("worker") != 0 {
		t.Errorf("%d distinct replies, %d remaining", len(seen), s.Remaining("worker"))
	}
}

func TestParseScriptErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown key", "roles:\n  worker:\n    - content: hi\n      contnet: typo\n", "script bad.yaml:4:"},
		{"unknown top key", "roles:\n  worker:\n    - content: hi\nrole: {}\n", "script bad.yaml:4:"},
		{"syntax", "roles:\n  worker:\n    - content: [unclosed\n", "script bad.yaml:"},
		{"no roles", "roles: {}\n", "no roles"},
		{"empty role", "roles:\n  worker: []\n", "script bad.yaml:2: role worker has no replies"},
		{"both arguments", "roles:\n  worker:\n    - content: a\n    - tool_calls:\n        - {name: x, arguments: {}, arguments_raw: '{}'}\n", "script bad.yaml:4: role worker reply 2: tool_calls[0] (x): give arguments or arguments_raw, not both"},
		{"nameless call", "roles:\n  worker:\n    - tool_calls: [{arguments: {}}]\n", "script bad.yaml:3: role worker reply 1: tool_calls[0]: name is required"},
		{"output and content", "roles:\n  planner:\n    - content: x\n      output: {a: 1}\n", "reply 1: output excludes content"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := llm.ParseScript("bad.yaml", []byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestLoadScript(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(path, []byte(demoScript), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := llm.LoadScript(path)
	if err != nil || s.Name() != path || s.Remaining("worker") != 3 {
		t.Fatalf("LoadScript = %v, %v", s, err)
	}
	if _, err := llm.LoadScript(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Fatal("missing file accepted")
	}
}

func ExampleParseScript() {
	script := []byte(`
roles:
  worker:
    - content: "I'll write the file"
      tool_calls:
        - {name: write_file, arguments: {path: main.go, content: "package main\n"}}
    - tool_calls: [{name: finish_step, arguments: {note: done}}]
`)
	model, err := llm.ParseScript("example.yaml", script)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for range 3 {
		resp, err := model.Complete(ctx, llm.Request{Agent: "worker"})
		if err != nil {
			fmt.Println("error:", err)
			break
		}
		for _, c := range resp.Message.ToolCalls {
			fmt.Println(c.ID, c.Name, c.Arguments)
		}
	}
	fmt.Println(model.Cursor())
	// Output:
	// call_worker_1_1 write_file {"content":"package main\n","path":"main.go"}
	// call_worker_2_1 finish_step {"note":"done"}
	// error: script example.yaml: role worker has 2 replies; turn 3 asked for more: script exhausted
	// map[worker:2]
}
