package summarizer_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/summarizer"
)

// runResult is what a scripted long run measured.
type runResult struct {
	prompts []int // prompt tokens the "endpoint" reported per Worker call
	full    []int // prompt tokens the same call would cost with the whole history
	reused  []int // prompt tokens of each call that repeat the previous call's prefix
	// unstable lists the calls that did not start with the previous call's
	// stable prefix although the window reported no event for them.
	unstable     []int
	firstSummary int // Worker call index after the first summary, -1 if none
	summaryIn    int // prompt tokens of all summary calls
	summaryOut   int // completion tokens of all summary calls
	summaries    int
	masks        int
	maxTurnTok   int
	pinnedTok    int
	toolsTok     int
	failingTok   int
}

// longRun drives a Window through a scripted Worker run: turns rounds of
// a call and a large output, a failing test run every ten turns that is
// fixed four turns later. ratio scales the window's own estimate into the
// endpoint's "reported" count, as a different tokenizer would.
func longRun(tb testing.TB, cfg summarizer.Config, turns int, ratio float64) runResult {
	tb.Helper()
	ctx := context.Background()
	c, err := summarizer.NewCounter(cfg.Model) // own counter: the run calibrates it
	if err != nil {
		tb.Fatal(err)
	}
	fake := &fakeSummarizer{t: tb, counter: c, limit: cfg.ContextLimit}
	if _, test := tb.(*testing.T); test && cfg.ContextLimit >= 100000 {
		// The summary request cannot come near this limit: the test skips
		// the costly recount (the benchmark keeps it for its totals).
		fake.limit = 0
	}
	res := runResult{firstSummary: -1}
	cfg.Counter, cfg.Summarizer = c, fake
	var calls, eventsAt int
	cfg.OnEvent = func(e summarizer.Event) {
		eventsAt = calls + 1 // events come during the Messages call that counts as the next call
		switch e.Kind {
		case summarizer.EventSummary:
			res.summaries++
			res.summaryIn += e.Usage.PromptTokens
			res.summaryOut += e.Usage.CompletionTokens
			if res.firstSummary < 0 {
				res.firstSummary = calls
			}
		case summarizer.EventSummaryRejected, summarizer.EventSummaryFailed:
			tb.Errorf("unexpected %s: %s", e.Kind, e.Error)
		case summarizer.EventMask, summarizer.EventMaskHard, summarizer.EventDrop, summarizer.EventMaskLast:
			res.masks++
		}
		if e.TokensAfter > e.Budget && e.Kind != summarizer.EventSummaryRejected && e.Kind != summarizer.EventSummaryFailed {
			tb.Logf("event %s leaves %d > %d (more fitting follows)", e.Kind, e.TokensAfter, e.Budget)
		}
	}
	w, err := summarizer.NewWindow(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tools := testTools()
	w.Pin(sys, goal, plan)
	res.pinnedTok = c.CountMessage(sys) + c.CountMessage(goal) + c.CountMessage(plan)
	res.toolsTok = c.CountTools(tools)

	outputs := make([]string, 12)
	for i := range outputs {
		outputs[i] = codeText(i, 3000+i*100)
	}
	full := 3 + res.pinnedTok + res.toolsTok
	appendAll := func(ms ...llm.Message) {
		w.Append(ms...)
		for _, m := range ms {
			full += c.CountMessage(m)
			res.maxTurnTok = max(res.maxTurnTok, c.CountMessage(m))
		}
	}
	appendAll(llm.Message{Role: llm.RoleUser, Content: "Step 1 of the plan: scaffold the module."})
	var prev []llm.Message
	prevStable := 0
	for t := range turns {
		msgs, err := w.Messages(ctx, tools)
		if err != nil {
			tb.Fatalf("turn %d: Messages: %v", t, err)
		}
		calls++
		checkStructure(tb, msgs)
		est := c.CountMessages(msgs) + c.CountTools(tools)
		reported := int(float64(est) * ratio)
		res.reused = append(res.reused, int(float64(sharedPrefix(c, prev, msgs, res.toolsTok))*ratio))
		if prev != nil && eventsAt != calls && !reflect.DeepEqual(prev[:prevStable], msgs[:min(prevStable, len(msgs))]) {
			res.unstable = append(res.unstable, calls)
		}
		prev, prevStable = msgs, w.StablePrefix()
		for _, m := range msgs[prevStable:] {
			if m.Role != llm.RoleUser {
				tb.Fatalf("turn %d: the tail after the stable prefix holds a %s message", t, m.Role)
			}
		}
		if reported+cfg.ReplyReserve > cfg.ContextLimit {
			tb.Errorf("turn %d: request of %d reported tokens + reserve %d exceeds the limit %d", t, reported, cfg.ReplyReserve, cfg.ContextLimit)
		}
		w.Observe(llm.Usage{PromptTokens: reported}, len(msgs))
		res.prompts = append(res.prompts, reported)
		res.full = append(res.full, int(float64(full)*ratio))

		switch {
		case t%10 == 5:
			out := failingOutput(t)
			id := fmt.Sprintf("tests_%d", t)
			appendAll(llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: id, Name: "run_tests", Arguments: `{}`}}},
				llm.Message{Role: llm.RoleTool, ToolCallID: id, Name: "run_tests", Content: out})
			w.SetFailing(out)
			res.failingTok = max(res.failingTok, c.Count(out)+32)
		case t%10 == 9:
			w.SetFailing("")
			appendAll(turn(t, outputs)...)
		default:
			appendAll(turn(t, outputs)...)
		}
	}
	fake.check()
	return res
}

func TestLongRunNeverOverBudgetAndStaysFlat(t *testing.T) {
	t.Parallel()
	tight := summarizer.Config{Model: "gpt-4o", ContextLimit: 8000, ReplyReserve: 1500}
	roomy := summarizer.Config{Model: "gpt-4o", ContextLimit: 128000, ReplyReserve: 4096}
	fixed := func(c summarizer.Config) summarizer.Config { c.SummaryEvery = summarizer.DefaultSummaryEvery; return c }
	cases := []struct {
		name  string
		cfg   summarizer.Config
		ratio float64
	}{
		// Tight: masking and summaries both work; a different tokenizer
		// (8 % more than the estimate) must be learned from usage.
		{"tight", fixed(tight), 1.08},
		// Roomy: the budget never binds, so flatness comes from the
		// summary cadence alone.
		{"roomy", fixed(roomy), 1.0},
		// The same under the default, cost-driven cadence.
		{"tight-cost", tight, 1.08},
		{"roomy-cost", roomy, 1.0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const turns = 200
			r := longRun(t, tc.cfg, turns, tc.ratio)
			every := tc.cfg.SummaryEvery
			if r.firstSummary < 0 {
				t.Fatalf("no summary in %d turns", turns)
			}
			budget := tc.cfg.ContextLimit - tc.cfg.ReplyReserve
			bound := budget
			if every > 0 {
				if r.firstSummary > 3*every {
					t.Fatalf("first summary after call %d, want by %d", r.firstSummary, 3*every)
				}
				if r.summaries < turns/every-2 {
					t.Errorf("%d summaries in %d turns, want about one every %d turns", r.summaries, turns, every)
				}
				// The bound does not depend on the turn count: pinned
				// messages, a summary, tracked errors, a failing output, the
				// tool definitions and the rounds since the last summary.
				rounds := every + summarizer.DefaultKeepRounds + 1
				bound = int(float64(r.pinnedTok+2048+1500+r.failingTok+r.toolsTok+rounds*(r.maxTurnTok+200)) * tc.ratio)
				bound = min(bound, budget)
			}
			after := r.prompts[r.firstSummary:]
			half := len(after) / 2
			early, late := maxOf(after[:half]), maxOf(after[half:])
			if m := maxOf(after); m > bound {
				t.Errorf("max prompt after the first summary is %d, bound %d", m, bound)
			}
			if late > early+early/10 {
				t.Errorf("prompt grows with the turn number: max %d in the second half after the first summary, %d in the first", late, early)
			}
			// Cache stability: a view changes its prefix only when the
			// window says why (a summary or a masking batch); failing
			// outputs and resolved errors only change the tail.
			if len(r.unstable) > 0 {
				t.Errorf("calls %v changed the previous call's stable prefix without a summary or masking event", r.unstable)
			}
			if r.masks > r.summaries+len(r.prompts)/4 {
				t.Errorf("%d masking events for %d summaries in %d calls: masking is not batched", r.masks, r.summaries, len(r.prompts))
			}
			if r.full[turns-1] < 4*maxOf(r.prompts) {
				t.Errorf("the scripted history is too small to test anything: full %d, max sent %d", r.full[turns-1], maxOf(r.prompts))
			}
			t.Logf("%s: %d calls, first summary at call %d, %d summaries, %d masking events, max prompt %d (early %d, late %d, bound %d), full history at the end %d",
				tc.name, turns, r.firstSummary, r.summaries, r.masks, maxOf(r.prompts), early, late, bound, r.full[turns-1])
		})
	}
}

// sharedPrefix is the number of tokens of cur that a provider's prefix
// cache could serve from prev: the tool definitions (sent before the
// messages, unchanged here) and the longest run of leading messages equal
// in both. The first request shares nothing.
func sharedPrefix(c *summarizer.Counter, prev, cur []llm.Message, toolsTok int) int {
	if prev == nil {
		return 0
	}
	n := toolsTok
	for i := 0; i < len(prev) && i < len(cur); i++ {
		if !reflect.DeepEqual(prev[i], cur[i]) {
			break
		}
		n += c.CountMessage(cur[i])
	}
	return n
}

// modelledCost prices a run's prompts in units of one uncached input token:
// tokens that repeat the previous request's prefix cost cachedRatio, the
// rest (and every summary call, whose prompt changes each time) full price.
func modelledCost(prompts, reused []int, extra int, cachedRatio float64) float64 {
	total := float64(extra)
	for i, p := range prompts {
		total += float64(p-reused[i]) + cachedRatio*float64(reused[i])
	}
	return total
}

// fullReuse is what a request carrying the whole history shares with the
// previous one: all of it, since each such request extends the last.
func fullReuse(full []int) []int {
	out := make([]int, len(full))
	for i := 1; i < len(full); i++ {
		out[i] = full[i-1]
	}
	return out
}

func maxOf(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// curve renders prompt tokens per call, every step-th call, for logs.
func curve(xs []int, step int) string {
	var b strings.Builder
	for i := 0; i < len(xs); i += step {
		fmt.Fprintf(&b, "%d:%d ", i, xs[i])
	}
	return b.String()
}
