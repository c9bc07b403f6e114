package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/llm/llmtest"
)

func newAnthropic(t *testing.T, srv *llmtest.Server, mod func(*llm.AnthropicConfig)) *llm.Retrying {
	t.Helper()
	cfg := llm.AnthropicConfig{
		BaseURL:     srv.AnthropicURL(),
		APIKey:      fakeKey,
		Model:       "claude-test",
		BackoffBase: time.Millisecond,
		BackoffMax:  5 * time.Millisecond,
		Timeout:     10 * time.Second,
	}
	if mod != nil {
		mod(&cfg)
	}
	p, err := llm.NewAnthropic(cfg)
	if err != nil {
		t.Fatalf("NewAnthropic: %v", err)
	}
	return p
}

func streams(t *testing.T, fn func(t *testing.T, stream bool)) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			t.Parallel()
			fn(t, stream)
		})
	}
}

func TestAnthropicReplyAndCachedUsage(t *testing.T) {
	t.Parallel()
	streams(t, func(t *testing.T, stream bool) {
		srv := llmtest.NewServer(t)
		// 3000 prompt tokens: 2048 read from the cache, 512 written, 440 neither.
		srv.Enqueue(llmtest.Reply{Content: "héllo, wörld — split across deltas",
			Usage: &llm.Usage{PromptTokens: 3000, CachedPromptTokens: 2048, CacheWriteTokens: 512, CompletionTokens: 9}})
		p := newAnthropic(t, srv, func(c *llm.AnthropicConfig) { c.Stream = stream })
		resp, err := p.Complete(context.Background(), userReq("hi"))
		if err != nil {
			t.Fatal(err)
		}
		want := llm.Response{
			Message:      llm.Message{Role: llm.RoleAssistant, Content: "héllo, wörld — split across deltas"},
			Usage:        llm.Usage{PromptTokens: 3000, CachedPromptTokens: 2048, CacheWriteTokens: 512, CompletionTokens: 9},
			FinishReason: "stop", Model: "claude-test", ID: "msg_llmtest_1",
		}
		if fmt.Sprint(resp) != fmt.Sprint(want) {
			t.Errorf("got %+v\nwant %+v", resp, want)
		}
		rec := srv.Requests()[0]
		if rec.Header.Get("Authorization") != "Bearer "+fakeKey || rec.Header.Get("Anthropic-Version") == "" || rec.Stream != stream {
			t.Errorf("headers %v, stream %v", rec.Header, rec.Stream)
		}
		ar, err := rec.Anthropic()
		if err != nil {
			t.Fatal(err)
		}
		if len(ar.System) != 1 || ar.System[0].Text != "You are a test." || len(ar.Messages) != 1 || ar.MaxTokens != llm.DefaultAnthropicMaxTokens {
			t.Errorf("request %s", rec.Body)
		}
	})
}

// A history with parallel tool calls converts to alternating turns with
// the tool results first in the user turn; parallel calls come back.
func TestAnthropicParallelToolCalls(t *testing.T) {
	t.Parallel()
	streams(t, func(t *testing.T, stream bool) {
		srv := llmtest.NewServer(t)
		srv.Enqueue(llmtest.ToolCalls(
			llmtest.ToolCall{ID: "toolu_3", Name: "write_file", Arguments: `{"path":"a.go","content":"package a"}`},
			llmtest.ToolCall{ID: "toolu_4", Name: "run_tests", Arguments: `{}`}))
		p := newAnthropic(t, srv, func(c *llm.AnthropicConfig) { c.Stream = stream })
		req := userReq("build it")
		req.Tools = toolDefs()
		req.Messages = append(req.Messages,
			llm.Message{Role: llm.RoleAssistant, Content: "reading both", ToolCalls: []llm.ToolCall{
				{ID: "toolu_1", Name: "read_file", Arguments: `{"path":"a.go"}`}, {ID: "toolu_2", Name: "read_file", Arguments: `{"path":"b.go"}`}}},
			llm.Message{Role: llm.RoleTool, ToolCallID: "toolu_1", Content: "package a"},
			llm.Message{Role: llm.RoleTool, ToolCallID: "toolu_2", Content: "package b"},
			llm.Message{Role: llm.RoleUser, Content: "Latest failing output: FAIL"})
		resp, err := p.Complete(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Message.ToolCalls) != 2 || resp.FinishReason != "tool_calls" ||
			resp.Message.ToolCalls[0] != (llm.ToolCall{ID: "toolu_3", Name: "write_file", Arguments: `{"path":"a.go","content":"package a"}`}) ||
			resp.Message.ToolCalls[1].Name != "run_tests" {
			t.Errorf("reply %+v", resp)
		}
		ar, _ := srv.Requests()[0].Anthropic()
		var shape []string
		for _, m := range ar.Messages {
			var kinds []string
			for _, b := range m.Content {
				kinds = append(kinds, b.Type)
			}
			shape = append(shape, m.Role+":"+strings.Join(kinds, ","))
		}
		if want := []string{"user:text", "assistant:text,tool_use,tool_use", "user:tool_result,tool_result,text"}; !slices.Equal(shape, want) {
			t.Errorf("turns %v, want %v", shape, want)
		}
		if len(ar.Tools) != len(req.Tools) || ar.Tools[0].Name != "read_file" || !strings.Contains(string(ar.Tools[0].InputSchema), `"required":["path"]`) {
			t.Errorf("tools %s", srv.Requests()[0].Body)
		}
	})
}

// Breakpoints go on the system prompt and at the end of the stable
// prefix, never on the volatile tail after it.
func TestAnthropicCacheBreakpoints(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t)
	srv.Enqueue(llmtest.Text("a"), llmtest.Text("b"), llmtest.Text("c"))
	p := newAnthropic(t, srv, nil)
	req := userReq("step 1")
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "t1", Name: "read_file", Arguments: `{}`}}},
		llm.Message{Role: llm.RoleTool, ToolCallID: "t1", Content: "out"},
		llm.Message{Role: llm.RoleUser, Content: "errors still open: x"})
	ctx := context.Background()
	req.CachePrefix = 4 // system, user, assistant, tool: the tail is the last user message
	if _, err := p.Complete(ctx, req); err != nil {
		t.Fatal(err)
	}
	req.CachePrefix = 0 // no hint: the end of the request
	if _, err := p.Complete(ctx, req); err != nil {
		t.Fatal(err)
	}
	noCache := newAnthropic(t, srv, func(c *llm.AnthropicConfig) { c.NoCache = true })
	if _, err := noCache.Complete(ctx, req); err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"system[0]", "messages[2].content[0]"}, // the tool result, first block of the last user turn
		{"system[0]", "messages[2].content[1]"}, // the tail's text block
		nil,
	}
	for i, r := range srv.Requests() {
		ar, _ := r.Anthropic()
		if got := ar.Breakpoints(); !slices.Equal(got, want[i]) {
			t.Errorf("request %d: breakpoints %v, want %v", i, got, want[i])
		}
	}
}

func TestAnthropicStructuredOutput(t *testing.T) {
	t.Parallel()
	schema := &llm.OutputSchema{Name: "plan", Schema: []byte(`{"type":"object","properties":{"steps":{"type":"array"}},"required":["steps"]}`)}
	t.Run("output_config", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(t)
		srv.Enqueue(llmtest.JSON(map[string]any{"steps": []string{"a"}}))
		p := newAnthropic(t, srv, nil)
		req := userReq("plan")
		req.Output = schema
		resp, err := p.Complete(context.Background(), req)
		if err != nil || resp.Message.Content != `{"steps":["a"]}` {
			t.Fatalf("%+v, %v", resp, err)
		}
		if rf := string(srv.Requests()[0].ResponseFormat); !strings.Contains(rf, `"type":"json_schema"`) || !strings.Contains(rf, `"required":["steps"]`) {
			t.Errorf("output_config.format = %s", rf)
		}
	})
	t.Run("fallback", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(t, llmtest.WithoutStructuredOutputs())
		srv.Enqueue(llmtest.Text(`{"steps":[]}`), llmtest.Text(`{"steps":[]}`))
		p := newAnthropic(t, srv, nil)
		req := userReq("plan")
		req.Output = schema
		for range 2 {
			if _, err := p.Complete(context.Background(), req); err != nil {
				t.Fatal(err)
			}
		}
		// Rejected once, then the schema goes into the system prompt, and
		// the provider remembers.
		reqs := srv.Requests()
		if len(reqs) != 3 || reqs[0].ResponseFormat == nil || reqs[1].ResponseFormat != nil || reqs[2].ResponseFormat != nil ||
			!strings.Contains(reqs[1].Messages[0].Content, `"required":["steps"]`) {
			t.Errorf("requests: %d, first format %s", len(reqs), reqs[0].ResponseFormat)
		}
	})
}

// Retries are the OpenAI provider's: Retry-After honoured, 529 and cut
// streams retried, each reported to the observer; the key never shows.
func TestAnthropicRetries(t *testing.T) {
	t.Parallel()
	streams(t, func(t *testing.T, stream bool) {
		srv := llmtest.NewServer(t)
		srv.Enqueue(
			llmtest.Reply{Status: http.StatusTooManyRequests, ErrorMessage: "rate limited", Header: map[string]string{"Retry-After": "0.02"}},
			llmtest.Status(529, "overloaded"),
			llmtest.Text("a reply long enough to be cut").CutAfter(3),
			llmtest.Text("finally"))
		p := newAnthropic(t, srv, func(c *llm.AnthropicConfig) { c.Stream = stream })
		var seen []llm.Retry
		ctx := llm.WithRetryObserver(context.Background(), func(r llm.Retry) { seen = append(seen, r) })
		resp, err := p.Complete(ctx, userReq("hi"))
		if err != nil || resp.Message.Content != "finally" {
			t.Fatalf("%+v, %v", resp, err)
		}
		if len(seen) != 3 || seen[0].Status != 429 || seen[0].Wait != 20*time.Millisecond || seen[1].Status != 529 || seen[2].Status != 0 {
			t.Errorf("retries %+v", seen)
		}
		for _, r := range seen {
			noKey(t, r.Err)
		}
	})
	t.Run("key scrubbed", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(t)
		srv.Enqueue(llmtest.Status(http.StatusUnauthorized, "invalid x-api-key "+fakeKey))
		_, err := newAnthropic(t, srv, nil).Complete(context.Background(), userReq("hi"))
		if err == nil || len(srv.Requests()) != 1 {
			t.Fatalf("err %v after %d requests, want one unretried failure", err, len(srv.Requests()))
		}
		noKey(t, err)
		if !strings.Contains(err.Error(), "/v1/messages") || !strings.Contains(err.Error(), "[redacted]") {
			t.Errorf("error %q", err)
		}
	})
}

// TestAnthropicOverScriptedServer is TestProviderOverScriptedServer with
// the scripted model's replies served in the Messages API shape.
func TestAnthropicOverScriptedServer(t *testing.T) {
	t.Parallel()
	streams(t, func(t *testing.T, stream bool) {
		script := mustScript(t)
		srv := llmtest.NewServer(t, llmtest.WithModel(script, nil))
		p := newAnthropic(t, srv, func(c *llm.AnthropicConfig) {
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
		// The Messages API always parses tool input: the script's broken
		// JSON arrives as an empty object.
		if len(resp.Message.ToolCalls) != 2 || resp.Message.ToolCalls[1].Arguments != `{}` || resp.Message.ToolCalls[0].ID != "call_worker_1_1" {
			t.Errorf("worker = %+v", resp)
		}
		req.Messages = append(req.Messages, resp.Message, llm.Message{Role: llm.RoleTool, ToolCallID: "call_worker_1_1", Content: "denied"})
		_, err = p.Complete(ctx, req)
		if err == nil || !strings.Contains(err.Error(), "expects the newest user/tool message") || len(srv.Requests()) != 3 {
			t.Fatalf("err = %v after %d requests", err, len(srv.Requests()))
		}
		var apiErr interface{ Error() string }
		if !errors.As(err, &apiErr) || script.Cursor()["worker"] != 1 {
			t.Errorf("cursor = %v", script.Cursor())
		}
	})
}

func toolDefs() []llm.ToolDef {
	def := func(name string) llm.ToolDef {
		return llm.ToolDef{
			Name: name, Description: "The " + name + " tool.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`),
		}
	}
	return []llm.ToolDef{def("read_file"), def("write_file")}
}

// Extended thinking: the budget is sent inside max_tokens (the reply keeps
// its cap), the thinking blocks come back in Message.Reasoning and go back
// first in their turn, unchanged, when the tool results are sent; the
// fake server refuses the turn without them, as the API does.
func TestAnthropicThinkingAcrossToolTurns(t *testing.T) {
	t.Parallel()
	streams(t, func(t *testing.T, stream bool) {
		srv := llmtest.NewServer(t)
		srv.Enqueue(llmtest.ToolCalls(llmtest.ToolCall{ID: "toolu_1", Name: "read_file", Arguments: `{"path":"a.go"}`}))
		srv.Enqueue(llmtest.Reply{Content: "done"})
		p := newAnthropic(t, srv, func(c *llm.AnthropicConfig) {
			c.Stream, c.MaxTokens = stream, 2000
			c.ThinkingBudgetPerRole = map[string]int{"worker": 4096}
		})
		req := userReq("build it")
		req.Agent, req.Tools = "worker", toolDefs()
		first, err := p.Complete(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if len(first.Message.Reasoning) != 1 || first.Message.Reasoning[0].Kind != "thinking" || first.Message.Reasoning[0].Signature == "" {
			t.Fatalf("reasoning %+v", first.Message.Reasoning)
		}
		got := srv.Requests()[0]
		if got.ThinkingBudget != 4096 || *got.MaxTokens != 2000+4096 {
			t.Errorf("thinking budget %d, max_tokens %d; want 4096 and the reply cap plus it", got.ThinkingBudget, *got.MaxTokens)
		}
		next := req
		next.Messages = append(slices.Clone(req.Messages), first.Message,
			llm.Message{Role: llm.RoleTool, ToolCallID: "toolu_1", Content: "package a"})
		if _, err := p.Complete(context.Background(), next); err != nil {
			t.Fatalf("the tool turn with its thinking: %v", err)
		}
		ar, _ := srv.Requests()[1].Anthropic()
		if b := ar.Messages[1].Content; len(b) != 2 || b[0].Type != "thinking" || b[0].Signature != first.Message.Reasoning[0].Signature {
			t.Errorf("the assistant turn sent back %+v, want its thinking first, unchanged", b)
		}

		// The premise: the fake refuses what the API refuses.
		dropped := next
		dropped.Messages = slices.Clone(next.Messages)
		m := first.Message
		m.Reasoning = nil
		dropped.Messages[len(dropped.Messages)-2] = m
		srv.Enqueue(llmtest.Reply{Content: "unused"})
		_, err = p.Complete(context.Background(), dropped)
		if err == nil || !strings.Contains(err.Error(), "must start with a thinking block") {
			t.Errorf("a tool turn without its thinking: %v, want the API's refusal", err)
		}
		// Other roles think only when configured to.
		planner := userReq("plan")
		planner.Agent = "planner"
		if _, err := p.Complete(context.Background(), planner); err != nil {
			t.Fatal(err)
		}
		if r := srv.Requests(); r[len(r)-1].ThinkingBudget != 0 {
			t.Errorf("the planner sent a thinking budget %d", r[len(r)-1].ThinkingBudget)
		}
	})
}

func TestAnthropicThinkingBudgetChecked(t *testing.T) {
	_, err := llm.NewAnthropic(llm.AnthropicConfig{APIKey: fakeKey, Model: "m", ThinkingBudgetPerRole: map[string]int{"critic": 500}})
	if err == nil || !strings.Contains(err.Error(), "thinking budget of critic 500") {
		t.Errorf("a 500-token budget: %v", err)
	}
}
