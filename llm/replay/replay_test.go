package replay_test

import (
	"context"
	"errors"
	"testing"

	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/llm/replay"
)

const script = `roles:
  worker:
    - content: "writing it"
      tool_calls:
        - {name: write_file, arguments: {path: a.txt, content: "hi"}}
      usage: {prompt_tokens: 12, completion_tokens: 3}
    - content: "done"
      expect: "wrote a.txt"
  planner:
    - output: {steps: []}
`

// The real OpenAI provider, talking to a scripted model served by replay,
// gets each role's replies in order (tool calls, usage, structured output),
// the conversation reaches the script (its expect matches), and a role
// whose replies are spent says ErrScriptExhausted.
func TestProviderReplaysScript(t *testing.T) {
	t.Parallel()
	m, err := llm.ParseScript("test.yaml", []byte(script))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := replay.Start(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	p, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: srv.URL(), APIKey: "x", Model: "worker",
		Models: map[string]string{"worker": "worker", "planner": "planner"}, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	msgs := []llm.Message{{Role: llm.RoleUser, Content: "write a.txt"}}
	r1, err := p.Complete(ctx, llm.Request{Agent: "worker", Messages: msgs, MaxTokens: 100})
	if err != nil {
		t.Fatal(err)
	}
	if r1.Message.Content != "writing it" || len(r1.Message.ToolCalls) != 1 || r1.Message.ToolCalls[0].Name != "write_file" {
		t.Fatalf("first reply %+v", r1.Message)
	}
	if r1.Usage.PromptTokens != 12 || r1.Usage.CompletionTokens != 3 || r1.FinishReason != "tool_calls" {
		t.Errorf("usage %+v finish %q, want 12/3 and tool_calls", r1.Usage, r1.FinishReason)
	}
	msgs = append(msgs, r1.Message, llm.Message{Role: llm.RoleTool, ToolCallID: r1.Message.ToolCalls[0].ID, Content: "wrote a.txt"})
	r2, err := p.Complete(ctx, llm.Request{Agent: "worker", Messages: msgs})
	if err != nil {
		t.Fatalf("second reply (the script expects the tool result): %v", err)
	}
	if r2.Message.Content != "done" || r2.FinishReason != "stop" {
		t.Errorf("second reply %+v finish %q", r2.Message, r2.FinishReason)
	}
	plan, err := p.Complete(ctx, llm.Request{Agent: "planner", Messages: msgs[:1],
		Output: &llm.OutputSchema{Name: "plan", Schema: []byte(`{"type":"object"}`)}})
	if err != nil || plan.Message.Content != `{"steps":[]}` {
		t.Errorf("planner: %q, %v", plan.Message.Content, err)
	}
	if _, err := p.Complete(ctx, llm.Request{Agent: "worker", Messages: msgs}); !errors.Is(err, llm.ErrScriptExhausted) {
		t.Errorf("a third worker reply: err %v, want ErrScriptExhausted", err)
	}
}
