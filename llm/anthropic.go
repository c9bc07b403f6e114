package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// Defaults of [AnthropicConfig].
const (
	DefaultAnthropicBaseURL   = "https://api.anthropic.com"
	DefaultAnthropicAPIKeyEnv = "ANTHROPIC_API_KEY"
	// DefaultAnthropicMaxTokens is the reply cap sent when none is set:
	// the Messages API requires one.
	DefaultAnthropicMaxTokens = 8192
)

// AnthropicConfig configures the native Anthropic Messages API provider.
// Retries, timeouts and structured-output modes mean what they mean in
// [OpenAIConfig]; NewAnthropic wraps the provider in the same [Retrying].
type AnthropicConfig struct {
	// BaseURL of the API, without /v1; default $ANTHROPIC_BASE_URL when
	// set (as the SDK reads it), else the Anthropic API.
	BaseURL string
	// APIKeyEnv names the environment variable holding the API key;
	// default ANTHROPIC_API_KEY. The key is read once, by NewAnthropic.
	APIKeyEnv string
	// APIKey, when set, is used instead of the environment variable. It
	// never prints.
	APIKey Secret
	// Model is the model name used for any agent role not in Models.
	Model string
	// Models maps an agent role (Request.Agent) to its model name.
	Models map[string]string
	// MaxTokens caps every reply unless Request.MaxTokens does; zero
	// means DefaultAnthropicMaxTokens.
	MaxTokens int
	// ThinkingBudget, when positive, turns on extended thinking with that
	// many tokens for every agent role not in ThinkingBudgetPerRole (at
	// least MinThinkingBudget). Thinking counts inside the API's
	// max_tokens, so a request sends the reply cap plus the budget. The
	// thinking blocks come back in Message.Reasoning and are sent back
	// with the turn they belong to, as the API requires across tool calls.
	ThinkingBudget int
	// ThinkingBudgetPerRole maps an agent role to its budget; 0 turns
	// thinking off for that role.
	ThinkingBudgetPerRole map[string]int
	// Timeout bounds one attempt; zero means DefaultTimeout, negative none.
	Timeout time.Duration
	// MaxRetries: zero means DefaultMaxRetries, negative none, more than
	// MaxRetriesLimit is an error.
	MaxRetries              int
	BackoffBase, BackoffMax time.Duration
	MaxRetryAfter           time.Duration
	// StructuredOutputs is "auto" (default: output_config.format with the
	// JSON schema, falling back to the schema in the system prompt when
	// the API rejects it), "on" or "off".
	StructuredOutputs string
	// Stream asks for server-sent events and assembles the reply.
	Stream bool
	// NoCache sends no cache_control breakpoints.
	NoCache bool
	// OnRetry is told about every failed attempt that will be retried.
	OnRetry func(attempt int, wait time.Duration, err error)
	// MaxReplyBytes caps one response body (a streamed reply's events
	// together); a longer one fails the attempt with ErrReplyTooLarge,
	// which is retried. Zero means DefaultMaxReplyBytes.
	MaxReplyBytes int64
	// HTTPClient replaces http.DefaultClient.
	HTTPClient *http.Client
}

// Anthropic is the [Model] for the Anthropic Messages API. It places
// prompt-cache breakpoints on the stable prefix of every request: after
// the system prompt (which caches the tool definitions with it) and at the
// end of Request.CachePrefix. It is safe for concurrent use.
type Anthropic struct {
	cfg      AnthropicConfig
	client   anthropic.Client
	key      string
	endpoint string
	noSchema atomic.Bool
}

var _ Model = (*Anthropic)(nil)

// NewAnthropic checks cfg, reads the API key and returns the provider. It
// makes no request. The provider comes wrapped in the retries cfg
// describes (Timeout, MaxRetries, BackoffBase, BackoffMax, MaxRetryAfter,
// OnRetry); Unwrap returns the *Anthropic.
func NewAnthropic(cfg AnthropicConfig) (*Retrying, error) {
	p, err := NewAnthropicProvider(cfg)
	if err != nil {
		return nil, err
	}
	return WithRetry(p, retryConfig(p.cfg.Timeout, p.cfg.MaxRetries, p.cfg.BackoffBase, p.cfg.BackoffMax, p.cfg.MaxRetryAfter, p.cfg.OnRetry))
}

// NewAnthropicProvider checks cfg, reads the API key and returns the
// provider alone: each Complete makes one attempt, with no timeout but
// ctx's. For retries of one's own, wrap it with WithRetry.
func NewAnthropicProvider(cfg AnthropicConfig) (*Anthropic, error) {
	key, err := endpointSettings{
		provider: "anthropic", baseURL: &cfg.BaseURL, apiKeyEnv: &cfg.APIKeyEnv, structuredOutputs: &cfg.StructuredOutputs,
		apiKey: cfg.APIKey, model: cfg.Model, models: cfg.Models, maxTokens: &cfg.MaxTokens, maxRetries: &cfg.MaxRetries,
		timeout: &cfg.Timeout, backoffBase: &cfg.BackoffBase, backoffMax: &cfg.BackoffMax, maxRetryAfter: &cfg.MaxRetryAfter,
	}.check(DefaultAnthropicBaseURL, DefaultAnthropicAPIKeyEnv, "ANTHROPIC_BASE_URL")
	if err != nil {
		return nil, err
	}
	if cfg.MaxTokens == 0 {
		cfg.MaxTokens = DefaultAnthropicMaxTokens
	}
	if err := checkThinking("", cfg.ThinkingBudget); err != nil {
		return nil, err
	}
	for role, b := range cfg.ThinkingBudgetPerRole {
		if err := checkThinking(role, b); err != nil {
			return nil, err
		}
	}
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithAPIKey(key),
		option.WithMaxRetries(0), // one retry mechanism, ours
	}
	if err := maxReplyBytes("anthropic", &cfg.MaxReplyBytes); err != nil {
		return nil, err
	}
	opts = append(opts, option.WithMiddleware(capReplies(cfg.MaxReplyBytes)))
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &Anthropic{
		cfg:      cfg,
		client:   anthropic.NewClient(opts...),
		key:      key,
		endpoint: strings.TrimRight(redactURL(cfg.BaseURL), "/") + "/v1/messages",
	}, nil
}

// ModelFor returns the model name used for an agent role.
func (p *Anthropic) ModelFor(agent string) string {
	if m, ok := p.cfg.Models[agent]; ok {
		return m
	}
	return p.cfg.Model
}

// MinThinkingBudget is the smallest extended-thinking budget the
// Messages API accepts.
const MinThinkingBudget = 1024

func checkThinking(role string, budget int) error {
	if budget == 0 || budget >= MinThinkingBudget {
		return nil
	}
	what := "thinking budget"
	if role != "" {
		what += " of " + role
	}
	return fmt.Errorf("llm: anthropic: %s %d: want 0 (off) or at least %d tokens", what, budget, MinThinkingBudget)
}

// ThinkingBudgetFor returns the extended-thinking budget of an agent role
// (0: off).
func (p *Anthropic) ThinkingBudgetFor(agent string) int {
	if b, ok := p.cfg.ThinkingBudgetPerRole[agent]; ok {
		return b
	}
	return p.cfg.ThinkingBudget
}

// Complete sends one Messages API request, in one attempt. With
// StructuredOutputs "auto", an API that rejects the output format (400) is
// asked once more with the schema in the prompt.
func (p *Anthropic) Complete(ctx context.Context, req Request) (Response, error) {
	model := p.ModelFor(req.Agent)
	if model == "" {
		return Response{}, fmt.Errorf("llm: anthropic: no model for agent %q (set model or models.%s)", req.Agent, req.Agent)
	}
	useSchema := req.Output != nil && p.cfg.StructuredOutputs != StructuredOff && !p.noSchema.Load()
	resp, err := p.complete(ctx, req, model, useSchema)
	if err == nil || !useSchema || p.cfg.StructuredOutputs != StructuredAuto || statusOf(err) != http.StatusBadRequest {
		return resp, err
	}
	resp, err2 := p.complete(ctx, req, model, false)
	if err2 != nil {
		return Response{}, errors.Join(err2, err) // the second decides a retry
	}
	p.noSchema.Store(true)
	return resp, nil
}

func (p *Anthropic) complete(ctx context.Context, req Request, model string, useSchema bool) (Response, error) {
	params, err := p.params(req, model, useSchema)
	if err != nil {
		return Response{}, p.wrap(model, req.Agent, err)
	}
	var resp Response
	if p.cfg.Stream {
		resp, err = p.stream(ctx, params)
	} else {
		resp, err = p.once(ctx, params)
	}
	if err != nil {
		return Response{}, p.wrap(model, req.Agent, err)
	}
	if resp.Model == "" {
		resp.Model = model
	}
	return resp, nil
}

// wrap names the endpoint, model and agent, keeps the cause for errors.As,
// and scrubs the key from any text an endpoint echoed.
func (p *Anthropic) wrap(model, agent string, err error) error {
	where := scrubKey(fmt.Sprintf("llm: POST %s (model %s, agent %s)", p.endpoint, model, agentName(agent)), p.key)
	return &providerError{where: where, msg: where + ": " + scrubKey(err.Error(), p.key), err: err}
}

func (p *Anthropic) once(ctx context.Context, params anthropic.MessageNewParams) (Response, error) {
	m, err := p.client.Messages.New(ctx, params)
	if err != nil {
		if strings.Contains(err.Error(), sdkBadJSON) {
			return Response{}, fmt.Errorf("endpoint sent malformed JSON: %w", err)
		}
		return Response{}, err
	}
	return fromAnthropic(m), nil
}

func (p *Anthropic) stream(ctx context.Context, params anthropic.MessageNewParams) (Response, error) {
	s := p.client.Messages.NewStreaming(ctx, params)
	defer s.Close()
	var acc anthropic.Message
	done := false
	for s.Next() {
		ev := s.Current()
		if err := acc.Accumulate(ev); err != nil {
			return Response{}, fmt.Errorf("stream: %w", err)
		}
		if ev.Type == "message_stop" {
			done = true
		}
	}
	if err := s.Err(); err != nil {
		return Response{}, err
	}
	if !done {
		return Response{}, ErrStreamCut
	}
	return fromAnthropic(&acc), nil
}

// fromAnthropic converts a reply. Anthropic's input_tokens leaves out the
// cached parts; PromptTokens is their sum, as for every provider.
func fromAnthropic(m *anthropic.Message) Response {
	msg := Message{Role: RoleAssistant}
	var text strings.Builder
	for _, b := range m.Content {
		switch b.Type {
		case "thinking":
			msg.Reasoning = append(msg.Reasoning, ReasoningBlock{Kind: "thinking", Text: b.Thinking, Signature: b.Signature})
		case "redacted_thinking":
			msg.Reasoning = append(msg.Reasoning, ReasoningBlock{Kind: "redacted_thinking", Data: b.Data})
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			args := string(b.Input)
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		}
	}
	msg.Content = text.String()
	u := m.Usage
	return Response{
		Message: msg,
		Usage: Usage{
			PromptTokens:       int(u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens),
			CompletionTokens:   int(u.OutputTokens),
			CachedPromptTokens: int(u.CacheReadInputTokens),
			CacheWriteTokens:   int(u.CacheCreationInputTokens),
		},
		FinishReason: finishOf(string(m.StopReason)),
		Model:        string(m.Model),
		ID:           m.ID,
	}
}

// finishOf maps Anthropic's stop reasons to the finish reasons the rest of
// Trio knows (OpenAI's names).
func finishOf(stop string) string {
	switch stop {
	case "end_turn", "stop_sequence", "pause_turn":
		return "stop"
	case "tool_use":
		return "tool_calls"
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	}
	return stop
}

func (p *Anthropic) params(req Request, model string, useSchema bool) (anthropic.MessageNewParams, error) {
	msgs := req.Messages
	if req.Output != nil && !useSchema {
		msgs = withSchemaPrompt(msgs, req.Output)
	}
	system, conv, marks, err := toAnthropic(msgs)
	if err != nil {
		return anthropic.MessageNewParams{}, err
	}
	n := req.MaxTokens
	if n <= 0 {
		n = p.cfg.MaxTokens
	}
	params := anthropic.MessageNewParams{Model: anthropic.Model(model), MaxTokens: int64(n), System: system, Messages: conv}
	if b := p.ThinkingBudgetFor(req.Agent); b > 0 {
		// max_tokens holds the thinking and the reply: the reply keeps its
		// cap.
		params.Thinking = anthropic.ThinkingConfigParamOfEnabled(int64(b))
		params.MaxTokens += int64(b)
	}
	for i, t := range req.Tools {
		fp, err := toolParameters(t)
		if err != nil {
			return params, fmt.Errorf("tools[%d]: %w", i, err)
		}
		schema := anthropic.ToolInputSchemaParam{ExtraFields: map[string]any{}}
		for k, v := range fp {
			switch k {
			case "type":
			case "properties":
				schema.Properties = v
			case "required":
				schema.Required = toStrings(v)
			default:
				schema.ExtraFields[k] = v
			}
		}
		tp := anthropic.ToolParam{Name: t.Name, InputSchema: schema}
		if t.Description != "" {
			tp.Description = anthropic.String(t.Description)
		}
		params.Tools = append(params.Tools, anthropic.ToolUnionParam{OfTool: &tp})
	}
	if req.Output != nil && useSchema {
		var schema map[string]any
		if err := json.Unmarshal(req.Output.Schema, &schema); err != nil {
			return params, fmt.Errorf("output schema %s: %w", req.Output.Name, err)
		}
		params.OutputConfig = anthropic.OutputConfigParam{Format: anthropic.JSONOutputFormatParam{Schema: schema}}
	}
	if !p.cfg.NoCache {
		p.markCache(&params, marks, req.CachePrefix, len(msgs))
	}
	return params, nil
}

// markCache puts cache_control breakpoints on the stable prefix: the last
// system block (the API caches tools, then system, then messages, so this
// one covers the tool definitions too) and the last block of the message
// that ends Request.CachePrefix, or of the last message when no prefix is
// given. Two of the API's four breakpoints; each later request finds the
// previous one's entry by the API's lookback over the blocks before its
// own breakpoint.
func (p *Anthropic) markCache(params *anthropic.MessageNewParams, marks []blockRef, prefix, n int) {
	eph := anthropic.NewCacheControlEphemeralParam()
	if k := len(params.System); k > 0 {
		params.System[k-1].CacheControl = eph
	}
	end := n - 1
	if prefix > 0 {
		end = min(prefix, n) - 1
	}
	for i := end; i >= 0; i-- {
		r := marks[i]
		if r.msg < 0 {
			return // the prefix ends in the system prompt, marked already
		}
		mp := params.Messages[r.msg]
		var content []anthropic.ContentBlockParamUnion
		switch {
		case mp.OfUser != nil:
			content = mp.OfUser.Content
		case mp.OfAssistant != nil:
			content = mp.OfAssistant.Content
		}
		if cc := content[r.block].GetCacheControl(); cc != nil {
			*cc = eph
			return
		}
	}
}

// blockRef locates the last content block of a neutral message in the
// converted request; msg is -1 for a system message.
type blockRef struct{ msg, block int }

// toAnthropic converts neutral messages: system messages become the
// system prompt; consecutive user and tool messages are merged into one
// user turn (the API alternates roles), tool results first as it
// requires.
func toAnthropic(msgs []Message) ([]anthropic.TextBlockParam, []anthropic.MessageParam, []blockRef, error) {
	var system []anthropic.TextBlockParam
	var out []anthropic.MessageParam
	marks := make([]blockRef, len(msgs))
	userTurn := func() *anthropic.UserMessageParam {
		if k := len(out); k > 0 && out[k-1].OfUser != nil {
			return out[k-1].OfUser
		}
		out = append(out, anthropic.MessageParam{OfUser: &anthropic.UserMessageParam{}})
		return out[len(out)-1].OfUser
	}
	for i, m := range msgs {
		switch m.Role {
		case RoleSystem:
			system = append(system, anthropic.TextBlockParam{Text: m.Content})
			marks[i] = blockRef{msg: -1}
		case RoleUser:
			u := userTurn()
			text := m.Content
			if strings.TrimSpace(text) == "" {
				text = "(empty)" // the API refuses empty text blocks
			}
			u.Content = append(u.Content, anthropic.NewTextBlock(text))
			marks[i] = blockRef{msg: len(out) - 1, block: len(u.Content) - 1}
		case RoleTool:
			if m.ToolCallID == "" {
				return nil, nil, nil, fmt.Errorf("messages[%d]: tool message without tool_call_id", i)
			}
			u := userTurn()
			// Tool results go before any text of the same turn.
			at := 0
			for at < len(u.Content) && u.Content[at].OfToolResult != nil {
				at++
			}
			blk := anthropic.NewToolResultBlock(m.ToolCallID, m.Content, false)
			u.Content = append(u.Content[:at], append([]anthropic.ContentBlockParamUnion{blk}, u.Content[at:]...)...)
			marks[i] = blockRef{msg: len(out) - 1, block: at}
			for j := range i { // blocks after the insertion point moved
				if marks[j].msg == len(out)-1 && msgs[j].Role == RoleUser && marks[j].block >= at {
					marks[j].block++
				}
			}
		case RoleAssistant:
			var blocks []anthropic.ContentBlockParamUnion
			// The turn's thinking first, unchanged, as the API returned it.
			for _, r := range m.Reasoning {
				switch r.Kind {
				case "thinking":
					blocks = append(blocks, anthropic.NewThinkingBlock(r.Signature, r.Text))
				case "redacted_thinking":
					blocks = append(blocks, anthropic.NewRedactedThinkingBlock(r.Data))
				}
			}
			if m.Content != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Content))
			}
			for _, tc := range m.ToolCalls {
				args := json.RawMessage(tc.Arguments)
				if !json.Valid(args) {
					args = json.RawMessage(`{}`)
				}
				blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, args, tc.Name))
			}
			if m.Content == "" && len(m.ToolCalls) == 0 {
				blocks = append(blocks, anthropic.NewTextBlock("(no reply)"))
			}
			out = append(out, anthropic.MessageParam{OfAssistant: &anthropic.AssistantMessageParam{Content: blocks}})
			marks[i] = blockRef{msg: len(out) - 1, block: len(blocks) - 1}
		default:
			return nil, nil, nil, fmt.Errorf("messages[%d]: unknown role %q", i, m.Role)
		}
	}
	return system, out, marks, nil
}

func toStrings(v any) []string {
	switch x := v.(type) {
	case []string:
		return x
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
