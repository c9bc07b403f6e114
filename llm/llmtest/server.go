package llmtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/trioagent/trio/llm"
)

// ToolCall is one tool call in a scripted reply. An empty ID is filled in
// as call_<request>_<index>.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Call is a ToolCall with the given name and raw JSON arguments.
func Call(name, arguments string) ToolCall { return ToolCall{Name: name, Arguments: arguments} }

// Reply is what the server answers to one request: a completion, or a
// fault when Status, RawBody or Cut is set.
type Reply struct {
	Content   string
	Refusal   string
	ToolCalls []ToolCall
	// Usage, when nil, is estimated as bytes/4 of request and reply.
	Usage *llm.Usage
	// FinishReason defaults to "tool_calls" when there are tool calls,
	// else "stop".
	FinishReason string
	// Model defaults to the requested model.
	Model string

	// Delay holds the reply back (unless the client gives up first).
	Delay time.Duration
	// Status, when not 0 or 200, answers with that status and an OpenAI
	// error body carrying ErrorMessage.
	Status       int
	ErrorMessage string
	// Header is added to the response (e.g. Retry-After).
	Header map[string]string
	// RawBody, when set, is sent as-is as a 200 application/json body.
	RawBody string
	// Cut, when > 0, closes the connection after that many SSE chunks of
	// a streamed reply, or after part of the body of a plain one.
	Cut int
}

// Text is a plain text reply.
func Text(content string) Reply { return Reply{Content: content} }

// ToolCalls is a reply that calls the given tools.
func ToolCalls(calls ...ToolCall) Reply { return Reply{ToolCalls: calls} }

// JSON is a structured reply: v marshalled into the content.
func JSON(v any) Reply {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("llmtest.JSON: %v", err))
	}
	return Reply{Content: string(b)}
}

// RateLimited is a 429 with the given Retry-After header (omitted if "").
func RateLimited(retryAfter string) Reply {
	r := Reply{Status: http.StatusTooManyRequests, ErrorMessage: "rate limit reached"}
	if retryAfter != "" {
		r.Header = map[string]string{"Retry-After": retryAfter}
	}
	return r
}

// ServerError is a 500.
func ServerError() Reply {
	return Reply{Status: http.StatusInternalServerError, ErrorMessage: "the server had an error"}
}

// Status is an error reply with the given status and message.
func Status(code int, message string) Reply { return Reply{Status: code, ErrorMessage: message} }

// Malformed is a 200 whose body is not valid JSON.
func Malformed() Reply {
	return Reply{RawBody: `{"id": "chatcmpl-broken", "choices": [{"index": 0, "message": {"role": "assist`}
}

// WithUsage returns r reporting the given token usage.
func (r Reply) WithUsage(prompt, completion int) Reply {
	r.Usage = &llm.Usage{PromptTokens: prompt, CompletionTokens: completion}
	return r
}

// WithCachedUsage returns r reporting the given token usage, cached of the
// prompt tokens served from the prompt cache (OpenAI reports no cache
// writes).
func (r Reply) WithCachedUsage(prompt, cached, completion int) Reply {
	r.Usage = &llm.Usage{PromptTokens: prompt, CachedPromptTokens: cached, CompletionTokens: completion}
	return r
}

// After returns r delayed by d.
func (r Reply) After(d time.Duration) Reply {
	r.Delay = d
	return r
}

// CutAfter returns r with its connection closed after n chunks.
func (r Reply) CutAfter(n int) Reply {
	r.Cut = n
	return r
}

// Message is one recorded chat message, content flattened to text.
type Message struct {
	Role       string `json:"role"`
	Content    string `json:"content"`
	ToolCallID string `json:"tool_call_id,omitempty"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls,omitempty"`
}

// Request is one recorded request.
type Request struct {
	// Body is the raw JSON body as received.
	Body   []byte
	Header http.Header
	// Decoded fields of Body, for convenient assertions.
	Model          string
	Stream         bool
	Messages       []Message
	Tools          []json.RawMessage
	ResponseFormat json.RawMessage
	// MaxTokens is the reply cap, sent as max_tokens or
	// max_completion_tokens (TokenParameter says which).
	MaxTokens       *int
	TokenParameter  string
	ReasoningEffort string
	Temperature     *float64
	// ThinkingBudget is an Anthropic request's extended-thinking budget
	// (0: thinking off).
	ThinkingBudget int
}

// Option configures a Server.
type Option func(*Server)

// WithoutStructuredOutputs makes the server answer 400 to any request that
// carries response_format, like endpoints without structured outputs. Such
// a request consumes no queued reply.
func WithoutStructuredOutputs() Option { return func(s *Server) { s.noSchema = true } }

// WithChunkSize sets how many bytes of content or arguments go in one SSE
// chunk (default 5), so deltas are split across chunks.
func WithChunkSize(n int) Option {
	return func(s *Server) {
		if n > 0 {
			s.chunk = n
		}
	}
}

// WithModel answers every request the queue cannot with m. The agent role
// of the llm.Request is roleOf(model name of the request); nil roleOf uses
// the model name itself, so a provider configured with models {planner:
// planner, worker: worker} replays a scripted model's roles.
func WithModel(m llm.Model, roleOf func(model string) string) Option {
	return func(s *Server) {
		s.model = m
		s.roleOf = roleOf
	}
}

// Server is the fake endpoint. It is safe for concurrent use.
type Server struct {
	t        testing.TB
	srv      *httptest.Server
	noSchema bool
	chunk    int
	model    llm.Model
	roleOf   func(string) string

	mu    sync.Mutex
	queue []Reply
	reqs  []Request
}

// NewServer starts a server on loopback and closes it when the test ends.
// A request that finds the queue empty (and no WithModel) fails the test.
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := start(t, opts)
	t.Cleanup(s.Close)
	return s
}

// Start starts a server outside a test (for demos); Close stops it.
func Start(opts ...Option) *Server { return start(nil, opts) }

func start(t testing.TB, opts []Option) *Server {
	s := &Server{t: t, chunk: 5}
	for _, o := range opts {
		o(s)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.handle)
	mux.HandleFunc("POST /v1/messages", s.handleAnthropic)
	s.srv = httptest.NewServer(mux)
	return s
}

// URL is the base URL, ending in /v1.
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Enqueue appends replies; each request takes the next one.
func (s *Server) Enqueue(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, replies...)
}

// Pending is how many queued replies are left.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Requests returns every request received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

type wireRequest struct {
	Model          string            `json:"model"`
	Stream         bool              `json:"stream"`
	Messages       []json.RawMessage `json:"messages"`
	Tools          []json.RawMessage `json:"tools"`
	ResponseFormat json.RawMessage   `json:"response_format"`
	MaxTokens      *int              `json:"max_tokens"`
	MaxCompletion  *int              `json:"max_completion_tokens"`
	Reasoning      string            `json:"reasoning_effort"`
	Temperature    *float64          `json:"temperature"`
	StreamOptions  struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var wr wireRequest
	if err := json.Unmarshal(body, &wr); err != nil {
		writeError(w, http.StatusBadRequest, "invalid JSON body: "+err.Error(), "")
		return
	}
	rec := Request{
		Body: body, Header: r.Header.Clone(), Model: wr.Model, Stream: wr.Stream,
		Tools: wr.Tools, MaxTokens: wr.MaxTokens, Temperature: wr.Temperature, ReasoningEffort: wr.Reasoning,
	}
	switch {
	case wr.MaxTokens != nil:
		rec.TokenParameter = llm.TokenParamMaxTokens
	case wr.MaxCompletion != nil:
		rec.MaxTokens, rec.TokenParameter = wr.MaxCompletion, llm.TokenParamMaxCompletionTokens
	}
	if len(wr.ResponseFormat) > 0 && string(wr.ResponseFormat) != "null" {
		rec.ResponseFormat = wr.ResponseFormat
	}
	for i, raw := range wr.Messages {
		m, err := decodeMessage(raw)
		if err != nil {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("messages[%d]: %v", i, err), "messages")
			return
		}
		rec.Messages = append(rec.Messages, m)
	}

	s.mu.Lock()
	s.reqs = append(s.reqs, rec)
	n := len(s.reqs)
	if t := wr.Temperature; t != nil && *t != 1 && llm.IsReasoningModel(wr.Model) {
		s.mu.Unlock()
		writeErrorCode(w, http.StatusBadRequest, fmt.Sprintf("Unsupported value: 'temperature' does not support %v with this model. Only the default (1) value is supported.", *t),
			"temperature", "unsupported_value")
		return
	}
	if param := unsupported(wr); param != "" {
		// What OpenAI answers, word for word; no queued reply is used.
		s.mu.Unlock()
		msg := "Unsupported parameter: '" + param + "' is not supported with this model."
		if param == llm.TokenParamMaxTokens {
			msg += " Use 'max_completion_tokens' instead."
		}
		writeErrorCode(w, http.StatusBadRequest, msg, param, "unsupported_parameter")
		return
	}
	if s.noSchema && rec.ResponseFormat != nil {
		s.mu.Unlock()
		writeError(w, http.StatusBadRequest, "response_format is not supported by this endpoint", "response_format")
		return
	}
	var reply Reply
	have := len(s.queue) > 0
	if have {
		reply, s.queue = s.queue[0], s.queue[1:]
	}
	s.mu.Unlock()

	if !have {
		if s.model == nil {
			msg := fmt.Sprintf("llmtest: request %d found no scripted reply left", n)
			if s.t != nil {
				s.t.Errorf("%s", msg)
			}
			writeError(w, http.StatusBadRequest, msg, "")
			return
		}
		reply, err = s.fromModel(r, rec)
		if err != nil {
			code := ""
			if errors.Is(err, llm.ErrScriptExhausted) {
				// The client tells "the script ran out" from other
				// failures by this code (see llm.ScriptExhaustedCode).
				code = llm.ScriptExhaustedCode
			}
			writeErrorCode(w, http.StatusBadRequest, err.Error(), "", code)
			return
		}
	}

	if reply.Delay > 0 {
		t := time.NewTimer(reply.Delay)
		select {
		case <-r.Context().Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
	for k, v := range reply.Header {
		w.Header().Set(k, v)
	}
	switch {
	case reply.Status != 0 && reply.Status != http.StatusOK:
		writeError(w, reply.Status, reply.ErrorMessage, "")
	case reply.RawBody != "":
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, reply.RawBody)
	case wr.Stream:
		s.writeStream(w, n, rec, reply, wr.StreamOptions.IncludeUsage)
	default:
		s.writePlain(w, n, rec, reply)
	}
}

// unsupported names the parameter of wr that OpenAI refuses for wr's
// model, or is "": max_tokens for a reasoning model (llm.IsReasoningModel),
// reasoning_effort for any other.
func unsupported(wr wireRequest) string {
	reasoning := llm.IsReasoningModel(wr.Model)
	switch {
	case reasoning && wr.MaxTokens != nil:
		return llm.TokenParamMaxTokens
	case !reasoning && wr.Reasoning != "":
		return "reasoning_effort"
	}
	return ""
}

func decodeMessage(raw json.RawMessage) (Message, error) {
	var m struct {
		Message
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return Message{}, err
	}
	out := m.Message
	if len(m.Content) > 0 && string(m.Content) != "null" {
		if err := json.Unmarshal(m.Content, &out.Content); err != nil {
			var parts []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			if err := json.Unmarshal(m.Content, &parts); err != nil {
				return Message{}, fmt.Errorf("content is neither text nor parts: %w", err)
			}
			var b strings.Builder
			for _, p := range parts {
				b.WriteString(p.Text)
			}
			out.Content = b.String()
		}
	}
	return out, nil
}

func writeError(w http.ResponseWriter, status int, message, param string) {
	writeErrorCode(w, status, message, param, "")
}

// writeErrorCode is writeError with the error's code ("" sends null).
func writeErrorCode(w http.ResponseWriter, status int, message, param, code string) {
	typ := "invalid_request_error"
	if status >= 500 {
		typ = "server_error"
	}
	var c any
	if code != "" {
		c = code
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"error": map[string]any{"message": message, "type": typ, "param": param, "code": c},
	})
}

type wireCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

func (s *Server) complete(n int, rec Request, reply Reply) (model, finish string, usage llm.Usage, calls []wireCall) {
	model = reply.Model
	if model == "" {
		model = rec.Model
	}
	finish = reply.FinishReason
	if finish == "" {
		finish = "stop"
		if len(reply.ToolCalls) > 0 {
			finish = "tool_calls"
		}
	}
	out := len(reply.Content) + len(reply.Refusal)
	for i, tc := range reply.ToolCalls {
		var c wireCall
		c.ID = tc.ID
		if c.ID == "" {
			c.ID = fmt.Sprintf("call_%d_%d", n, i)
		}
		c.Type = "function"
		c.Function.Name = tc.Name
		c.Function.Arguments = tc.Arguments
		calls = append(calls, c)
		out += len(tc.Name) + len(tc.Arguments)
	}
	if reply.Usage != nil {
		usage = *reply.Usage
	} else {
		usage = llm.Usage{PromptTokens: max(1, len(rec.Body)/4), CompletionTokens: max(1, out/4)}
	}
	return model, finish, usage, calls
}

func usageJSON(u llm.Usage) map[string]any {
	return map[string]any{
		"prompt_tokens": u.PromptTokens, "completion_tokens": u.CompletionTokens,
		"total_tokens":          u.PromptTokens + u.CompletionTokens,
		"prompt_tokens_details": map[string]int{"cached_tokens": u.CachedPromptTokens},
	}
}

func (s *Server) writePlain(w http.ResponseWriter, n int, rec Request, reply Reply) {
	model, finish, usage, calls := s.complete(n, rec, reply)
	msg := map[string]any{"role": "assistant", "content": reply.Content}
	if reply.Content == "" && len(calls) > 0 {
		msg["content"] = nil
	}
	if reply.Refusal != "" {
		msg["refusal"] = reply.Refusal
	}
	if len(calls) > 0 {
		msg["tool_calls"] = calls
	}
	body, _ := json.Marshal(map[string]any{
		"id": fmt.Sprintf("chatcmpl-llmtest-%d", n), "object": "chat.completion",
		"created": time.Now().Unix(), "model": model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   usageJSON(usage),
	})
	w.Header().Set("Content-Type", "application/json")
	if reply.Cut > 0 {
		// Promise the whole body, send part of it, drop the connection.
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		_, _ = w.Write(body[:len(body)/2])
		http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler)
	}
	_, _ = w.Write(body)
}

func (s *Server) writeStream(w http.ResponseWriter, n int, rec Request, reply Reply, includeUsage bool) {
	model, finish, usage, calls := s.complete(n, rec, reply)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	id := fmt.Sprintf("chatcmpl-llmtest-%d", n)
	sent := 0
	send := func(choices []any, extra map[string]any) {
		c := map[string]any{"id": id, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": model, "choices": choices}
		for k, v := range extra {
			c[k] = v
		}
		b, _ := json.Marshal(c)
		fmt.Fprintf(w, "data: %s\n\n", b)
		_ = rc.Flush()
		sent++
		if reply.Cut > 0 && sent >= reply.Cut {
			panic(http.ErrAbortHandler)
		}
	}
	delta := func(d map[string]any) []any {
		return []any{map[string]any{"index": 0, "delta": d, "finish_reason": nil}}
	}
	send(delta(map[string]any{"role": "assistant", "content": ""}), nil)
	for _, p := range split(reply.Content, s.chunk) {
		send(delta(map[string]any{"content": p}), nil)
	}
	for _, p := range split(reply.Refusal, s.chunk) {
		send(delta(map[string]any{"refusal": p}), nil)
	}
	for i, c := range calls {
		head := c
		head.Index = &i
		head.Function.Arguments = ""
		send(delta(map[string]any{"tool_calls": []wireCall{head}}), nil)
		for _, p := range split(c.Function.Arguments, s.chunk) {
			var frag wireCall
			frag.Index = &i
			frag.Function.Arguments = p
			send(delta(map[string]any{"tool_calls": []wireCall{frag}}), nil)
		}
	}
	send([]any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}, nil)
	if includeUsage {
		send([]any{}, map[string]any{"usage": usageJSON(usage)})
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
	_ = rc.Flush()
}

// split cuts s into pieces of about n bytes on rune boundaries.
func split(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		k := min(n, len(s))
		for k < len(s) && !utf8.RuneStart(s[k]) {
			k++
		}
		out = append(out, s[:k])
		s = s[k:]
	}
	return out
}

// fromModel answers a request with the configured llm.Model.
func (s *Server) fromModel(r *http.Request, rec Request) (Reply, error) {
	req := llm.Request{Agent: rec.Model}
	if s.roleOf != nil {
		req.Agent = s.roleOf(rec.Model)
	}
	for _, m := range rec.Messages {
		lm := llm.Message{Role: llm.Role(m.Role), Content: m.Content, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			lm.ToolCalls = append(lm.ToolCalls, llm.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		req.Messages = append(req.Messages, lm)
	}
	for i, raw := range rec.Tools {
		var t struct {
			Type     string      `json:"type"`
			Function llm.ToolDef `json:"function"`
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return Reply{}, fmt.Errorf("tools[%d]: %w", i, err)
		}
		if t.Type != "function" {
			return Reply{}, fmt.Errorf("tools[%d]: type %q: only function tools are served", i, t.Type)
		}
		req.Tools = append(req.Tools, t.Function)
	}
	if rec.ResponseFormat != nil {
		var rf struct {
			Type       string `json:"type"`
			JSONSchema struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Schema      json.RawMessage `json:"schema"`
			} `json:"json_schema"`
		}
		if err := json.Unmarshal(rec.ResponseFormat, &rf); err == nil && rf.Type == "json_schema" {
			req.Output = &llm.OutputSchema{Name: rf.JSONSchema.Name, Description: rf.JSONSchema.Description, Schema: rf.JSONSchema.Schema}
		}
	}
	if rec.MaxTokens != nil {
		req.MaxTokens = *rec.MaxTokens
	}
	return s.answer(r, req)
}

// answer asks the configured llm.Model and turns its response into a Reply.
func (s *Server) answer(r *http.Request, req llm.Request) (Reply, error) {
	resp, err := s.model.Complete(r.Context(), req)
	if err != nil {
		return Reply{}, err
	}
	if resp.Message.Role != "" && resp.Message.Role != llm.RoleAssistant {
		return Reply{}, errors.New("model replied with role " + string(resp.Message.Role))
	}
	out := Reply{Content: resp.Message.Content, FinishReason: resp.FinishReason, Usage: &resp.Usage}
	for _, tc := range resp.Message.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, ToolCall(tc))
	}
	return out, nil
}
