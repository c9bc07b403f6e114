package llmtest_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/trioagent/trio/llm/llmtest"
)

func post(t *testing.T, s *llmtest.Server, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(s.URL()+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestServerPlainReply(t *testing.T) {
	t.Parallel()
	s := llmtest.NewServer(t)
	if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") || !strings.HasSuffix(s.URL(), "/v1") {
		t.Fatalf("URL = %s", s.URL())
	}
	s.Enqueue(llmtest.Reply{Content: "hi", ToolCalls: []llmtest.ToolCall{llmtest.Call("ls", "{}")}}.WithUsage(3, 4))
	resp := post(t, s, `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],"response_format":{"type":"json_object"}}`)
	var got struct {
		Model   string `json:"model"`
		Choices []struct {
			FinishReason string `json:"finish_reason"`
			Message      struct {
				Content   string `json:"content"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
		Usage map[string]json.RawMessage `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	c := got.Choices[0]
	if got.Model != "m" || c.FinishReason != "tool_calls" || c.Message.Content != "hi" || c.Message.ToolCalls[0].ID != "call_1_0" ||
		c.Message.ToolCalls[0].Function.Name != "ls" || string(got.Usage["total_tokens"]) != "7" {
		t.Errorf("reply = %+v", got)
	}
	rec := s.Requests()
	if len(rec) != 1 || rec[0].Messages[0].Content != "ab" || string(rec[0].ResponseFormat) != `{"type":"json_object"}` || s.Pending() != 0 {
		t.Errorf("recorded = %+v", rec)
	}
}

func TestServerStream(t *testing.T) {
	t.Parallel()
	s := llmtest.NewServer(t, llmtest.WithChunkSize(3))
	s.Enqueue(llmtest.Reply{Content: "abcdefg", ToolCalls: []llmtest.ToolCall{
		{ID: "c1", Name: "write_file", Arguments: `{"path":"x"}`},
		{ID: "c2", Name: "read_file", Arguments: `{"path":"y"}`},
	}}.WithUsage(10, 5))
	resp := post(t, s, `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[]}`)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	var (
		events  []string
		content strings.Builder
		args    = map[int]string{}
		ids     = map[int]string{}
		finish  string
		usage   map[string]json.RawMessage
	)
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		events = append(events, line)
		if line == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct {
					Content   string `json:"content"`
					ToolCalls []struct {
						Index    int    `json:"index"`
						ID       string `json:"id"`
						Function struct{ Arguments string }
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage map[string]json.RawMessage `json:"usage"`
		}
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("chunk %q: %v", line, err)
		}
		if c.Usage != nil {
			usage = c.Usage
		}
		for _, ch := range c.Choices {
			content.WriteString(ch.Delta.Content)
			for _, tc := range ch.Delta.ToolCalls {
				args[tc.Index] += tc.Function.Arguments
				if tc.ID != "" {
					ids[tc.Index] = tc.ID
				}
			}
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
	}
	if events[len(events)-1] != "[DONE]" {
		t.Errorf("stream does not end with [DONE]: %v", events)
	}
	// role + 3 content + per call (head + 4 fragments) ×2 + finish + usage + DONE
	if len(events) != 1+3+2*5+1+1+1 {
		t.Errorf("%d events: %v", len(events), events)
	}
	if content.String() != "abcdefg" || args[0] != `{"path":"x"}` || args[1] != `{"path":"y"}` || ids[0] != "c1" || ids[1] != "c2" ||
		finish != "tool_calls" || string(usage["prompt_tokens"]) != "10" {
		t.Errorf("assembled content %q args %v ids %v finish %q usage %v", content.String(), args, ids, finish, usage)
	}
}

func TestServerFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		opts   []llmtest.Option
		reply  llmtest.Reply
		body   string
		status int
		header string
		want   string // substring of the body
	}{
		{"429", nil, llmtest.RateLimited("2"), `{"model":"m","messages":[]}`, 429, "2", "rate limit"},
		{"500", nil, llmtest.ServerError(), `{"model":"m","messages":[]}`, 500, "", "server_error"},
		{"malformed", nil, llmtest.Malformed(), `{"model":"m","messages":[]}`, 200, "", `"role": "assist`},
		{"no structured outputs", []llmtest.Option{llmtest.WithoutStructuredOutputs()}, llmtest.Text("kept"), `{"model":"m","messages":[],"response_format":{"type":"json_schema"}}`, 400, "", `"param":"response_format"`},
		{"bad request body", nil, llmtest.Text("kept"), `{"model":`, 400, "", "invalid JSON body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := llmtest.NewServer(t, tt.opts...)
			s.Enqueue(tt.reply)
			resp := post(t, s, tt.body)
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status || resp.Header.Get("Retry-After") != tt.header || !strings.Contains(string(b), tt.want) {
				t.Errorf("status %d Retry-After %q body %s", resp.StatusCode, resp.Header.Get("Retry-After"), b)
			}
			if tt.reply.Content == "kept" && s.Pending() != 1 {
				t.Error("a rejected request consumed a reply")
			}
		})
	}
}

func TestServerCutStream(t *testing.T) {
	t.Parallel()
	s := llmtest.NewServer(t)
	s.Enqueue(llmtest.Text("abcdefghijklmnopqrstuvwxyz").CutAfter(3))
	resp := post(t, s, `{"model":"m","stream":true,"messages":[]}`)
	b, err := io.ReadAll(resp.Body)
	if err == nil {
		t.Fatalf("cut stream read without error: %s", b)
	}
	if n := strings.Count(string(b), "data: "); n != 3 || strings.Contains(string(b), "[DONE]") {
		t.Errorf("got %d events before the cut: %s", n, b)
	}
}

// recorder is a testing.TB whose Errorf is captured.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestServerEmptyQueueFailsTest(t *testing.T) {
	t.Parallel()
	rec := &recorder{TB: t}
	s := llmtest.NewServer(rec)
	resp := post(t, s, `{"model":"m","messages":[]}`)
	if resp.StatusCode != 400 {
		t.Errorf("status %d", resp.StatusCode)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.errs) != 1 || !strings.Contains(rec.errs[0], "request 1 found no scripted reply") {
		t.Errorf("errors = %v", rec.errs)
	}
}
