package llm

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"text/template"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// Structured-output modes of [OpenAIConfig].StructuredOutputs.
const (
	// StructuredAuto sends response_format json_schema and, when the
	// endpoint rejects it with 400, falls back to the prompt and remembers.
	StructuredAuto = "auto"
	// StructuredOn always sends response_format json_schema.
	StructuredOn = "on"
	// StructuredOff never sends response_format: the schema goes into the
	// system prompt and the caller validates the reply with DecodeOutput.
	StructuredOff = "off"
)

// Defaults of [OpenAIConfig].
const (
	DefaultBaseURL       = "https://api.openai.com/v1"
	DefaultAPIKeyEnv     = "OPENAI_API_KEY"
	DefaultTimeout       = 5 * time.Minute
	DefaultMaxRetries    = 4
	DefaultBackoffBase   = 500 * time.Millisecond
	DefaultBackoffMax    = 30 * time.Second
	DefaultMaxRetryAfter = 2 * time.Minute
	// MaxRetriesLimit bounds OpenAIConfig.MaxRetries: more retries of a
	// dead endpoint only delay the error.
	MaxRetriesLimit = 20
)

// Secret is a string that never shows itself when formatted, so a config
// printed with %v or %+v or marshalled to JSON does not leak the API key.
type Secret string

// String returns a placeholder, never the secret.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return "[redacted]"
}

// GoString returns a placeholder, never the secret.
func (s Secret) GoString() string { return s.String() }

// MarshalText returns a placeholder, never the secret.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// OpenAIConfig configures the OpenAI-compatible provider.
type OpenAIConfig struct {
	// BaseURL of the endpoint, up to and including /v1; default
	// $OPENAI_BASE_URL when set (as the SDK reads it), else the OpenAI API.
	BaseURL string
	// APIKeyEnv names the environment variable holding the API key;
	// default OPENAI_API_KEY. The key is read once, by NewOpenAI.
	APIKeyEnv string
	// APIKey, when set, is used instead of the environment variable (for
	// embedders who hold the key elsewhere). It never prints.
	APIKey Secret
	// Model is the model name used for any agent role not in Models.
	Model string
	// Models maps an agent role (Request.Agent) to its model name.
	Models map[string]string
	// Temperature, when set, is sent with every request but those to
	// OpenAI's reasoning models (IsReasoningModel), which refuse it.
	Temperature *float64
	// MaxTokens caps every reply unless Request.MaxTokens does; zero
	// leaves it to the endpoint.
	MaxTokens int
	// Timeout, MaxRetries, BackoffBase, BackoffMax and MaxRetryAfter are
	// the retries NewOpenAI wraps the provider in, as [RetryConfig]'s
	// fields of the same names (NewOpenAIProvider checks and ignores
	// them). Timeout bounds one attempt (request and the whole reply);
	// zero means DefaultTimeout, negative means none.
	Timeout time.Duration
	// MaxRetries is how many times a failed attempt is retried (429, 5xx,
	// timeouts, connection errors, cut streams); zero means
	// DefaultMaxRetries, negative means none, more than MaxRetriesLimit
	// is an error.
	MaxRetries int
	// BackoffBase and BackoffMax shape the exponential backoff with full
	// jitter used when the endpoint gives no Retry-After; zero means the
	// defaults.
	BackoffBase, BackoffMax time.Duration
	// MaxRetryAfter is the longest Retry-After waited for; a longer one
	// fails the call at once. Zero means DefaultMaxRetryAfter.
	MaxRetryAfter time.Duration
	// StructuredOutputs is "auto" (default), "on" or "off".
	StructuredOutputs string
	// MaxCompletionTokens sends the cap as max_completion_tokens for
	// every model not in TokenParameters. Without it, each model takes
	// the parameter its name calls for (DefaultTokenParameter):
	// max_completion_tokens for OpenAI's reasoning models, max_tokens,
	// which most other OpenAI-compatible servers understand, for the rest.
	MaxCompletionTokens bool
	// TokenParameters maps a model name to the parameter that carries its
	// reply cap (TokenParamMaxTokens or TokenParamMaxCompletionTokens),
	// overriding the default by name.
	TokenParameters map[string]string
	// ReasoningEffort, when set, is sent as reasoning_effort by every
	// agent role not in ReasoningEffortPerRole (one of ReasoningEfforts).
	ReasoningEffort string
	// ReasoningEffortPerRole maps an agent role to its reasoning_effort
	// ("" sends none for that role).
	ReasoningEffortPerRole map[string]string
	// Stream asks for server-sent events and assembles the deltas.
	Stream bool
	// OnRetry, when set, is told about every failed attempt that will be
	// retried and how long NewOpenAI's retries wait first (for traces). A
	// call's context can carry its own observer too (WithRetryObserver).
	OnRetry func(attempt int, wait time.Duration, err error)
	// MaxReplyBytes caps one response body (a streamed reply's events
	// together); a longer one fails the attempt with ErrReplyTooLarge,
	// which is retried. Zero means DefaultMaxReplyBytes.
	MaxReplyBytes int64
	// HTTPClient replaces http.DefaultClient.
	HTTPClient *http.Client
}

// OpenAI is the [Model] for any OpenAI-compatible chat-completions
// endpoint. Its Complete makes one attempt; [NewOpenAI] wraps it in
// [Retrying]. It is safe for concurrent use.
type OpenAI struct {
	cfg      OpenAIConfig
	client   openai.Client
	key      string
	endpoint string // redacted, for errors
	// noSchema remembers that the endpoint rejected response_format.
	noSchema atomic.Bool
}

var _ Model = (*OpenAI)(nil)

// NewOpenAI checks cfg, reads the API key and returns the provider
// wrapped in the retries cfg describes (Timeout, MaxRetries, BackoffBase,
// BackoffMax, MaxRetryAfter, OnRetry). It makes no request. Unwrap returns
// the *OpenAI.
func NewOpenAI(cfg OpenAIConfig) (*Retrying, error) {
	p, err := NewOpenAIProvider(cfg)
	if err != nil {
		return nil, err
	}
	return WithRetry(p, retryConfig(p.cfg.Timeout, p.cfg.MaxRetries, p.cfg.BackoffBase, p.cfg.BackoffMax, p.cfg.MaxRetryAfter, p.cfg.OnRetry))
}

// NewOpenAIProvider checks cfg, reads the API key and returns the
// provider alone: each Complete makes one attempt, with no timeout but
// ctx's. For retries of one's own, wrap it with WithRetry.
func NewOpenAIProvider(cfg OpenAIConfig) (*OpenAI, error) {
	key, err := endpointSettings{
		provider: "openai", baseURL: &cfg.BaseURL, apiKeyEnv: &cfg.APIKeyEnv, structuredOutputs: &cfg.StructuredOutputs,
		apiKey: cfg.APIKey, model: cfg.Model, models: cfg.Models, maxTokens: &cfg.MaxTokens, maxRetries: &cfg.MaxRetries,
		timeout: &cfg.Timeout, backoffBase: &cfg.BackoffBase, backoffMax: &cfg.BackoffMax, maxRetryAfter: &cfg.MaxRetryAfter,
	}.check(DefaultBaseURL, DefaultAPIKeyEnv, "OPENAI_BASE_URL")
	if err != nil {
		return nil, err
	}
	for m, tp := range cfg.TokenParameters {
		if err := checkTokenParameter(tp); err != nil {
			return nil, fmt.Errorf("llm: openai: token parameter of model %s: %w", m, err)
		}
	}
	if e := cfg.ReasoningEffort; e != "" {
		if err := CheckReasoningEffort(e); err != nil {
			return nil, fmt.Errorf("llm: openai: reasoning effort: %w", err)
		}
	}
	for role, e := range cfg.ReasoningEffortPerRole {
		if e == "" {
			continue // that role sends none
		}
		if err := CheckReasoningEffort(e); err != nil {
			return nil, fmt.Errorf("llm: openai: reasoning effort of %s: %w", role, err)
		}
	}
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithAPIKey(key),
		// One retry mechanism, ours, so that it is the one tested.
		option.WithMaxRetries(0),
	}
	if err := maxReplyBytes("openai", &cfg.MaxReplyBytes); err != nil {
		return nil, err
	}
	opts = append(opts, option.WithMiddleware(capReplies(cfg.MaxReplyBytes)))
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	p := &OpenAI{
		cfg:      cfg,
		client:   openai.NewClient(opts...),
		key:      key,
		endpoint: strings.TrimRight(redactURL(cfg.BaseURL), "/") + "/chat/completions",
	}
	return p, nil
}

// ModelFor returns the model name used for an agent role.
func (p *OpenAI) ModelFor(agent string) string {
	if m, ok := p.cfg.Models[agent]; ok {
		return m
	}
	return p.cfg.Model
}

// TokenParameterFor returns the parameter that carries a model's reply
// cap: the configured one (TokenParameters, then MaxCompletionTokens),
// else the one its name calls for (DefaultTokenParameter).
func (p *OpenAI) TokenParameterFor(model string) string {
	if tp, ok := p.cfg.TokenParameters[model]; ok {
		return tp
	}
	if p.cfg.MaxCompletionTokens {
		return TokenParamMaxCompletionTokens
	}
	return DefaultTokenParameter(model)
}

// ReasoningEffortFor returns the reasoning_effort sent for an agent role
// ("" sends none).
func (p *OpenAI) ReasoningEffortFor(agent string) string {
	if e, ok := p.cfg.ReasoningEffortPerRole[agent]; ok {
		return e
	}
	return p.cfg.ReasoningEffort
}

// SchemaSupported reports whether the provider still sends response_format
// (false once an "auto" endpoint rejected it, or when "off").
func (p *OpenAI) SchemaSupported() bool {
	return p.cfg.StructuredOutputs != StructuredOff && !p.noSchema.Load()
}

// Complete sends one chat completion, in one attempt. With
// StructuredOutputs "auto", an endpoint that rejects response_format (400)
// is asked once more with the schema in the prompt.
func (p *OpenAI) Complete(ctx context.Context, req Request) (Response, error) {
	model := p.ModelFor(req.Agent)
	if model == "" {
		return Response{}, fmt.Errorf("llm: openai: no model for agent %q (set model or models.%s)", req.Agent, req.Agent)
	}
	useSchema := req.Output != nil && p.SchemaSupported()
	resp, err := p.complete(ctx, req, model, useSchema)
	if err == nil || !useSchema || p.cfg.StructuredOutputs != StructuredAuto || statusOf(err) != http.StatusBadRequest {
		return resp, err
	}
	// The endpoint may not support structured outputs: ask again with the
	// schema in the prompt, and remember only if that works.
	resp, err2 := p.complete(ctx, req, model, false)
	if err2 != nil {
		// The second failure first: whether the call is worth retrying
		// is decided by the first error in the chain.
		return Response{}, errors.Join(err2, err)
	}
	p.noSchema.Store(true)
	return resp, nil
}

func (p *OpenAI) complete(ctx context.Context, req Request, model string, useSchema bool) (Response, error) {
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
func (p *OpenAI) wrap(model, agent string, err error) error {
	detail := ""
	var apiErr *openai.Error
	if errors.As(err, &apiErr) && apiErr.Message != "" {
		detail = ": " + apiErr.Message
	}
	where := p.scrub(fmt.Sprintf("llm: POST %s (model %s, agent %s)", p.endpoint, model, agentName(agent)))
	pe := &providerError{where: where, msg: where + ": " + p.scrub(fmt.Sprintf("%s%s", err, detail)), err: err}
	if apiErr != nil && apiErr.Code == ScriptExhaustedCode {
		pe.also = ErrScriptExhausted
	}
	return pe
}

func (p *OpenAI) scrub(s string) string { return scrubKey(s, p.key) }

// MinRedactedKey is the shortest API key that error messages are scrubbed
// of. A shorter "key" (the demo's "demo", a local server's "x") is no real
// secret and, replaced wherever it occurs as a substring, would mangle the
// message: examples/[redacted]/script.yaml, une[redacted]pected EOF.
const MinRedactedKey = 8

// scrubKey replaces key in s with a placeholder, when key is long enough
// to be a secret (see MinRedactedKey).
func scrubKey(s, key string) string {
	if len(key) < MinRedactedKey {
		return s
	}
	return strings.ReplaceAll(s, key, "[redacted]")
}

func agentName(a string) string {
	if a == "" {
		return "-"
	}
	return a
}

// providerError carries a scrubbed message and the original cause.
type providerError struct {
	// where is the message's first part, naming the endpoint, model and
	// agent ("llm: POST ... (model m, agent a)"); Retrying puts its notes
	// after it.
	where string
	msg   string
	err   error
	// also is a sentinel the endpoint's error code stands for, if any.
	also error
}

func (e *providerError) Error() string { return e.msg }
func (e *providerError) Unwrap() []error {
	if e.also != nil {
		return []error{e.err, e.also}
	}
	return []error{e.err}
}

func (p *OpenAI) once(ctx context.Context, params openai.ChatCompletionNewParams) (Response, error) {
	cc, err := p.client.Chat.Completions.New(ctx, params)
	if err != nil {
		if strings.Contains(err.Error(), sdkBadJSON) {
			return Response{}, fmt.Errorf("endpoint sent malformed JSON: %w", err)
		}
		return Response{}, err
	}
	if len(cc.Choices) == 0 {
		return Response{}, errors.New("reply has no choices")
	}
	ch := cc.Choices[0]
	msg := Message{Role: RoleAssistant, Content: ch.Message.Content}
	finish := ch.FinishReason
	if msg.Content == "" && ch.Message.Refusal != "" {
		msg.Content = ch.Message.Refusal
		finish = "refusal"
	}
	for _, tc := range ch.Message.ToolCalls {
		switch tc.Type {
		case "custom":
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Custom.Name, Arguments: tc.Custom.Input})
		default:
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
	}
	return Response{
		Message:      msg,
		Usage:        usageOf(cc.Usage),
		FinishReason: finish,
		Model:        cc.Model,
		ID:           cc.ID,
	}, nil
}

//go:embed prompts/output_fallback.md
var outputFallbackText string

var outputFallback = template.Must(template.New("output_fallback").Parse(outputFallbackText))

// SchemaPrompt is the instruction the provider adds to the system prompt
// when it cannot use response_format. Other models may reuse it.
func SchemaPrompt(out *OutputSchema) string {
	var b bytes.Buffer
	_ = outputFallback.Execute(&b, struct{ Name, Description, Schema string }{out.Name, out.Description, string(out.Schema)})
	return strings.TrimSpace(b.String())
}

func (p *OpenAI) params(req Request, model string, useSchema bool) (openai.ChatCompletionNewParams, error) {
	msgs := req.Messages
	if req.Output != nil && !useSchema {
		msgs = withSchemaPrompt(msgs, req.Output)
	}
	conv, err := toParams(msgs)
	if err != nil {
		return openai.ChatCompletionNewParams{}, err
	}
	tools, err := openAITools(req.Tools)
	if err != nil {
		return openai.ChatCompletionNewParams{}, err
	}
	params := openai.ChatCompletionNewParams{
		Model:    shared.ChatModel(model),
		Messages: conv,
		Tools:    tools,
	}
	// OpenAI's reasoning models refuse any temperature but the default.
	if p.cfg.Temperature != nil && !IsReasoningModel(model) {
		params.Temperature = openai.Float(*p.cfg.Temperature)
	}
	n := req.MaxTokens
	if n <= 0 {
		n = p.cfg.MaxTokens
	}
	if n > 0 {
		if p.TokenParameterFor(model) == TokenParamMaxCompletionTokens {
			params.MaxCompletionTokens = openai.Int(int64(n))
		} else {
			params.MaxTokens = openai.Int(int64(n))
		}
	}
	if e := p.ReasoningEffortFor(req.Agent); e != "" {
		params.ReasoningEffort = shared.ReasoningEffort(e)
	}
	if req.Output != nil && useSchema {
		js := shared.ResponseFormatJSONSchemaJSONSchemaParam{
			Name:   req.Output.Name,
			Schema: req.Output.Schema,
			Strict: openai.Bool(StrictCompatible(req.Output.Schema)),
		}
		if req.Output.Description != "" {
			js.Description = openai.String(req.Output.Description)
		}
		params.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{
			OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{JSONSchema: js},
		}
	}
	if p.cfg.Stream {
		params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	}
	return params, nil
}

// withSchemaPrompt appends the schema instruction to the first system
// message, or puts a system message first; msgs is not modified.
func withSchemaPrompt(msgs []Message, out *OutputSchema) []Message {
	inst := SchemaPrompt(out)
	res := make([]Message, 0, len(msgs)+1)
	for i, m := range msgs {
		if m.Role == RoleSystem {
			res = append(res, msgs[:i]...)
			m.Content = strings.TrimRight(m.Content, "\n") + "\n\n" + inst
			res = append(res, m)
			return append(res, msgs[i+1:]...)
		}
	}
	res = append(res, Message{Role: RoleSystem, Content: inst})
	return append(res, msgs...)
}

// toParams converts neutral messages to openai-go's message params.
func toParams(msgs []Message) ([]openai.ChatCompletionMessageParamUnion, error) {
	out := make([]openai.ChatCompletionMessageParamUnion, 0, len(msgs))
	for i, m := range msgs {
		switch m.Role {
		case RoleSystem:
			out = append(out, openai.SystemMessage(m.Content))
		case RoleUser:
			out = append(out, openai.UserMessage(m.Content))
		case RoleAssistant:
			a := openai.ChatCompletionAssistantMessageParam{}
			if m.Content != "" || len(m.ToolCalls) == 0 {
				a.Content.OfString = openai.String(m.Content)
			}
			for _, tc := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       tc.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: tc.Arguments},
					},
				})
			}
			out = append(out, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case RoleTool:
			if m.ToolCallID == "" {
				return nil, fmt.Errorf("messages[%d]: tool message without tool_call_id", i)
			}
			out = append(out, openai.ToolMessage(m.Content, m.ToolCallID))
		default:
			return nil, fmt.Errorf("messages[%d]: unknown role %q", i, m.Role)
		}
	}
	return out, nil
}

// openAITools converts neutral tool definitions to openai-go's function
// tools.
func openAITools(defs []ToolDef) ([]openai.ChatCompletionToolUnionParam, error) {
	if len(defs) == 0 {
		return nil, nil
	}
	out := make([]openai.ChatCompletionToolUnionParam, len(defs))
	for i, d := range defs {
		params, err := toolParameters(d)
		if err != nil {
			return nil, fmt.Errorf("tools[%d]: %w", i, err)
		}
		fd := shared.FunctionDefinitionParam{Name: d.Name, Parameters: params}
		if d.Description != "" {
			fd.Description = openai.String(d.Description)
		}
		out[i] = openai.ChatCompletionFunctionTool(fd)
	}
	return out, nil
}

// toolParameters decodes a definition's schema; nil when it has none.
func toolParameters(d ToolDef) (map[string]any, error) {
	if len(d.Parameters) == 0 {
		return nil, nil
	}
	var params map[string]any
	if err := json.Unmarshal(d.Parameters, &params); err != nil {
		return nil, fmt.Errorf("parameters of %s: %w", d.Name, err)
	}
	return params, nil
}

// redactURL drops user info, query and fragment from a URL for messages.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User = nil
	u.RawQuery = ""
	u.Fragment = ""
	return u.String()
}

// usageOf converts an OpenAI usage record. prompt_tokens already includes
// the cached tokens, which is what Usage.PromptTokens means.
func usageOf(u openai.CompletionUsage) Usage {
	return Usage{
		PromptTokens: int(u.PromptTokens), CompletionTokens: int(u.CompletionTokens),
		CachedPromptTokens: int(u.PromptTokensDetails.CachedTokens),
	}
}
