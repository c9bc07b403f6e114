package llm

import (
	"context"
	"encoding/json"

	"github.com/trioagent/trio/internal/tooldef"
)

// Role is the author of a message in a chat history.
type Role string

// The chat roles of OpenAI-compatible endpoints.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one entry of a chat history. It is provider-neutral so that run
// state, traces and token counts can be kept without the SDK's types.
type Message struct {
	Role       Role       `json:"role"`
	Content    string     `json:"content,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	// Name is the tool's name on a RoleTool message (informational).
	Name string `json:"name,omitempty"`
	// Reasoning holds an assistant message's reasoning as the provider
	// returned it (Anthropic's thinking blocks with their signatures), to
	// be sent back unchanged: the API requires the thinking of the turn
	// whose tool calls are being answered. Never shown to other roles.
	Reasoning []ReasoningBlock `json:"reasoning,omitempty"`
}

// ReasoningBlock is one opaque block of a model's reasoning. Kind is
// "thinking" (Text readable, Signature verifies it) or "redacted_thinking"
// (Data encrypted).
type ReasoningBlock struct {
	Kind      string `json:"kind"`
	Text      string `json:"text,omitempty"`
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`
}

// ToolCall is a model's request to call one tool. Arguments is the raw JSON
// text the model wrote; it may be malformed.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolDef is a tool offered to a model: its Name, its Description, and
// the JSON schema of its arguments as raw JSON (Parameters, an object
// schema; empty: no arguments; callers sharing one must not change its
// bytes). It is provider-neutral; each provider converts it to its API's
// form when it sends the request. (It is declared in a leaf package so
// that package tools yields it without linking the model SDKs.)
type ToolDef = tooldef.ToolDef

// OutputSchema asks for a structured reply that validates against Schema.
type OutputSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema"`
}

// Request is one call to a model.
type Request struct {
	// Agent is the agent role making the call ("planner", "worker",
	// "critic", "summarizer", "test_designer"); providers may pick a model
	// per role and the scripted model replays the role's script.
	Agent    string
	Messages []Message
	// Tools are the definitions offered to the model
	// (tools.View.Definitions yields them).
	Tools []ToolDef
	// Output, when set, asks for a JSON reply valid against the schema.
	Output *OutputSchema
	// MaxTokens caps the reply; zero means the provider's default.
	MaxTokens int
	// CachePrefix, when positive, is how many leading messages the next
	// request will repeat unchanged (summarizer.Window.StablePrefix): a
	// provider with explicit cache breakpoints (Anthropic) puts one at its
	// end, so the volatile tail after it is never written to the cache.
	// Zero puts it at the end of the request.
	CachePrefix int
}

// Usage is the token accounting an endpoint reported for one call.
// PromptTokens is every input token of the request, cached or not, so that
// budgets and the window's calibration see one figure whatever the
// provider; the cached parts are broken out of it.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	// CachedPromptTokens are the prompt tokens served from the provider's
	// prompt cache (OpenAI prompt_tokens_details.cached_tokens, Anthropic
	// cache_read_input_tokens), billed at the cached-input price.
	CachedPromptTokens int `json:"cached_prompt_tokens,omitempty"`
	// CacheWriteTokens are the prompt tokens written to the cache by this
	// request (Anthropic cache_creation_input_tokens), billed at the
	// cache-write price.
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
}

// Add returns the sum of two usages.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		PromptTokens: u.PromptTokens + v.PromptTokens, CompletionTokens: u.CompletionTokens + v.CompletionTokens,
		CachedPromptTokens: u.CachedPromptTokens + v.CachedPromptTokens, CacheWriteTokens: u.CacheWriteTokens + v.CacheWriteTokens,
	}
}

// Response is a model's reply.
type Response struct {
	Message      Message `json:"message"`
	Usage        Usage   `json:"usage"`
	FinishReason string  `json:"finish_reason,omitempty"`
	Model        string  `json:"model,omitempty"`
	// ID is the endpoint's id of the reply (chatcmpl-..., msg_...), for
	// telemetry's gen_ai.response.id; "" when it gave none.
	ID string `json:"id,omitempty"`
}

// Model is anything that completes a chat: the OpenAI-compatible provider,
// the scripted model, or an embedder's own.
type Model interface {
	Complete(ctx context.Context, req Request) (Response, error)
}
