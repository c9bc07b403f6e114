package llmtest

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/trioagent/trio/llm"
)

// The same Server answers the Anthropic Messages API on POST /v1/messages,
// from the same queue of Replies (or WithModel), in the real API's shapes:
// content blocks, tool_use with parsed input, stop reasons, usage with
// cache_read_input_tokens and cache_creation_input_tokens, the SSE event
// sequence of a streamed reply, and error bodies. A Reply's Usage gives
// the totals as llm.Usage does (PromptTokens includes the cached parts);
// the server reports input_tokens as the uncached rest, as the API does.

// AnthropicURL is the base URL for an Anthropic client (without /v1).
func (s *Server) AnthropicURL() string { return s.srv.URL }

// AnthropicBlock is one recorded content block of an Anthropic request.
type AnthropicBlock struct {
	Type         string          `json:"type"`
	Text         string          `json:"text,omitempty"`
	ID           string          `json:"id,omitempty"`
	Name         string          `json:"name,omitempty"`
	Input        json.RawMessage `json:"input,omitempty"`
	ToolUseID    string          `json:"tool_use_id,omitempty"`
	Thinking     string          `json:"thinking,omitempty"`
	Signature    string          `json:"signature,omitempty"`
	Data         string          `json:"data,omitempty"`
	Content      json.RawMessage `json:"content,omitempty"`
	CacheControl *struct {
		Type string `json:"type"`
	} `json:"cache_control,omitempty"`
}

// AnthropicRequest is the decoded body of a Messages API request.
type AnthropicRequest struct {
	Model     string `json:"model"`
	MaxTokens int    `json:"max_tokens"`
	Stream    bool   `json:"stream"`
	// Thinking is extended thinking's setting, when sent.
	Thinking *struct {
		Type         string `json:"type"`
		BudgetTokens int    `json:"budget_tokens"`
	} `json:"thinking,omitempty"`
	Temperature *float64         `json:"temperature,omitempty"`
	System      []AnthropicBlock `json:"system"`
	Messages    []struct {
		Role    string           `json:"role"`
		Content []AnthropicBlock `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name         string          `json:"name"`
		Description  string          `json:"description"`
		InputSchema  json.RawMessage `json:"input_schema"`
		CacheControl json.RawMessage `json:"cache_control,omitempty"`
	} `json:"tools"`
	OutputConfig *struct {
		Format *struct {
			Type   string          `json:"type"`
			Schema json.RawMessage `json:"schema"`
		} `json:"format"`
	} `json:"output_config"`
}

// Breakpoints lists where the request put cache_control: "system[i]" or
// "messages[i].content[j]".
func (a AnthropicRequest) Breakpoints() []string {
	var out []string
	for i, b := range a.System {
		if b.CacheControl != nil {
			out = append(out, fmt.Sprintf("system[%d]", i))
		}
	}
	for i, m := range a.Messages {
		for j, b := range m.Content {
			if b.CacheControl != nil {
				out = append(out, fmt.Sprintf("messages[%d].content[%d]", i, j))
			}
		}
	}
	return out
}

// Anthropic decodes a recorded request's body as a Messages API request.
func (r Request) Anthropic() (AnthropicRequest, error) {
	var a AnthropicRequest
	err := json.Unmarshal(r.Body, &a)
	return a, err
}

func (s *Server) handleAnthropic(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var ar AnthropicRequest
	if err := json.Unmarshal(body, &ar); err != nil {
		writeAnthropicError(w, http.StatusBadRequest, "invalid JSON body: "+err.Error())
		return
	}
	req, err := ar.neutral()
	if err == nil {
		err = ar.checkThinking()
	}
	if err != nil {
		writeAnthropicError(w, http.StatusBadRequest, err.Error())
		return
	}
	mt := ar.MaxTokens
	rec := Request{Body: body, Header: r.Header.Clone(), Model: ar.Model, Stream: ar.Stream, MaxTokens: &mt}
	if ar.thinking() {
		rec.ThinkingBudget = ar.Thinking.BudgetTokens
	}
	for _, m := range req.Messages {
		rm := Message{Role: string(m.Role), Content: m.Content, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			var c struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			}
			c.ID, c.Type, c.Function.Name, c.Function.Arguments = tc.ID, "function", tc.Name, tc.Arguments
			rm.ToolCalls = append(rm.ToolCalls, c)
		}
		rec.Messages = append(rec.Messages, rm)
	}
	if ar.OutputConfig != nil && ar.OutputConfig.Format != nil {
		rec.ResponseFormat, _ = json.Marshal(ar.OutputConfig.Format)
	}

	s.mu.Lock()
	s.reqs = append(s.reqs, rec)
	n := len(s.reqs)
	if s.noSchema && rec.ResponseFormat != nil {
		s.mu.Unlock()
		writeAnthropicError(w, http.StatusBadRequest, "output_config.format: not supported by this model")
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
			writeAnthropicError(w, http.StatusBadRequest, msg)
			return
		}
		req.Agent = ar.Model
		if s.roleOf != nil {
			req.Agent = s.roleOf(ar.Model)
		}
		reply, err = s.answer(r, req)
		if err != nil {
			writeAnthropicError(w, http.StatusBadRequest, err.Error())
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
		writeAnthropicError(w, reply.Status, reply.ErrorMessage)
	case reply.RawBody != "":
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, reply.RawBody)
	case ar.Stream:
		s.writeAnthropicStream(w, n, rec, reply)
	default:
		b, _ := json.Marshal(s.anthropicMessage(n, rec, reply, true))
		w.Header().Set("Content-Type", "application/json")
		if reply.Cut > 0 {
			w.Header().Set("Content-Length", fmt.Sprint(len(b)))
			_, _ = w.Write(b[:len(b)/2])
			http.NewResponseController(w).Flush()
			panic(http.ErrAbortHandler)
		}
		_, _ = w.Write(b)
	}
}

// neutral converts the request to an llm.Request: the system blocks to a
// system message, a user turn's tool results to tool messages and its text
// to a user message, an assistant turn's text and tool_use blocks to one
// assistant message.
func (a AnthropicRequest) neutral() (llm.Request, error) {
	var req llm.Request
	if len(a.System) > 0 {
		var b strings.Builder
		for i, s := range a.System {
			if i > 0 {
				b.WriteString("\n")
			}
			b.WriteString(s.Text)
		}
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleSystem, Content: b.String()})
	}
	for i, m := range a.Messages {
		switch m.Role {
		case "user":
			for j, blk := range m.Content {
				switch blk.Type {
				case "text":
					req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Content: blk.Text})
				case "tool_result":
					req.Messages = append(req.Messages, llm.Message{Role: llm.RoleTool, ToolCallID: blk.ToolUseID, Content: resultText(blk.Content)})
				default:
					return req, fmt.Errorf("messages[%d].content[%d]: unexpected block type %q", i, j, blk.Type)
				}
			}
		case "assistant":
			am := llm.Message{Role: llm.RoleAssistant}
			for _, blk := range m.Content {
				switch blk.Type {
				case "text":
					am.Content += blk.Text
				case "tool_use":
					am.ToolCalls = append(am.ToolCalls, llm.ToolCall{ID: blk.ID, Name: blk.Name, Arguments: string(blk.Input)})
				}
			}
			req.Messages = append(req.Messages, am)
		default:
			return req, fmt.Errorf("messages[%d]: role %q", i, m.Role)
		}
	}
	for _, t := range a.Tools {
		if !json.Valid(t.InputSchema) {
			return req, fmt.Errorf("tool %s: input_schema is not JSON", t.Name)
		}
		req.Tools = append(req.Tools, llm.ToolDef{Name: t.Name, Description: t.Description, Parameters: t.InputSchema})
	}
	if a.OutputConfig != nil && a.OutputConfig.Format != nil {
		req.Output = &llm.OutputSchema{Name: "output", Schema: a.OutputConfig.Format.Schema}
	}
	req.MaxTokens = a.MaxTokens
	return req, nil
}

// thinking reports whether the request turned extended thinking on.
func (a AnthropicRequest) thinking() bool {
	return a.Thinking != nil && a.Thinking.Type == "enabled"
}

// checkThinking refuses what the Messages API refuses with extended
// thinking: a budget under 1024 tokens or not under max_tokens, a
// temperature other than 1, and, in a tool loop (the last user turn
// answers tool calls), a last assistant turn that does not start with
// the thinking blocks it was returned with, unchanged.
func (a AnthropicRequest) checkThinking() error {
	if !a.thinking() {
		return nil
	}
	switch b := a.Thinking.BudgetTokens; {
	case b < 1024:
		return fmt.Errorf("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
	case b >= a.MaxTokens:
		return fmt.Errorf("`max_tokens` must be greater than `thinking.budget_tokens`")
	}
	if a.Temperature != nil && *a.Temperature != 1 {
		return fmt.Errorf("`temperature` may only be set to 1 when thinking is enabled")
	}
	n := len(a.Messages)
	if n < 2 || a.Messages[n-1].Role != "user" || a.Messages[n-2].Role != "assistant" {
		return nil
	}
	answers := false
	for _, b := range a.Messages[n-1].Content {
		answers = answers || b.Type == "tool_result"
	}
	last := a.Messages[n-2].Content
	if !answers || len(last) == 0 {
		return nil
	}
	switch first := last[0]; first.Type {
	case "thinking":
		if first.Signature != thinkingSignature(first.Thinking) {
			return fmt.Errorf("messages.%d.content.0: Invalid `signature` in `thinking` block", n-2)
		}
	case "redacted_thinking":
	default:
		return fmt.Errorf("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, a final `assistant` message must start with a thinking block", n-2, first.Type)
	}
	return nil
}

// thinkingSignature is what the server signs a thinking block's text with.
func thinkingSignature(text string) string {
	sum := sha256.Sum256([]byte("llmtest thinking\x00" + text))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// thinkingText is the thinking the server returns for request n.
func thinkingText(n int) string { return fmt.Sprintf("llmtest: thinking for request %d.", n) }

// resultText flattens a tool_result's content (a string or text blocks).
func resultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []AnthropicBlock
	_ = json.Unmarshal(raw, &blocks)
	var b strings.Builder
	for _, x := range blocks {
		b.WriteString(x.Text)
	}
	return b.String()
}

// anthropicUsage is the API's usage object for u.
func anthropicUsage(u llm.Usage) map[string]any {
	return map[string]any{
		"input_tokens":                max(u.PromptTokens-u.CachedPromptTokens-u.CacheWriteTokens, 0),
		"output_tokens":               u.CompletionTokens,
		"cache_read_input_tokens":     u.CachedPromptTokens,
		"cache_creation_input_tokens": u.CacheWriteTokens,
	}
}

func stopReason(finish string) string {
	switch finish {
	case "tool_calls":
		return "tool_use"
	case "length":
		return "max_tokens"
	case "stop":
		return "end_turn"
	}
	return finish
}

// anthropicMessage is the reply as a Messages API message, with its
// content blocks (full, or empty for a stream's message_start).
func (s *Server) anthropicMessage(n int, rec Request, reply Reply, full bool) map[string]any {
	model, finish, usage, calls := s.complete(n, rec, reply)
	content := []any{}
	if full {
		if rec.ThinkingBudget > 0 {
			content = append(content, map[string]any{"type": "thinking", "thinking": thinkingText(n), "signature": thinkingSignature(thinkingText(n))})
		}
		content = append(content, anthropicBlocks(reply, calls)...)
	}
	return map[string]any{
		"id": fmt.Sprintf("msg_llmtest_%d", n), "type": "message", "role": "assistant", "model": model,
		"content": content, "stop_reason": stopReason(finish), "stop_sequence": nil, "usage": anthropicUsage(usage),
	}
}

func anthropicBlocks(reply Reply, calls []wireCall) []any {
	var out []any
	if reply.Content != "" {
		out = append(out, map[string]any{"type": "text", "text": reply.Content})
	}
	for _, c := range calls {
		input := json.RawMessage(c.Function.Arguments)
		if !json.Valid(input) {
			input = json.RawMessage(`{}`)
		}
		out = append(out, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Function.Name, "input": input})
	}
	return out
}

func (s *Server) writeAnthropicStream(w http.ResponseWriter, n int, rec Request, reply Reply) {
	start := s.anthropicMessage(n, rec, reply, false)
	usage := start["usage"].(map[string]any)
	_, _, _, calls := s.complete(n, rec, reply)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	sent := 0
	send := func(kind string, v map[string]any) {
		v["type"] = kind
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", kind, b)
		_ = rc.Flush()
		sent++
		if reply.Cut > 0 && sent >= reply.Cut {
			panic(http.ErrAbortHandler)
		}
	}
	startMsg := map[string]any{}
	for k, v := range start {
		startMsg[k] = v
	}
	startMsg["stop_reason"] = nil
	startMsg["usage"] = map[string]any{"input_tokens": usage["input_tokens"], "output_tokens": 1,
		"cache_read_input_tokens": usage["cache_read_input_tokens"], "cache_creation_input_tokens": usage["cache_creation_input_tokens"]}
	send("message_start", map[string]any{"message": startMsg})
	idx := 0
	if rec.ThinkingBudget > 0 {
		send("content_block_start", map[string]any{"index": idx, "content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}})
		for _, p := range split(thinkingText(n), s.chunk) {
			send("content_block_delta", map[string]any{"index": idx, "delta": map[string]any{"type": "thinking_delta", "thinking": p}})
		}
		send("content_block_delta", map[string]any{"index": idx, "delta": map[string]any{"type": "signature_delta", "signature": thinkingSignature(thinkingText(n))}})
		send("content_block_stop", map[string]any{"index": idx})
		idx++
	}
	if reply.Content != "" {
		send("content_block_start", map[string]any{"index": idx, "content_block": map[string]any{"type": "text", "text": ""}})
		for _, p := range split(reply.Content, s.chunk) {
			send("content_block_delta", map[string]any{"index": idx, "delta": map[string]any{"type": "text_delta", "text": p}})
		}
		send("content_block_stop", map[string]any{"index": idx})
		idx++
	}
	for _, b := range anthropicBlocks(Reply{}, calls) {
		blk := b.(map[string]any)
		input := string(blk["input"].(json.RawMessage))
		send("content_block_start", map[string]any{"index": idx, "content_block": map[string]any{"type": "tool_use", "id": blk["id"], "name": blk["name"], "input": map[string]any{}}})
		for _, p := range split(input, s.chunk) {
			send("content_block_delta", map[string]any{"index": idx, "delta": map[string]any{"type": "input_json_delta", "partial_json": p}})
		}
		send("content_block_stop", map[string]any{"index": idx})
		idx++
	}
	send("message_delta", map[string]any{"delta": map[string]any{"stop_reason": start["stop_reason"], "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": usage["output_tokens"]}})
	send("message_stop", map[string]any{})
}

func writeAnthropicError(w http.ResponseWriter, status int, message string) {
	typ := "invalid_request_error"
	switch {
	case status == http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case status == 529:
		typ = "overloaded_error"
	case status >= 500:
		typ = "api_error"
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": message}})
}
