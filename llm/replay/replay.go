package replay

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/trioagent/trio/llm"
)

// Server is a running endpoint; Close stops it.
type Server struct {
	ln  net.Listener
	srv *http.Server
}

// Start serves m on a loopback port. A reply names the requested model
// (the role), as an endpoint serving that model would. Each request's llm.Request.Agent is
// roleOf(the request's model name); a nil roleOf uses the model name
// itself, so a provider configured with models {planner: planner, worker:
// worker} replays a scripted model's roles.
func Start(m llm.Model, roleOf func(model string) string) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("replay: listen on loopback: %w", err)
	}
	s := &Server{ln: ln, srv: &http.Server{Handler: Handler(m, roleOf), ReadHeaderTimeout: 10 * time.Second}}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// URL is the base URL, ending in /v1 (the provider's BaseURL).
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() + "/v1" }

// Close stops the server and drops open connections.
func (s *Server) Close() { _ = s.srv.Close() }

// Handler answers POST /v1/chat/completions with m (see Start).
func Handler(m llm.Model, roleOf func(model string) string) http.Handler {
	h := &handler{model: m, roleOf: roleOf}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", h.serve)
	return mux
}

type handler struct {
	model  llm.Model
	roleOf func(string) string
	n      atomic.Int64 // requests answered, for ids
}

// wireRequest is the part of a chat completions request that reaches
// the model.
type wireRequest struct {
	Model          string            `json:"model"`
	Stream         bool              `json:"stream"`
	Messages       []json.RawMessage `json:"messages"`
	Tools          []json.RawMessage `json:"tools"`
	ResponseFormat json.RawMessage   `json:"response_format"`
	MaxTokens      *int              `json:"max_tokens"`
	MaxCompletion  *int              `json:"max_completion_tokens"`
}

type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []wireCall      `json:"tool_calls"`
}

type wireCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

func (h *handler) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	req, model, err := h.decode(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error(), "")
		return
	}
	resp, err := h.model.Complete(r.Context(), req)
	if err != nil {
		code := ""
		if errors.Is(err, llm.ErrScriptExhausted) {
			code = llm.ScriptExhaustedCode // the provider turns it back into the sentinel
		}
		writeError(w, http.StatusBadRequest, err.Error(), code)
		return
	}
	if resp.Message.Role != "" && resp.Message.Role != llm.RoleAssistant {
		writeError(w, http.StatusInternalServerError, "replay: the model replied with role "+string(resp.Message.Role), "")
		return
	}
	n := h.n.Add(1)
	msg := map[string]any{"role": "assistant", "content": resp.Message.Content}
	var calls []wireCall
	for i, tc := range resp.Message.ToolCalls {
		c := wireCall{ID: tc.ID, Type: "function"}
		if c.ID == "" {
			c.ID = fmt.Sprintf("call_%d_%d", n, i)
		}
		c.Function.Name, c.Function.Arguments = tc.Name, tc.Arguments
		calls = append(calls, c)
	}
	if len(calls) > 0 {
		msg["tool_calls"] = calls
		if resp.Message.Content == "" {
			msg["content"] = nil
		}
	}
	finish := resp.FinishReason
	if finish == "" {
		finish = "stop"
		if len(calls) > 0 {
			finish = "tool_calls"
		}
	}
	u := resp.Usage
	out, err := json.Marshal(map[string]any{
		"id": fmt.Sprintf("chatcmpl-replay-%d", n), "object": "chat.completion", "created": time.Now().Unix(), "model": model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage": map[string]any{
			"prompt_tokens": u.PromptTokens, "completion_tokens": u.CompletionTokens, "total_tokens": u.PromptTokens + u.CompletionTokens,
			"prompt_tokens_details": map[string]int{"cached_tokens": u.CachedPromptTokens},
		},
	})
	if err != nil {
		writeError(w, http.StatusInternalServerError, "replay: "+err.Error(), "")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// decode turns a request body into the llm.Request the model answers,
// and the requested model name.
func (h *handler) decode(body []byte) (llm.Request, string, error) {
	var wr wireRequest
	if err := json.Unmarshal(body, &wr); err != nil {
		return llm.Request{}, "", fmt.Errorf("invalid JSON body: %w", err)
	}
	if wr.Stream {
		return llm.Request{}, "", errors.New("replay: streamed requests are not served; configure the provider without streaming")
	}
	req := llm.Request{Agent: wr.Model}
	if h.roleOf != nil {
		req.Agent = h.roleOf(wr.Model)
	}
	for i, raw := range wr.Messages {
		var wm wireMessage
		if err := json.Unmarshal(raw, &wm); err != nil {
			return llm.Request{}, "", fmt.Errorf("messages[%d]: %w", i, err)
		}
		text, err := content(wm.Content)
		if err != nil {
			return llm.Request{}, "", fmt.Errorf("messages[%d].content: %w", i, err)
		}
		m := llm.Message{Role: llm.Role(wm.Role), Content: text, ToolCallID: wm.ToolCallID}
		for _, tc := range wm.ToolCalls {
			m.ToolCalls = append(m.ToolCalls, llm.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		req.Messages = append(req.Messages, m)
	}
	for i, raw := range wr.Tools {
		var t struct {
			Type     string      `json:"type"`
			Function llm.ToolDef `json:"function"`
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return llm.Request{}, "", fmt.Errorf("tools[%d]: %w", i, err)
		}
		if t.Type != "function" {
			return llm.Request{}, "", fmt.Errorf("tools[%d]: type %q: only function tools are served", i, t.Type)
		}
		req.Tools = append(req.Tools, t.Function)
	}
	if len(wr.ResponseFormat) > 0 && string(wr.ResponseFormat) != "null" {
		var rf struct {
			Type       string `json:"type"`
			JSONSchema struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Schema      json.RawMessage `json:"schema"`
			} `json:"json_schema"`
		}
		if err := json.Unmarshal(wr.ResponseFormat, &rf); err != nil {
			return llm.Request{}, "", fmt.Errorf("response_format: %w", err)
		}
		if rf.Type == "json_schema" {
			req.Output = &llm.OutputSchema{Name: rf.JSONSchema.Name, Description: rf.JSONSchema.Description, Schema: rf.JSONSchema.Schema}
		}
	}
	switch {
	case wr.MaxCompletion != nil:
		req.MaxTokens = *wr.MaxCompletion
	case wr.MaxTokens != nil:
		req.MaxTokens = *wr.MaxTokens
	}
	return req, wr.Model, nil
}

// content is a message's content as text: a string, or the text of its
// parts.
func content(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("neither text nor a list of parts")
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// writeError answers an OpenAI-shaped error body; code "" sends null.
func writeError(w http.ResponseWriter, status int, message, code string) {
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
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": message, "type": typ, "param": nil, "code": c}})
}
