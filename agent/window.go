package agent

import (
	"context"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3"

	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/summarizer"
)

// DefaultContextLimit is the Worker's context window when WithWindow does
// not set one.
const DefaultContextLimit = 128_000

// window is the Worker's history as the model sees it: the summarizer's
// token-budgeted Window (masking old tool outputs first, structured
// summaries when that is not enough or every N turns).
type window struct {
	w *summarizer.Window
}

// newWindow builds the window from the checkpoint: pinned system prompt and
// goal + plan, then the whole history. (A summary made before an
// interruption is not restored; the window summarizes again if it must.)
func (r *run) newWindow() (*window, error) {
	cfg := summarizer.Config{ContextLimit: DefaultContextLimit}
	if r.cfg.window != nil {
		cfg = *r.cfg.window
		if cfg.ContextLimit == 0 {
			cfg.ContextLimit = DefaultContextLimit
		}
	}
	if cfg.Summarizer == nil {
		cfg.Summarizer = r.model
	}
	user := cfg.OnEvent
	cfg.OnEvent = func(e summarizer.Event) {
		r.windowEvent(e)
		if user != nil {
			user(e)
		}
	}
	sw, err := summarizer.NewWindow(cfg)
	if err != nil {
		return nil, fmt.Errorf("agent: window: %w", err)
	}
	w := &window{w: sw}
	if r.st.Suite != nil {
		pins, err := r.pinned()
		if err != nil {
			return nil, err
		}
		sw.Pin(pins...)
	}
	sw.Append(r.st.History...)
	if r.st.FailingOutput != "" {
		sw.SetFailing(r.st.FailingOutput)
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
	goal, err := render(goalTmpl, map[string]any{"Goal": strings.TrimSpace(r.st.Goal), "Plan": pb.String(), "TestsDir": plan.TestsFolder(), "TestCommand": plan.TestCommand})
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
	r.win.w.SetPinned(pins...)
	for i := range pins {
		r.trace(TraceEntry{Kind: "message", Role: RoleWorker, Message: &pins[i], Detail: "pinned"})
	}
	return nil
}

func (r *run) windowEvent(e summarizer.Event) {
	kind := "masked"
	ev := EventMasked
	if strings.HasPrefix(string(e.Kind), "summary") {
		kind, ev = "summary", EventSummary
	}
	r.mu.Lock()
	switch e.Kind {
	case summarizer.EventSummary:
		r.st.Counters.Summaries++
	case summarizer.EventMask, summarizer.EventMaskHard, summarizer.EventMaskLast, summarizer.EventDrop:
		r.st.Counters.Masked++
	}
	r.mu.Unlock()
	r.trace(TraceEntry{Kind: kind, Role: RoleSummarizer, Detail: string(e.Kind) + ": " + e.Reason, TokensBefore: e.TokensBefore, TokensAfter: e.TokensAfter, Error: e.Error})
	r.emit(Event{Kind: ev, Role: RoleSummarizer, Message: fmt.Sprintf("%s: %s (%d → %d tokens of %d)", e.Kind, e.Reason, e.TokensBefore, e.TokensAfter, e.Budget)})
}

func (w *window) append(msgs ...llm.Message) {
	if w != nil {
		w.w.Append(msgs...)
	}
}

func (w *window) messages(ctx context.Context, defs []openai.ChatCompletionToolUnionParam) ([]llm.Message, error) {
	return w.w.Messages(ctx, defs)
}

func (w *window) observe(u llm.Usage, sent int) { w.w.Observe(u, sent) }

func (w *window) setFailing(text string) {
	if w != nil {
		w.w.SetFailing(text)
	}
}

// wrapUpNote is the note the Worker gets at 80% of the token budget.
func wrapUpNote() string { return summarizer.WrapUpNote() }
