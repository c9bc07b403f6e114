package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
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
	Estimated int `json:"estimated,omitempty"`
	// Retries counts failed attempts the provider retried (each one is a
	// model_retry line in the trace, with its status and wait).
	Retries  int           `json:"retries,omitempty"`
	Duration time.Duration `json:"duration_ns"`
	// CachedPromptTokens and CacheWriteTokens are the parts of
	// PromptTokens the endpoint served from, or wrote to, its prompt cache.
	CachedPromptTokens int `json:"cached_prompt_tokens,omitempty"`
	CacheWriteTokens   int `json:"cache_write_tokens,omitempty"`
	// Cost is the money the role's calls cost at its price (WithPrices);
	// Priced says a price was known, so a zero Cost is a real zero.
	Cost   float64 `json:"cost,omitempty"`
	Priced bool    `json:"priced,omitempty"`
	// Model is the model the role's replies came from, as the endpoint
	// named it (several, comma-separated, when the role's model changed).
	Model string `json:"model,omitempty"`
}

// CostText is the role's cost for people: four decimals, or "—" without
// a price.
func (u RoleUsage) CostText() string {
	if !u.Priced {
		return "—"
	}
	return fmt.Sprintf("%.4f", u.Cost)
}

// Cost is what a run's model calls cost, as the run_finished event carries
// it. Total is in the price table's currency and covers the priced roles
// only; Priced is false when no role had a price (Total is then
// meaningless, not zero).
type Cost struct {
	Total              float64            `json:"total"`
	Priced             bool               `json:"priced"`
	Roles              map[string]float64 `json:"roles,omitempty"`
	UnpricedRoles      []string           `json:"unpriced_roles,omitempty"`
	CachedPromptTokens int                `json:"cached_prompt_tokens"`
	CacheWriteTokens   int                `json:"cache_write_tokens"`
}

// costOf is m's cost for the run_finished event (after sumCost).
func (m *Metrics) costOf() *Cost {
	c := &Cost{Total: m.Cost, Priced: m.Priced(), UnpricedRoles: m.UnpricedRoles,
		CachedPromptTokens: m.CachedPromptTokens, CacheWriteTokens: m.CacheWriteTokens}
	for role, u := range m.Roles {
		if u.Priced {
			if c.Roles == nil {
				c.Roles = map[string]float64{}
			}
			c.Roles[role] = u.Cost
		}
	}
	return c
}

// WithPrices sets the price of each role's model (keys: planner, worker,
// critic, summarizer, test_designer, reviewer), so that reports give money per
// role. A role without a price reports tokens only. Default: none.
func WithPrices(prices map[string]llm.Price) Option {
	return func(c *config) error {
		c.prices = maps.Clone(prices)
		return nil
	}
}

// addCost adds a call's cache figures and price to its role's usage.
func (r *run) addCost(role string, u llm.Usage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ru := r.st.Usage[role]
	ru.CachedPromptTokens += u.CachedPromptTokens
	ru.CacheWriteTokens += u.CacheWriteTokens
	if p, ok := r.cfg.prices[role]; ok {
		ru.Cost += p.Cost(u)
		ru.Priced = true
	}
	r.st.Usage[role] = ru
}

// meteredModel counts every model call of every role (the Planner's, the
// Critic's and the summarizer's included), traces it and emits an event.
type meteredModel struct {
	inner llm.Model
	r     *run
}

func (m meteredModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	if s := m.r.admit(req); s != nil {
		m.r.trace(TraceEntry{Kind: "model_refused", Role: req.Agent, Messages: len(req.Messages), Reason: s.reason, Detail: s.detail})
		m.r.lastModelErr = s
		return llm.Response{}, s
	}
	start := time.Now()
	m.r.trace(TraceEntry{Kind: "model_request", Role: req.Agent, Messages: len(req.Messages), ToolsOffered: len(req.Tools), Structured: req.Output != nil, Last: lastMessage(req.Messages)})
	resp, err := m.inner.Complete(llm.WithRetryObserver(ctx, func(rt llm.Retry) { m.r.retried(req.Agent, rt) }), req)
	d := time.Since(start)
	usage, estimated := resp.Usage, false
	if err == nil && usage == (llm.Usage{}) {
		usage, estimated = m.r.estimateUsage(req, resp.Message), true
	}
	tot := m.r.addUsage(req.Agent, usage, estimated, d, err)
	m.r.addCost(req.Agent, usage)
	if err == nil {
		m.r.noteModel(req.Agent, resp.Model)
	}
	if err != nil && ctx.Err() == nil {
		m.r.lastModelErr = err
		if errors.Is(err, llm.ErrScriptExhausted) {
			// Not a failure of a model: the script is shorter than the
			// run. Whichever role's code turns the error into a stop,
			// the run says so (classify prefers r.refused).
			m.r.refused = &stop{reason: StopOutOfReplies, detail: fmt.Sprintf("the script has no reply left for role %s: %v", req.Agent, err)}
		}
	}
	msg := resp.Message
	te := TraceEntry{Kind: "model_reply", Role: req.Agent, Reply: &msg, Usage: &usage, UsageEstimated: estimated, FinishReason: resp.FinishReason, Duration: d}
	if err != nil {
		te.Error = err.Error()
		te.Reply = nil
	}
	m.r.trace(te)
	ev := Event{Kind: EventModelCall, Role: req.Agent, Duration: d, Step: m.r.stepOf(req.Agent), Repair: m.r.repairOf(req.Agent),
		Tokens: Tokens{Prompt: usage.PromptTokens, Completion: usage.CompletionTokens, TotalPrompt: tot.PromptTokens, TotalCompletion: tot.CompletionTokens,
			Cached: usage.CachedPromptTokens, CacheWrite: usage.CacheWriteTokens},
		Model: resp.Model, ResponseID: resp.ID, FinishReason: resp.FinishReason, MaxTokens: req.MaxTokens, Content: &Content{Reply: &msg}}
	if err != nil {
		ev.Message = err.Error()
		ev.ErrorType = errorType(ctx, err)
		ev.Content = nil
	}
	m.r.emit(ev)
	return resp, err
}

// admit holds every model call, of every role, to the run's token budget
// and the context window before it is sent: a request that would not fit
// is refused (a *stop naming the role and the numbers) rather than paid
// for. The estimate is the tokenizer's count scaled by what the endpoint
// reported so far; it leaves out the reply, which only the Worker's window
// reserves room for.
func (r *run) admit(req llm.Request) *stop {
	prompt := r.counter.Calibrated(r.promptTokens(req), 0)
	role := req.Agent
	if limit := r.windowConfig().ContextLimit; prompt > limit {
		r.refused = &stop{reason: StopContextBudget, detail: fmt.Sprintf("the %s request of about %d tokens does not fit the context window of %d tokens (window.context_limit); it was not sent", role, prompt, limit)}
		return r.refused
	}
	used, limit := r.totalTokens(), r.cfg.budgets.MaxTokens
	if used+prompt > limit {
		r.refused = &stop{reason: StopBudgetTokens, detail: fmt.Sprintf("the %s request of about %d tokens would pass the token budget (%d of %d spent); it was not sent", role, prompt, used, limit)}
		return r.refused
	}
	r.refused = nil
	return nil
}

// refusal is the refused model call that ended the loop with err, if any.
// Roles report a failed model call in their own words (a model error);
// the refusal says which budget it was.
func (r *run) refusal(err error) *stop {
	if err == nil || r.refused == nil {
		return nil
	}
	return r.refused
}

// promptTokens is the tokenizer's count of a request: messages, tool
// definitions and output schema.
func (r *run) promptTokens(req llm.Request) int {
	n := r.counter.CountMessages(req.Messages) + r.counter.CountTools(req.Tools)
	if req.Output != nil {
		n += r.counter.Count(string(req.Output.Schema))
	}
	return n
}

// retried records a failed attempt the provider retries: a trace event,
// the role's count and a progress event.
func (r *run) retried(role string, rt llm.Retry) {
	r.mu.Lock()
	ru := r.st.Usage[role]
	ru.Retries++
	r.st.Usage[role] = ru
	r.mu.Unlock()
	te := TraceEntry{Kind: "model_retry", Role: role, Attempt: rt.Attempt, Status: rt.Status, Wait: rt.Wait}
	if rt.Err != nil {
		te.Error = rt.Err.Error()
	}
	r.trace(te)
	why := "no reply"
	if rt.Status != 0 {
		why = fmt.Sprintf("HTTP %d", rt.Status)
	}
	r.emit(Event{Kind: EventModelRetry, Role: role, Step: r.stepOf(role), Repair: r.repairOf(role), Duration: rt.Wait,
		Message: fmt.Sprintf("attempt %d failed (%s); retrying in %s", rt.Attempt, why, rt.Wait.Round(time.Millisecond))})
}

// estimateUsage counts a call's tokens when the endpoint reported none.
// The response is returned to the caller unchanged, so the window is never
// calibrated against its own estimate.
func (r *run) estimateUsage(req llm.Request, reply llm.Message) llm.Usage {
	return llm.Usage{PromptTokens: r.promptTokens(req), CompletionTokens: r.counter.CountMessage(reply)}
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

// errorType is a failed model call's low-cardinality class, for
// telemetry's error.type.
func errorType(ctx context.Context, err error) string {
	var s *stop
	switch {
	case errors.As(err, &s):
		return string(s.reason)
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled), ctx.Err() != nil:
		return "canceled"
	}
	return fmt.Sprintf("%T", err)
}

// noteModel records the model a role's reply came from.
func (r *run) noteModel(role, model string) {
	if model == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	u := r.st.Usage[role]
	if !slices.Contains(strings.Split(u.Model, ", "), model) {
		if u.Model != "" {
			u.Model += ", "
		}
		u.Model += model
	}
	r.st.Usage[role] = u
}
