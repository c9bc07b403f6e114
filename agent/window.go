package agent

import (
	"fmt"
	"strings"

	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/summarizer"
)

// DefaultContextLimit is the Worker's context window when WithWindow does
// not set one.
const DefaultContextLimit = 128_000

// MinContextLimit is the smallest context window WithWindow accepts: the
// prompts of the Planner and the Critic alone take about a thousand tokens.
const MinContextLimit = 1024

// windowConfig is the Worker window's configuration (WithWindow, or the
// defaults). The run's prices (WithPrices) of the Worker and the
// summarizer are the window's, for its cost-driven summary cadence, unless
// WithWindow sets its own.
func (r *run) windowConfig() summarizer.Config {
	cfg := summarizer.Config{ContextLimit: DefaultContextLimit}
	if r.cfg.window != nil {
		cfg = *r.cfg.window
		if cfg.ContextLimit == 0 {
			cfg.ContextLimit = DefaultContextLimit
		}
	}
	if p, ok := r.cfg.prices[RoleWorker]; ok && cfg.Price == nil {
		cfg.Price = &p
	}
	if p, ok := r.cfg.prices[RoleSummarizer]; ok && cfg.SummaryPrice == nil {
		cfg.SummaryPrice = &p
	}
	return cfg
}

// newCounter is the run's token counter: the one WithWindow shares, or one
// for its model. The meter estimates unreported usage with it and the
// Worker's window uses it, so calibration serves both.
func (r *run) newCounter() (*summarizer.Counter, error) {
	cfg := r.windowConfig()
	if cfg.Counter != nil {
		return cfg.Counter, nil
	}
	c, err := summarizer.NewCounter(cfg.Model)
	if err != nil {
		return nil, fmt.Errorf("agent: token counter for model %q: %w", cfg.Model, err)
	}
	return c, nil
}

// newWindow builds the Worker's window (structured summaries when the
// cadence says so, masking old tool outputs when a request does not fit,
// a summary when that is not enough) from the
// checkpoint: the pinned system prompt and goal + plan, the whole history,
// then the window's saved state, so that a summary made before an
// interruption is kept and not asked for again.
func (r *run) newWindow() (*summarizer.Window, error) {
	cfg := r.windowConfig()
	cfg.Counter = r.counter
	// Every summary call goes through the meter, so its tokens count for
	// the "summarizer" role and the run's budget (estimated when the
	// endpoint reports none), whichever model writes the summaries.
	if cfg.Summarizer == nil {
		cfg.Summarizer = r.model
	} else {
		cfg.Summarizer = meteredModel{inner: cfg.Summarizer, r: r}
	}
	user := cfg.OnEvent
	cfg.OnEvent = func(e summarizer.Event) {
		r.windowEvent(e)
		if user != nil {
			user(e)
		}
	}
	w, err := summarizer.NewWindow(cfg)
	if err != nil {
		return nil, fmt.Errorf("agent: worker window: %w", err)
	}
	if r.st.Suite != nil {
		pins, err := r.pinned()
		if err != nil {
			return nil, err
		}
		w.Pin(pins...)
	}
	w.Append(r.st.History...)
	r.st.History = nil // the window holds it now
	if r.st.Window != nil {
		if err := w.Restore(*r.st.Window); err != nil {
			return nil, fmt.Errorf("agent: resume %s: window: %w", StateFile, err)
		}
	}
	return w, nil
}

// pinned are the messages always sent first: the Worker's system prompt
// and the goal with the plan.
func (r *run) pinned() ([]llm.Message, error) {
	plan := r.st.Plan
	sys := workerPrompt
	if p, ok := r.cfg.prompts[RoleWorker]; ok {
		sys = p
	}
	var pb strings.Builder
	for i, s := range plan.Steps {
		fmt.Fprintf(&pb, "%d. %s: %s (files: %s)\n", i+1, s.Title, oneLine(s.Description, 400), strings.Join(s.Files, ", "))
	}
	goal, err := render(goalTmpl, map[string]any{"Goal": strings.TrimSpace(r.st.Goal), "Plan": pb.String(), "TestsDir": plan.TestsFolder(), "TestCommand": plan.TestCommand, "Instructions": r.st.Instructions.Text()})
	if err != nil {
		return nil, err
	}
	return []llm.Message{{Role: llm.RoleSystem, Content: strings.TrimSpace(sys)}, {Role: llm.RoleUser, Content: goal}}, nil
}

// pinWorker pins the system prompt and the goal with the plan, once the
// acceptance tests exist.
func (r *run) pinWorker() error {
	pins, err := r.pinned()
	if err != nil {
		return err
	}
	r.win.SetPinned(pins...)
	for i := range pins {
		r.trace(TraceEntry{Kind: "message", Role: RoleWorker, Message: &pins[i], Detail: "pinned"})
	}
	return nil
}

// windowEvent traces a masking or summary step and counts it. The tokens
// of summary calls are counted by the meter the summarizer model goes
// through; the event's Usage is the same figure and is traced here.
func (r *run) windowEvent(e summarizer.Event) {
	kind := "masked"
	ev := EventMasked
	if strings.HasPrefix(string(e.Kind), "summary") {
		kind, ev = "summary", EventSummary
	}
	r.mu.Lock()
	if kind == "summary" {
		r.keepSummarizerCursor()
	}
	switch e.Kind {
	case summarizer.EventSummary:
		r.st.Counters.Summaries++
	case summarizer.EventMask, summarizer.EventMaskHard, summarizer.EventMaskLast, summarizer.EventDrop:
		r.st.Counters.Masked++
	}
	r.mu.Unlock()
	te := TraceEntry{Kind: kind, Role: RoleSummarizer, Detail: string(e.Kind) + ": " + e.Reason, TokensBefore: e.TokensBefore, TokensAfter: e.TokensAfter, Error: e.Error}
	if e.Usage != (llm.Usage{}) {
		u := e.Usage
		te.Usage = &u
	}
	r.trace(te)
	r.emit(Event{Kind: ev, Role: RoleSummarizer, Message: fmt.Sprintf("%s: %s (%d → %d tokens of %d)", e.Kind, e.Reason, e.TokensBefore, e.TokensAfter, e.Budget)})
}

// keepSummarizerCursor records the run model's position for the summarizer
// role as each summary call completes. A checkpoint written after an
// interrupted call keeps the older cursor of the other roles, but it saves
// the window's state, which includes this summary: the summarizer's
// position must go with it, or a resumed scripted run would replay the
// summary reply.
func (r *run) keepSummarizerCursor() {
	if w := r.cfg.window; w != nil && w.Summarizer != nil {
		return // another model writes the summaries; its position is not saved
	}
	cm, ok := r.rawModel.(cursorModel)
	if !ok || r.st.Cursor == nil {
		return
	}
	if pos, ok := cm.Cursor()[RoleSummarizer]; ok {
		r.st.Cursor[RoleSummarizer] = pos
	}
}
