package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/llm/llmtest"
)

const fakeKey = "sk-test-DO-NOT-LEAK-5f3a9c"

func newProvider(t *testing.T, srv *llmtest.Server, mod func(*llm.OpenAIConfig)) *llm.Retrying {
	t.Helper()
	cfg := llm.OpenAIConfig{
		BaseURL:     srv.URL(),
		APIKey:      fakeKey,
		Model:       "test-model",
		BackoffBase: time.Millisecond,
		BackoffMax:  5 * time.Millisecond,
		Timeout:     10 * time.Second,
	}
	if mod != nil {
		mod(&cfg)
	}
	p, err := llm.NewOpenAI(cfg)
	if err != nil {
		t.Fatalf("NewOpenAI: %v", err)
	}
	return p
}

func userReq(text string) llm.Request {
	return llm.Request{Agent: "worker", Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: "You are a test."},
		{Role: llm.RoleUser, Content: text},
	}}
}

// noKey fails the test if err's text holds the API key.
func noKey(t *testing.T, err error) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), fakeKey) {
		t.Fatalf("error leaks the API key: %v", err)
	}
}

func TestOpenAIPlainReply(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer(t)
			srv.Enqueue(llmtest.Text("héllo, wörld — a reply long enough to split").WithUsage(12, 7))
			p := newProvider(t, srv, func(c *llm.OpenAIConfig) { c.Stream = stream })
			resp, err := p.Complete(context.Background(), userReq("hi"))
			if err != nil {
				t.Fatal(err)
			}
			want := llm.Response{
				Message:      llm.Message{Role: llm.RoleAssistant, Content: "héllo, wörld — a reply long enough to split"},
				Usage:        llm.Usage{PromptTokens: 12, CompletionTokens: 7},
				FinishReason: "stop",
				Model:        "test-model",
				ID:           "chatcmpl-llmtest-1", // the endpoint's reply id
			}
			if fmt.Sprint(resp) != fmt.Sprint(want) {
				t.Errorf("got %+v\nwant %+v", resp, want)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 || reqs[0].Stream != stream {
				t.Fatalf("want 1 request with stream=%v, got %+v", stream, reqs)
			}
			if got := reqs[0].Header.Get("Authorization"); got != "Bearer "+fakeKey {
				t.Errorf("Authorization header not sent as bearer key")
			}
			if stream && !strings.Contains(string(reqs[0].Body), `"include_usage":true`) {
				t.Errorf("stream request does not ask for usage: %s", reqs[0].Body)
			}
		})
	}
}

func TestOpenAIToolCallsAndConversion(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer(t)
			srv.Enqueue(llmtest.Reply{
				Content: "writing two files",
				ToolCalls: []llmtest.ToolCall{
					{ID: "call_a", Name: "write_file", Arguments: `{"path":"main.go","content":"package main\n"}`},
					{ID: "call_b", Name: "read_file", Arguments: `{"path": `},
				},
			}.WithUsage(100, 20))
			temp := 0.25
			p := newProvider(t, srv, func(c *llm.OpenAIConfig) {
				c.Stream = stream
				c.Models = map[string]string{"worker": "worker-model"}
				c.Temperature = &temp
				c.MaxTokens = 1000
			})
			req := llm.Request{
				Agent: "worker",
				Messages: []llm.Message{
					{Role: llm.RoleSystem, Content: "sys"},
					{Role: llm.RoleUser, Content: "build it"},
					{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "list_files", Arguments: `{}`}}},
					{Role: llm.RoleTool, ToolCallID: "call_1", Name: "list_files", Content: "README.md"},
					{Role: llm.RoleAssistant, Content: "ok"},
					{Role: llm.RoleUser, Content: "go on"},
				},
				Tools: []llm.ToolDef{{
					Name:        "write_file",
					Description: "Write a file.",
					Parameters:  json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`),
				}},
				MaxTokens: 50,
			}
			resp, err := p.Complete(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			wantCalls := []llm.ToolCall{
				{ID: "call_a", Name: "write_file", Arguments: `{"path":"main.go","content":"package main\n"}`},
				{ID: "call_b", Name: "read_file", Arguments: `{"path": `},
			}
			if fmt.Sprint(resp.Message.ToolCalls) != fmt.Sprint(wantCalls) {
				t.Errorf("tool calls = %+v, want %+v", resp.Message.ToolCalls, wantCalls)
			}
			if resp.Message.Content != "writing two files" || resp.FinishReason != "tool_calls" || resp.Usage != (llm.Usage{PromptTokens: 100, CompletionTokens: 20}) {
				t.Errorf("resp = %+v", resp)
			}
			rec := srv.Requests()[0]
			if rec.Model != "worker-model" {
				t.Errorf("model = %q, want the worker's", rec.Model)
			}
			if rec.Temperature == nil || *rec.Temperature != 0.25 || rec.MaxTokens == nil || *rec.MaxTokens != 50 {
				t.Errorf("temperature %v max_tokens %v", rec.Temperature, rec.MaxTokens)
			}
			var roles []string
			for _, m := range rec.Messages {
				roles = append(roles, m.Role)
			}
			if got := strings.Join(roles, ","); got != "system,user,assistant,tool,assistant,user" {
				t.Errorf("roles = %s", got)
			}
			a := rec.Messages[2]
			if len(a.ToolCalls) != 1 || a.ToolCalls[0].ID != "call_1" || a.ToolCalls[0].Type != "function" ||
				a.ToolCalls[0].Function.Name != "list_files" || a.ToolCalls[0].Function.Arguments != "{}" {
				t.Errorf("assistant tool call = %+v", a.ToolCalls)
			}
			if tm := rec.Messages[3]; tm.ToolCallID != "call_1" || tm.Content != "README.md" {
				t.Errorf("tool message = %+v", tm)
			}
			if len(rec.Tools) != 1 || !strings.Contains(string(rec.Tools[0]), `"name":"write_file"`) || !strings.Contains(string(rec.Tools[0]), `"type":"function"`) {
				t.Errorf("tools = %s", rec.Tools)
			}
			if rec.ResponseFormat != nil {
				t.Errorf("unexpected response_format %s", rec.ResponseFormat)
			}
		})
	}
}

type verdict struct {
	Verdict string   `json:"verdict" jsonschema:"enum=pass,enum=fail"`
	Reasons []string `json:"reasons"`
}

func TestOpenAIStructuredOutput(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t)
	srv.Enqueue(llmtest.JSON(verdict{Verdict: "pass", Reasons: []string{"tests green"}}))
	p := newProvider(t, srv, nil)
	req := userReq("judge")
	req.Output = llm.SchemaOf[verdict]("verdict", "The critic's verdict.")
	resp, err := p.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	v, err := llm.DecodeOutput[verdict](resp.Message.Content)
	if err != nil || v.Verdict != "pass" {
		t.Fatalf("decoded %+v, %v", v, err)
	}
	var rf struct {
		Type       string `json:"type"`
		JSONSchema struct {
			Name   string          `json:"name"`
			Strict bool            `json:"strict"`
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	}
	rec := srv.Requests()[0]
	if err := json.Unmarshal(rec.ResponseFormat, &rf); err != nil {
		t.Fatalf("response_format %s: %v", rec.ResponseFormat, err)
	}
	if rf.Type != "json_schema" || rf.JSONSchema.Name != "verdict" || !rf.JSONSchema.Strict || !strings.Contains(string(rf.JSONSchema.Schema), `"reasons"`) {
		t.Errorf("response_format = %s", rec.ResponseFormat)
	}
	if !p.Unwrap().(*llm.OpenAI).SchemaSupported() {
		t.Error("SchemaSupported false after success")
	}
}

func TestOpenAIStructuredFallback(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		mode       string
		noSchema   bool
		wantBodies []bool // response_format present, per recorded request
	}{
		// auto: the first call learns, the second does not ask again.
		{"auto rejected", llm.StructuredAuto, true, []bool{true, false, false}},
		{"off", llm.StructuredOff, false, []bool{false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var opts []llmtest.Option
			if tt.noSchema {
				opts = append(opts, llmtest.WithoutStructuredOutputs())
			}
			srv := llmtest.NewServer(t, opts...)
			srv.Enqueue(llmtest.Text("```json\n{\"verdict\":\"fail\",\"reasons\":[\"x\"]}\n```"), llmtest.JSON(verdict{Verdict: "pass", Reasons: []string{}}))
			p := newProvider(t, srv, func(c *llm.OpenAIConfig) { c.StructuredOutputs = tt.mode })
			for i := 0; i < 2; i++ {
				req := userReq("judge")
				req.Output = llm.SchemaOf[verdict]("verdict", "")
				resp, err := p.Complete(context.Background(), req)
				if err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
				if _, err := llm.DecodeOutput[verdict](resp.Message.Content); err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
			}
			reqs := srv.Requests()
			if len(reqs) != len(tt.wantBodies) {
				t.Fatalf("%d requests, want %d", len(reqs), len(tt.wantBodies))
			}
			for i, r := range reqs {
				if (r.ResponseFormat != nil) != tt.wantBodies[i] {
					t.Errorf("request %d: response_format present = %v", i, r.ResponseFormat != nil)
				}
				if r.ResponseFormat == nil {
					sys := r.Messages[0]
					if sys.Role != "system" || !strings.HasPrefix(sys.Content, "You are a test.") || !strings.Contains(sys.Content, `"verdict"`) || !strings.Contains(sys.Content, `"required"`) {
						t.Errorf("request %d: schema not in system prompt: %q", i, sys.Content)
					}
					if len(r.Messages) != 2 {
						t.Errorf("request %d: %d messages, want 2", i, len(r.Messages))
					}
				}
			}
			if p.Unwrap().(*llm.OpenAI).SchemaSupported() {
				t.Error("SchemaSupported still true")
			}
		})
	}
}

func TestOpenAIRetryAfter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		fault   func() llmtest.Reply
		minWait time.Duration
	}{
		{"Retry-After seconds", func() llmtest.Reply { return llmtest.RateLimited("1") }, 950 * time.Millisecond},
		{"retry-after-ms", func() llmtest.Reply {
			return llmtest.Reply{Status: 429, Header: map[string]string{"retry-after-ms": "300"}}
		}, 280 * time.Millisecond},
		// An HTTP date has whole seconds: now+3s is at least 2s away.
		{"Retry-After date", func() llmtest.Reply {
			return llmtest.RateLimited(time.Now().Add(3 * time.Second).UTC().Format(http.TimeFormat))
		}, 1900 * time.Millisecond},
		{"503 Retry-After", func() llmtest.Reply {
			return llmtest.Reply{Status: 503, Header: map[string]string{"Retry-After": "1"}}
		}, 950 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer(t)
			start := time.Now()
			srv.Enqueue(tt.fault(), llmtest.Text("after the wait"))
			p := newProvider(t, srv, nil)
			resp, err := p.Complete(context.Background(), userReq("hi"))
			if err != nil {
				t.Fatal(err)
			}
			if waited := time.Since(start); waited < tt.minWait {
				t.Errorf("retried after %s, the server asked for at least %s", waited, tt.minWait)
			}
			if resp.Message.Content != "after the wait" || len(srv.Requests()) != 2 {
				t.Errorf("resp %+v after %d requests", resp, len(srv.Requests()))
			}
		})
	}
}

func TestOpenAIRetryAfterTooLong(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t)
	srv.Enqueue(llmtest.RateLimited("3600"))
	p := newProvider(t, srv, func(c *llm.OpenAIConfig) { c.MaxRetryAfter = time.Minute })
	_, err := p.Complete(context.Background(), userReq("hi"))
	if err == nil || !strings.Contains(err.Error(), "retry after 1h0m0s") || statusOf(err) != 429 {
		t.Fatalf("err = %v", err)
	}
}

func statusOf(err error) int {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		return apiErr.StatusCode
	}
	return 0
}

func TestOpenAIServerErrors(t *testing.T) {
	t.Parallel()
	t.Run("500 then success", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(t)
		srv.Enqueue(llmtest.ServerError(), llmtest.Status(502, "bad gateway"), llmtest.Text("ok"))
		var retries []string
		p := newProvider(t, srv, func(c *llm.OpenAIConfig) {
			c.OnRetry = func(attempt int, wait time.Duration, err error) {
				retries = append(retries, fmt.Sprintf("%d %d", attempt, statusOf(err)))
				if wait > 5*time.Millisecond {
					t.Errorf("backoff %s above BackoffMax", wait)
				}
			}
		})
		resp, err := p.Complete(context.Background(), userReq("hi"))
		if err != nil || resp.Message.Content != "ok" || len(srv.Requests()) != 3 {
			t.Fatalf("resp %+v err %v after %d requests", resp, err, len(srv.Requests()))
		}
		if strings.Join(retries, ",") != "1 500,2 502" {
			t.Errorf("OnRetry saw %v", retries)
		}
	})
	t.Run("500 every time is reported", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(t)
		srv.Enqueue(llmtest.ServerError(), llmtest.ServerError(), llmtest.ServerError())
		p := newProvider(t, srv, func(c *llm.OpenAIConfig) { c.MaxRetries = 2 })
		_, err := p.Complete(context.Background(), userReq("hi"))
		noKey(t, err)
		if statusOf(err) != 500 || len(srv.Requests()) != 3 {
			t.Fatalf("err %v after %d requests", err, len(srv.Requests()))
		}
		for _, want := range []string{"after 3 attempts", srv.URL() + "/chat/completions", "model test-model", "agent worker", "the server had an error"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
		// The endpoint first, then the retries' count, then the cause.
		if want := "llm: POST " + srv.URL() + "/chat/completions (model test-model, agent worker): after 3 attempts: "; !strings.HasPrefix(err.Error(), want) {
			t.Errorf("error %q does not start with %q", err, want)
		}
	})
	t.Run("the provider alone makes one attempt", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(t)
		srv.Enqueue(llmtest.ServerError())
		p, err := llm.NewOpenAIProvider(llm.OpenAIConfig{BaseURL: srv.URL(), APIKey: fakeKey, Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Complete(context.Background(), userReq("hi"))
		if statusOf(err) != 500 || len(srv.Requests()) != 1 || strings.Contains(err.Error(), "attempts") {
			t.Fatalf("err %v after %d requests", err, len(srv.Requests()))
		}
		// Wrapped by WithRetry, as NewOpenAI does, it gets the retries.
		r, err := llm.WithRetry(p, llm.RetryConfig{BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		srv.Enqueue(llmtest.ServerError(), llmtest.Text("ok"))
		if resp, err := r.Complete(context.Background(), userReq("hi")); err != nil || resp.Message.Content != "ok" || len(srv.Requests()) != 3 {
			t.Fatalf("wrapped: %q, %v after %d requests", resp.Message.Content, err, len(srv.Requests()))
		}
	})
	t.Run("400 is not retried", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(t)
		srv.Enqueue(llmtest.Status(400, "bad messages"))
		p := newProvider(t, srv, nil)
		_, err := p.Complete(context.Background(), userReq("hi"))
		if statusOf(err) != 400 || len(srv.Requests()) != 1 {
			t.Fatalf("err %v after %d requests", err, len(srv.Requests()))
		}
	})
	t.Run("malformed JSON", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(t)
		srv.Enqueue(llmtest.Malformed())
		p := newProvider(t, srv, nil)
		_, err := p.Complete(context.Background(), userReq("hi"))
		noKey(t, err)
		if err == nil || !strings.Contains(err.Error(), "json") || !strings.Contains(err.Error(), "model test-model") || len(srv.Requests()) != 1 {
			t.Fatalf("err %v after %d requests", err, len(srv.Requests()))
		}
	})
}

func TestOpenAICutReply(t *testing.T) {
	t.Parallel()
	cut := llmtest.Reply{Content: "partial", ToolCalls: []llmtest.ToolCall{{Name: "write_file", Arguments: `{"path":"a.go","content":"package a"}`}}}
	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprintf("stream=%v retried", stream), func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer(t)
			srv.Enqueue(cut.CutAfter(4), llmtest.ToolCalls(llmtest.Call("finish_step", `{"note":"done"}`)))
			p := newProvider(t, srv, func(c *llm.OpenAIConfig) { c.Stream = stream })
			resp, err := p.Complete(context.Background(), userReq("hi"))
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Message.ToolCalls) != 1 || resp.Message.ToolCalls[0].Name != "finish_step" || resp.Message.Content != "" {
				t.Errorf("resp = %+v", resp)
			}
		})
		t.Run(fmt.Sprintf("stream=%v no retries", stream), func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer(t)
			srv.Enqueue(cut.CutAfter(4))
			p := newProvider(t, srv, func(c *llm.OpenAIConfig) { c.Stream = stream; c.MaxRetries = -1 })
			resp, err := p.Complete(context.Background(), userReq("hi"))
			if err == nil {
				t.Fatalf("cut reply accepted: %+v", resp)
			}
			if len(resp.Message.ToolCalls) != 0 || resp.Message.Content != "" {
				t.Errorf("partial reply escaped: %+v", resp)
			}
			if !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, llm.ErrStreamCut) {
				t.Errorf("err = %v, want unexpected EOF or ErrStreamCut", err)
			}
		})
	}
}

func TestOpenAITimeout(t *testing.T) {
	t.Parallel()
	t.Run("slow then retried", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(t)
		srv.Enqueue(llmtest.Text("too late").After(5*time.Second), llmtest.Text("in time"))
		p := newProvider(t, srv, func(c *llm.OpenAIConfig) { c.Timeout = 500 * time.Millisecond })
		resp, err := p.Complete(context.Background(), userReq("hi"))
		if err != nil || resp.Message.Content != "in time" {
			t.Fatalf("resp %+v err %v", resp, err)
		}
	})
	t.Run("slow and no retries", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(t)
		srv.Enqueue(llmtest.Text("too late").After(5 * time.Second))
		p := newProvider(t, srv, func(c *llm.OpenAIConfig) { c.Timeout = 500 * time.Millisecond; c.MaxRetries = -1 })
		_, err := p.Complete(context.Background(), userReq("hi"))
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "timeout 500ms") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("caller cancels during backoff", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(t)
		srv.Enqueue(llmtest.RateLimited("30"))
		p := newProvider(t, srv, nil)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := p.Complete(ctx, userReq("hi"))
		if !errors.Is(err, context.DeadlineExceeded) || len(srv.Requests()) != 1 {
			t.Fatalf("err %v after %d requests", err, len(srv.Requests()))
		}
	})
}

func TestOpenAIKeyNeverShown(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t)
	srv.Enqueue(llmtest.Status(401, "Incorrect API key provided: "+fakeKey))
	cfg := llm.OpenAIConfig{BaseURL: srv.URL(), APIKey: fakeKey, Model: "m"}
	for _, s := range []string{fmt.Sprintf("%v", cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg)} {
		if strings.Contains(s, fakeKey) {
			t.Errorf("formatted config shows the key: %s", s)
		}
	}
	b, _ := json.Marshal(cfg)
	if strings.Contains(string(b), fakeKey) {
		t.Errorf("JSON config shows the key: %s", b)
	}
	p, err := llm.NewOpenAI(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Complete(context.Background(), userReq("hi"))
	if statusOf(err) != 401 || !strings.Contains(err.Error(), "Incorrect API key provided: [redacted]") {
		t.Fatalf("err = %v", err)
	}
	noKey(t, err)
	// Connection refused: the error names the endpoint, not the key.
	srv.Close()
	p2, _ := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: srv.URL(), APIKey: fakeKey, Model: "m", MaxRetries: -1})
	_, err = p2.Complete(context.Background(), userReq("hi"))
	if err == nil {
		t.Fatal("no error from a closed server")
	}
	noKey(t, err)
}

func TestOpenAIMaxCompletionTokens(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t)
	srv.Enqueue(llmtest.Text("a"), llmtest.Text("b"))
	p := newProvider(t, srv, func(c *llm.OpenAIConfig) { c.MaxCompletionTokens = true; c.MaxTokens = 77 })
	for range 2 {
		if _, err := p.Complete(context.Background(), userReq("hi")); err != nil {
			t.Fatal(err)
		}
	}
	p2 := newProvider(t, srv, nil)
	srv.Enqueue(llmtest.Text("c"))
	if _, err := p2.Complete(context.Background(), userReq("hi")); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if b := string(reqs[0].Body); !strings.Contains(b, `"max_completion_tokens":77`) || strings.Contains(b, `"max_tokens"`) {
		t.Errorf("body %s", b)
	}
	if b := string(reqs[2].Body); strings.Contains(b, "max_") || strings.Contains(b, "temperature") {
		t.Errorf("unset caps sent: %s", b)
	}
}

func TestNewOpenAIConfigErrors(t *testing.T) {
	t.Setenv("TRIO_TEST_EMPTY_KEY", "")
	t.Setenv("TRIO_TEST_KEY", fakeKey)
	tests := []struct {
		name string
		cfg  llm.OpenAIConfig
		want string
	}{
		{"no model", llm.OpenAIConfig{APIKeyEnv: "TRIO_TEST_KEY"}, "no model configured"},
		{"empty key env", llm.OpenAIConfig{APIKeyEnv: "TRIO_TEST_EMPTY_KEY", Model: "m"}, "TRIO_TEST_EMPTY_KEY holds no API key"},
		{"bad mode", llm.OpenAIConfig{APIKeyEnv: "TRIO_TEST_KEY", Model: "m", StructuredOutputs: "maybe"}, `structured_outputs "maybe"`},
		{"bad url", llm.OpenAIConfig{APIKeyEnv: "TRIO_TEST_KEY", Model: "m", BaseURL: "ftp://x"}, "want an http(s) URL"},
		{"empty role model", llm.OpenAIConfig{APIKeyEnv: "TRIO_TEST_KEY", Models: map[string]string{"critic": ""}}, "models.critic is empty"},
		{"ok from env", llm.OpenAIConfig{APIKeyEnv: "TRIO_TEST_KEY", Model: "m"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := llm.NewOpenAI(tt.cfg)
			noKey(t, err)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestOpenAIOddReplies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		reply   llmtest.Reply
		content string
		finish  string
	}{
		{"refusal", llmtest.Reply{Refusal: "I can't help with that."}, "I can't help with that.", "refusal"},
		{"cut by length", llmtest.Reply{Content: "half a sent", FinishReason: "length"}, "half a sent", "length"},
		{"empty", llmtest.Reply{}, "", "stop"},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s stream=%v", tt.name, stream), func(t *testing.T) {
				t.Parallel()
				srv := llmtest.NewServer(t)
				srv.Enqueue(tt.reply)
				p := newProvider(t, srv, func(c *llm.OpenAIConfig) { c.Stream = stream })
				resp, err := p.Complete(context.Background(), userReq("hi"))
				if err != nil {
					t.Fatal(err)
				}
				if resp.Message.Content != tt.content || resp.FinishReason != tt.finish || len(resp.Message.ToolCalls) != 0 {
					t.Errorf("resp = %+v", resp)
				}
			})
		}
	}
}

func TestOpenAICachedTokens(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer(t)
			srv.Enqueue(llmtest.Text("ok").WithCachedUsage(2000, 1536, 5))
			p := newProvider(t, srv, func(c *llm.OpenAIConfig) { c.Stream = stream })
			resp, err := p.Complete(context.Background(), userReq("hi"))
			if err != nil {
				t.Fatal(err)
			}
			// prompt_tokens already counts the cached ones: the total stays
			// the total and the cached part is broken out.
			if want := (llm.Usage{PromptTokens: 2000, CachedPromptTokens: 1536, CompletionTokens: 5}); resp.Usage != want {
				t.Errorf("usage %+v, want %+v", resp.Usage, want)
			}
		})
	}
}

// A key shorter than llm.MinRedactedKey is no secret worth mangling every
// message for: an error that holds it as part of a path or a word reads
// as the endpoint wrote it. A long key is still scrubbed (above).
func TestShortKeyDoesNotMangleErrors(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"x", "demo", "1234567"} {
		srv := llmtest.NewServer(t)
		msg := "script examples/demo/script.yaml: unexpected EOF (key " + key + ")"
		srv.Enqueue(llmtest.Status(400, msg))
		p, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: srv.URL(), APIKey: llm.Secret(key), Model: "m", MaxRetries: -1})
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Complete(context.Background(), userReq("hi"))
		if err == nil || !strings.Contains(err.Error(), msg) || strings.Contains(err.Error(), "[redacted]") {
			t.Errorf("key %q: err = %v, want the message intact", key, err)
		}
	}
}

// A definition whose schema is not JSON fails the call before anything is
// sent, naming the tool, at either provider's edge.
func TestToolDefBadSchema(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t)
	bad := []llm.ToolDef{{Name: "read_file"}, {Name: "broken", Parameters: json.RawMessage(`{"type":`)}}
	models := map[string]llm.Model{
		"openai":    newProvider(t, srv, nil),
		"anthropic": newAnthropic(t, srv, nil),
	}
	for name, m := range models {
		req := userReq("hi")
		req.Tools = bad
		_, err := m.Complete(context.Background(), req)
		if err == nil || !strings.Contains(err.Error(), "tools[1]: parameters of broken") {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}
