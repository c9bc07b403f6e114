package summarizer_test

import (
	"context"
	"testing"

	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/summarizer"
)

// TestCostCadenceFollowsPrices drives the scripted long run under the
// cost-driven cadence with two price tables: when cached input is nearly
// free, carrying the history costs little and the window summarizes far
// less often than when a cached token costs as much as an uncached one. An
// explicit SummaryEvery wins over the prices. No request of either exceeds
// the budget.
func TestCostCadenceFollowsPrices(t *testing.T) {
	t.Parallel()
	const turns = 100
	cheap := llm.Price{Input: 3, CachedInput: 0.003, CacheWrite: 3.75, Output: 15}
	dear := llm.Price{Input: 3, CachedInput: 3, CacheWrite: 3, Output: 15}
	base := summarizer.Config{Model: "gpt-4o", ContextLimit: 32000, ReplyReserve: 2000}
	run := func(p llm.Price, every int) runResult {
		cfg := base
		cfg.Price, cfg.SummaryEvery = &p, every
		r := longRun(t, cfg, turns, 1)
		if m, budget := maxOf(r.prompts), base.ContextLimit-base.ReplyReserve; m > budget {
			t.Errorf("price %+v: a request of %d tokens, over the budget %d", p, m, budget)
		}
		if len(r.unstable) > 0 {
			t.Errorf("price %+v: calls %v changed the stable prefix without an event", p, r.unstable)
		}
		return r
	}
	// Sequential: longRun may call t.Fatal, which must run on the test's
	// goroutine.
	cheapRun, dearRun, fixedRun := run(cheap, 0), run(dear, 0), run(cheap, 4)
	cheapN, dearN, fixedN := cheapRun.summaries, dearRun.summaries, fixedRun.summaries
	if cheapRun.masks == 0 {
		t.Errorf("the run with a cheap cache never reached the budget (no masking): it shows nothing about the budget")
	}
	t.Logf("summaries in %d turns: cached nearly free %d, cached at full price %d, every 4 turns %d", turns, cheapN, dearN, fixedN)
	if dearN < 2*cheapN || dearN < turns/5 {
		t.Errorf("%d summaries with cached input at full price, %d with it nearly free: want the dear cache to summarize far more often",
			dearN, cheapN)
	}
	if fixedN < turns/4-2 {
		t.Errorf("SummaryEvery 4 with a cheap cache made %d summaries in %d turns: the explicit cadence must win over the prices", fixedN, turns)
	}
}

// The cost-driven cadence's running sum is part of the window's State: a
// window restored from a checkpoint taken before the first summary
// summarizes on the same turn as the window that went on, and one restored
// without the sum does not.
func TestStateKeepsCarryCost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := summarizer.Config{ContextLimit: 128000, ReplyReserve: 4096}
	outputs := []string{codeText(1, 3000), codeText(2, 3200), codeText(3, 3400)}
	// step appends turn i and asks for the view; it reports whether the
	// window summarized.
	step := func(w *summarizer.Window, fake *fakeSummarizer, i int) bool {
		t.Helper()
		before := fake.numCalls()
		w.Append(turn(i, outputs)...)
		if _, err := w.Messages(ctx, testTools()); err != nil {
			t.Fatal(err)
		}
		return fake.numCalls() > before
	}
	w, fake, _ := newWindow(t, cfg)
	first := -1
	for i := 0; i < 60 && first < 0; i++ {
		if step(w, fake, i) {
			first = i
		}
	}
	if first < 4 {
		t.Fatalf("first summary at turn %d, want one after turn 4 to checkpoint before it", first)
	}
	// Replay to two turns before the summary, checkpoint and restore.
	src, srcFake, _ := newWindow(t, cfg)
	for i := range first - 1 {
		if step(src, srcFake, i) {
			t.Fatalf("the replay summarized at turn %d, before %d", i, first)
		}
	}
	st := src.State()
	if st.CarryCost <= 0 {
		t.Fatalf("checkpoint carry cost %v, want the sum so far", st.CarryCost)
	}
	for _, tc := range []struct {
		name  string
		carry float64
		want  bool
	}{{"restored", st.CarryCost, true}, {"without the sum", 0, false}} {
		r, rFake, _ := newWindow(t, cfg)
		r.Append(src.History()...)
		s := st
		s.CarryCost = tc.carry
		if err := r.Restore(s); err != nil {
			t.Fatal(err)
		}
		if step(r, rFake, first-1) {
			t.Fatalf("%s: summarized at turn %d, before %d", tc.name, first-1, first)
		}
		if got := step(r, rFake, first); got != tc.want {
			t.Errorf("%s: summarized at turn %d: %v, want %v", tc.name, first, got, tc.want)
		}
	}
}
