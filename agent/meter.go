package agent

import (
	"context"
	"sync"
	"time"

	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/sandbox"
)

// RoleUsage is one role's model calls and tokens.
type RoleUsage struct {
	Calls            int `json:"calls"`
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	Errors           int `json:"errors,omitempty"`
	// Estimated counts the calls whose reply reported no token usage: their
	// tokens were counted here (prompt: messages, tool definitions and
	// output schema; completion: the reply), so budgets still hold.
	Estimated int           `json:"estimated,omitempty"`
	Duration  time.Duration `json:"duration_ns"`
}

// meteredModel counts every model call of every role (the Planner's, the
// Critic's and the summarizer's included), traces it and emits an event.
type meteredModel struct {
	inner llm.Model
	r     *run
}

func (m meteredModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	start := time.Now()
	m.r.trace(TraceEntry{Kind: "model_request", Role: req.Agent, Messages: len(req.Messages), ToolsOffered: len(req.Tools), Structured: req.Output != nil, Last: lastMessage(req.Messages)})
	resp, err := m.inner.Complete(ctx, req)
	d := time.Since(start)
	usage, estimated := resp.Usage, false
	if err == nil && usage == (llm.Usage{}) {
		usage, estimated = m.r.estimateUsage(req, resp.Message), true
	}
	tot := m.r.addUsage(req.Agent, usage, estimated, d, err)
	if err != nil && ctx.Err() == nil {
		m.r.lastModelErr = err
	}
	msg := resp.Message
	te := TraceEntry{Kind: "model_reply", Role: req.Agent, Reply: &msg, Usage: &usage, UsageEstimated: estimated, FinishReason: resp.FinishReason, Duration: d}
	if err != nil {
		te.Error = err.Error()
		te.Reply = nil
	}
	m.r.trace(te)
	ev := Event{Kind: EventModelCall, Role: req.Agent, Duration: d, Step: m.r.stepOf(req.Agent), Repair: m.r.repairOf(req.Agent),
		Tokens: Tokens{Prompt: usage.PromptTokens, Completion: usage.CompletionTokens, TotalPrompt: tot.PromptTokens, TotalCompletion: tot.CompletionTokens}}
	if err != nil {
		ev.Message = err.Error()
	}
	m.r.emit(ev)
	return resp, err
}

// estimateUsage counts a call's tokens when the endpoint reported none.
// The response is returned to the caller unchanged, so the window is never
// calibrated against its own estimate.
func (r *run) estimateUsage(req llm.Request, reply llm.Message) llm.Usage {
	prompt := r.counter.CountMessages(req.Messages) + r.counter.CountTools(req.Tools)
	if req.Output != nil {
		prompt += r.counter.Count(string(req.Output.Schema))
	}
	return llm.Usage{PromptTokens: prompt, CompletionTokens: r.counter.CountMessage(reply)}
}

// lastMessage is the newest message of a request, for the trace (the full
// history is traced message by message as it grows).
func lastMessage(ms []llm.Message) *llm.Message {
	if len(ms) == 0 {
		return nil
	}
	m := ms[len(ms)-1]
	return &m
}

// timedSandbox sums the time commands spend in the sandbox.
type timedSandbox struct {
	sandbox.Sandbox
	mu    sync.Mutex
	total time.Duration
}

func (s *timedSandbox) Exec(ctx context.Context, cmd sandbox.Command) (sandbox.Result, error) {
	start := time.Now()
	res, err := s.Sandbox.Exec(ctx, cmd)
	s.mu.Lock()
	s.total += time.Since(start)
	s.mu.Unlock()
	return res, err
}

func (s *timedSandbox) spent() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// Close does nothing: the sandbox belongs to whoever made it.
func (s *timedSandbox) Close() error { return nil }

// stepOf is the 1-based plan step the Worker is on, for events (0 for
// other roles and outside the build phase).
func (r *run) stepOf(role string) int {
	if role != RoleWorker || r.st.Phase != phaseBuild {
		return 0
	}
	return r.st.Step + 1
}

// repairOf is the repair round the Worker is in, for events.
func (r *run) repairOf(role string) int {
	if role != RoleWorker || r.st.Phase != phaseRepair {
		return 0
	}
	return r.st.RepairRound
}
