package agent

import (
	"time"

	"github.com/trioagent/trio/summarizer"
)

// setupClock times a session's start, from Run or Resume being called to
// the first model call, as consecutive steps: each mark ends the step that
// began at the previous one, so the steps add up to the whole start. Each
// step is told as it ends (an EventSetup with its duration) and recorded
// in the trace ("setup" entries) and in the run's start time.
type setupClock struct {
	began, last time.Time
	runID       string
	observers   []func(Event)
	// pending are the steps marked before the run folder's trace was open,
	// written to it when it is.
	pending []TraceEntry
	// early is the time of the steps marked before the run existed.
	early time.Duration
	r     *run // once execute has the run: its trace and state
}

func (a *Agent) newSetupClock(runID string) *setupClock {
	now := time.Now()
	// The tokenizer's tables take about a second to load: that happens
	// beside the session's other start steps, and the run's counter
	// (newCounter) waits for it only when it is still loading.
	if w := a.cfg.window; w == nil || w.Counter == nil {
		model := ""
		if w != nil {
			model = w.Model
		}
		go summarizer.NewCounter(model)
	}
	return &setupClock{began: now, last: now, runID: runID, observers: a.cfg.observers}
}

// mark ends the current step: what it did.
func (c *setupClock) mark(what string) {
	if c == nil {
		return
	}
	now := time.Now()
	d := now.Sub(c.last)
	c.last = now
	ev := Event{Time: now, Kind: EventSetup, RunID: c.runID, Message: what, Duration: d}
	for _, o := range c.observers {
		o(ev)
	}
	if c.r != nil {
		c.r.st.StartTime += d
	} else {
		c.early += d
	}
	e := TraceEntry{Time: now.UTC(), Kind: "setup", Detail: what, Duration: d}
	if c.r == nil || c.r.traceOut == nil {
		c.pending = append(c.pending, e)
		return
	}
	c.r.trace(e)
}

// attach hands the clock to the run: the time already spent counts as
// start time, and the steps already told go to the trace once it is open
// (flush).
func (c *setupClock) attach(r *run) {
	c.r = r
	c.observers = r.cfg.observers
	c.runID = r.st.RunID
	r.st.StartTime += c.early
}

// flush writes the steps marked before the trace was open.
func (c *setupClock) flush() {
	if c == nil || c.r == nil {
		return
	}
	for _, e := range c.pending {
		c.r.trace(e)
	}
	c.pending = nil
}

// kind names the chosen sandbox for the setup lines.
func (c sandboxChoice) kind() string {
	if c.given != nil {
		return c.given.Info().Kind
	}
	return c.sc.Kind
}
