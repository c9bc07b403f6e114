package summarizer

import (
	"fmt"
	"slices"

	"github.com/trioagent/trio/llm"
)

// State is what a Window knows beyond its messages, for a run's checkpoint.
// Message positions are indices into the appended history (Window.Len), so
// the history itself is not duplicated: on resume, Pin and Append the same
// messages in the same order, then Restore.
type State struct {
	Summary    *Summary `json:"summary,omitempty"`
	Failing    string   `json:"failing,omitempty"`
	Unresolved []string `json:"unresolved,omitempty"`
	Resolved   []string `json:"resolved,omitempty"`
	// FoldedThrough: history messages before it are covered by Summary.
	FoldedThrough int `json:"folded_through"`
	// ViewFrom: the first history message the view may show.
	ViewFrom int `json:"view_from"`
	// MaskedThrough: history messages before it are sent masked.
	MaskedThrough        int  `json:"masked_through"`
	TurnsSinceSummary    int  `json:"turns_since_summary"`
	AppendedSinceSummary int  `json:"appended_since_summary"`
	Summaries            int  `json:"summaries"`
	Stalls               int  `json:"stalls,omitempty"`
	Hidden               bool `json:"hidden,omitempty"`
	// CarryCost is the cost-driven cadence's sum since the last summary.
	CarryCost float64 `json:"carry_cost,omitempty"`
}

// State returns the window's state for a checkpoint.
func (w *Window) State() State {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := State{
		Failing:              w.failing,
		Unresolved:           slices.Clone(w.errs.open),
		Resolved:             slices.Clone(w.errs.resolved),
		FoldedThrough:        w.roundStart(w.foldStart),
		ViewFrom:             w.roundStart(w.viewStart),
		MaskedThrough:        w.roundStart(w.maskNext),
		TurnsSinceSummary:    w.turnsSince,
		AppendedSinceSummary: w.appendedSince,
		Summaries:            w.summaries,
		Stalls:               w.stalls,
		Hidden:               w.hidden,
		CarryCost:            w.carry,
	}
	if w.summary != nil {
		cp := *w.summary
		cp.UnresolvedErrors = slices.Clone(cp.UnresolvedErrors)
		s.Summary = &cp
	}
	return s
}

// roundStart is the history index where round r begins (Len past the end).
func (w *Window) roundStart(r int) int {
	if r < len(w.starts) {
		return w.starts[r]
	}
	return len(w.log)
}

// roundAt is the round that begins at history index i.
func (w *Window) roundAt(i int, field string) (int, error) {
	if i == len(w.log) {
		return len(w.starts), nil
	}
	r, ok := slices.BinarySearch(w.starts, i)
	if !ok {
		return 0, fmt.Errorf("summarizer: restore: %s %d is not the start of a round of the appended history (%d messages)", field, i, len(w.log))
	}
	return r, nil
}

// Restore applies a checkpointed State to a window that holds the same
// pinned messages and history the state was taken with.
func (w *Window) Restore(s State) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	fold, err := w.roundAt(s.FoldedThrough, "folded_through")
	if err != nil {
		return err
	}
	view, err := w.roundAt(s.ViewFrom, "view_from")
	if err != nil {
		return err
	}
	mask, err := w.roundAt(s.MaskedThrough, "masked_through")
	if err != nil {
		return err
	}
	w.foldStart, w.viewStart = fold, view
	w.maskNext = 0
	for w.maskNext = min(view, mask); w.maskNext < mask; w.maskNext++ {
		w.maskRound(w.maskNext)
	}
	w.summary = nil
	if s.Summary != nil {
		cp := *s.Summary
		w.summary = &cp
	}
	w.errs.open, w.errs.resolved = slices.Clone(s.Unresolved), slices.Clone(s.Resolved)
	w.failing, w.failingTok = "", 0
	if s.Failing != "" {
		w.failing = s.Failing
		w.failingMsg = llm.Message{Role: llm.RoleUser, Content: failingHeader + "\n" + s.Failing}
		w.failingTok = w.counter.CountMessage(w.failingMsg)
	}
	w.turnsSince, w.appendedSince = s.TurnsSinceSummary, s.AppendedSinceSummary
	w.summaries, w.stalls, w.hidden = s.Summaries, s.Stalls, s.Hidden
	w.carry = s.CarryCost
	w.refDirty, w.errsDirty = true, true
	return nil
}
