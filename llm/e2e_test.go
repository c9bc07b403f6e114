package llm_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/llm/llmtest"
)

// TestProviderOverScriptedServer drives the real provider against the
// scripted model served over HTTP, as the offline demo does.
func TestProviderOverScriptedServer(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			t.Parallel()
			script := mustScript(t)
			srv := llmtest.NewServer(t, llmtest.WithModel(script, nil))
			p := newProvider(t, srv, func(c *llm.OpenAIConfig) {
				c.Stream = stream
				c.Model = ""
				c.Models = map[string]string{"planner": "planner", "worker": "worker"}
			})
			ctx := context.Background()
			req := userReq("goal")
			req.Agent = "planner"
			req.Output = &llm.OutputSchema{Name: "plan", Schema: []byte(`{"type":"object"}`)}
			resp, err := p.Complete(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(resp.Message.Content, `"test_command":"go test ./..."`) || resp.Usage.PromptTokens != 50 {
				t.Errorf("planner = %+v", resp)
			}
			req = userReq("step 1")
			resp, err = p.Complete(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Message.ToolCalls) != 2 || resp.Message.ToolCalls[1].Arguments != `{"path": ` || resp.Message.ToolCalls[0].ID != "call_worker_1_1" {
				t.Errorf("worker = %+v", resp)
			}
			// The script diverges: the error reaches the caller, not retried.
			req.Messages = append(req.Messages, resp.Message, llm.Message{Role: llm.RoleTool, ToolCallID: "call_worker_1_1", Content: "denied"})
			_, err = p.Complete(ctx, req)
			if err == nil || !strings.Contains(err.Error(), "expects the newest user/tool message") || len(srv.Requests()) != 3 {
				t.Fatalf("err = %v after %d requests", err, len(srv.Requests()))
			}
			if script.Cursor()["worker"] != 1 {
				t.Errorf("cursor = %v", script.Cursor())
			}
		})
	}
}

func ExampleNewOpenAI() {
	// An offline endpoint: the scripted model served over loopback HTTP.
	script, err := llm.ParseScript("hello.yaml", []byte(`
roles:
  worker:
    - content: "hello from the script"
      usage: {prompt_tokens: 9, completion_tokens: 4}
`))
	if err != nil {
		panic(err)
	}
	srv := llmtest.Start(llmtest.WithModel(script, nil))
	defer srv.Close()

	model, err := llm.NewOpenAI(llm.OpenAIConfig{
		BaseURL: srv.URL(),
		APIKey:  "not-a-real-key", // usually APIKeyEnv: "OPENAI_API_KEY"
		Models:  map[string]string{"worker": "worker"},
		Stream:  true,
	})
	if err != nil {
		panic(err)
	}
	resp, err := model.Complete(context.Background(), llm.Request{
		Agent:    "worker",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "say hello"}},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Message.Content, resp.Usage.PromptTokens, resp.Usage.CompletionTokens)

	// The script holds one reply: the next call fails and says why; the
	// endpoint's error code (llm.ScriptExhaustedCode) makes it
	// ErrScriptExhausted on this side of the HTTP too.
	_, err = model.Complete(context.Background(), llm.Request{Agent: "worker"})
	fmt.Println(errors.Is(err, llm.ErrScriptExhausted), strings.Contains(err.Error(), "role worker has 1 replies; turn 2 asked for more"))
	// Output:
	// hello from the script 9 4
	// true true
}
