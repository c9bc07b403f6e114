package agent

import (
	"fmt"
	"time"

	"github.com/trioagent/trio/llm"
)

// EventKind names what happened.
type EventKind string

// The events a run emits, in roughly the order they occur.
const (
	EventRunStarted    EventKind = "run_started"
	EventRunResumed    EventKind = "run_resumed"
	EventPlanReady     EventKind = "plan_ready"
	EventTestsDesigned EventKind = "tests_designed"
	EventStepStarted   EventKind = "step_started"
	EventStepFinished  EventKind = "step_finished"
	EventModelCall     EventKind = "model_call"
	// EventModelRetry is a failed model attempt the provider retries;
	// Duration is the wait before the next attempt.
	EventModelRetry    EventKind = "model_retry"
	EventToolCall      EventKind = "tool_call"
	EventCriticVerdict EventKind = "critic_verdict"
	EventRepairStarted EventKind = "repair_started"
	EventTestRepair    EventKind = "test_repair_started"
	EventSummary       EventKind = "summary"
	EventMasked        EventKind = "masked"
	EventWarning       EventKind = "warning"
	// EventSandbox is a slow step of the sandbox's, as it starts and ends
	// (building the trusted warm build cache the first time).
	EventSandbox EventKind = "sandbox"
	// EventSetup is a step of a session's start, before its first model
	// call, as it ends: Message says what it did (the start snapshot, the
	// sandbox opened, the MCP servers started...) and Duration how long it
	// took. A session's setup events add up to its start time
	// (Metrics.StartTime).
	EventSetup       EventKind = "setup"
	EventRunFinished EventKind = "run_finished"
)

// Tokens is token accounting: the call's own and the run's totals so far.
type Tokens struct {
	Prompt          int `json:"prompt,omitempty"`
	Completion      int `json:"completion,omitempty"`
	TotalPrompt     int `json:"total_prompt,omitempty"`
	TotalCompletion int `json:"total_completion,omitempty"`
	// Cached and CacheWrite are the call's prompt tokens read from and
	// written to the provider's prompt cache, when it reports them.
	Cached     int `json:"cached,omitempty"`
	CacheWrite int `json:"cache_write,omitempty"`
}

// Event is one thing a run did, for progress displays and JSON event
// streams. Fields that do not apply to a kind are zero and omitted in JSON.
type Event struct {
	Time  time.Time `json:"time"`
	Kind  EventKind `json:"kind"`
	RunID string    `json:"run_id,omitempty"`
	// Role is the model role involved: planner, test_designer, worker,
	// critic, summarizer.
	Role string `json:"role,omitempty"`
	// Step is the 1-based plan step the Worker is on; Steps is the plan's length.
	Step  int `json:"step,omitempty"`
	Steps int `json:"steps,omitempty"`
	// Repair is the repair round (1-based) when the Worker is repairing.
	Repair int    `json:"repair,omitempty"`
	Tool   string `json:"tool,omitempty"`
	// Target is what a tool call acted on, for people: its command line or
	// its path(s), from the effects the gate cleared ("" when the arguments
	// did not decode).
	Target   string        `json:"target,omitempty"`
	Decision string        `json:"decision,omitempty"`
	OK       *bool         `json:"ok,omitempty"`
	Duration time.Duration `json:"duration_ns,omitempty"`
	Tokens   Tokens        `json:"tokens,omitzero"`
	Verdict  string        `json:"verdict,omitempty"`
	Reason   StopReason    `json:"reason,omitempty"`
	Message  string        `json:"message,omitempty"`
	// Cost is the run's token cache figures and money, on run_finished.
	Cost *Cost `json:"cost,omitempty"`

	// RunDir is the run folder, on run_started and run_resumed.
	RunDir string `json:"run_dir,omitempty"`
	// Model is the model that answered a model_call, as the endpoint named it.
	Model string `json:"model,omitempty"`
	// ResponseID, FinishReason and MaxTokens describe a model_call: the
	// endpoint's id of the reply, why the reply ended (stop, tool_calls,
	// length...) and the request's reply cap (0: the provider's default).
	ResponseID   string `json:"response_id,omitempty"`
	FinishReason string `json:"finish_reason,omitempty"`
	MaxTokens    int    `json:"max_tokens,omitempty"`
	// ErrorType classifies a failed model_call: the stop reason of a
	// refused request, "timeout", "canceled", or the error's Go type.
	ErrorType string `json:"error_type,omitempty"`
	// CallID, Rule and Outcome describe a tool_call: the model's call id
	// (the gate's for the Critic's own checks), the policy rule that
	// decided it, and the gate's outcome (ok, error, denied, invalid;
	// replayed for a result taken from the write-ahead log).
	CallID  string `json:"call_id,omitempty"`
	Rule    string `json:"rule,omitempty"`
	Outcome string `json:"outcome,omitempty"`
	// Content is what was said, for observers that record message
	// contents on opt-in (telemetry); never in the JSON event stream.
	Content *Content `json:"-"`
}

// Content is the text behind an event: a model_call's reply, a
// tool_call's arguments and the result the model received.
type Content struct {
	Reply  *llm.Message
	Args   string
	Result string
}

// plural is n and the noun that agrees with it ("1 step", "2 steps").
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
