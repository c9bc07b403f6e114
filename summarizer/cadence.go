package summarizer

import (
	"fmt"
	"math"

	"github.com/trioagent/trio/llm"
)

// The cost-driven cadence (Config.SummaryEvery 0 or CostDriven, the
// default) decides when to summarize from prices instead of a fixed count
// of turns.
//
// Between two summaries every Worker request carries the rounds that a
// summary would fold, read from the provider's cache at the cached input
// price; a summary stops that but costs a summary call and the re-write of
// the prefix it changes. Every round is folded exactly once whatever the
// cadence, so the transcript part of a summary call is the same money
// either way and does not move the decision; what a summary costs on top is
// its fixed part:
//
//	fixed = (summarizer prompt + schema + previous summary + tracked errors) × summary input price
//	      + expected summary reply × summary output price
//	      + (new summary + kept rounds) × (cache write − cached input), the prefix re-sent
//
// With history growing by g tokens a turn and a cycle of T turns, carrying
// costs about cached × g × T²/2 per cycle and summaries fixed per cycle, so
// the cost per turn, cached × g × T/2 + fixed/T, is lowest when the two
// parts are equal (the economic order quantity). The window therefore adds
// up, on every request, the carried foldable tokens × the cached price,
// and summarizes once that sum exceeds fixed. It needs no guess of how
// many turns are left: the turns since the last summary stand in for the
// horizon. The budget still forces a summary (or masking) whatever the
// cadence.

// DefaultPrice is the price ratio the cost-driven cadence assumes when no
// price is configured, in units of one uncached input token: cached input
// at 10 % (DeepSeek's and Anthropic's discount; OpenAI's is 25–50 %), a
// cache write at the input price (OpenAI and DeepSeek charge nothing more;
// Anthropic 1.25×) and output at 4× (the gpt-4o and gpt-4.1 families;
// Claude models charge 5×).
var DefaultPrice = llm.Price{Input: 1, CachedInput: 0.1, CacheWrite: 1, Output: 4}

// summaryHead is the size of the summary request's head text beyond the
// previous summary and the tracked errors (the token limit line, section
// titles).
const summaryHead = 64

// prices are the Worker's and the summarizer's prices the cadence uses.
func (w *Window) prices() (worker, sum llm.Price) {
	worker, sum = DefaultPrice, DefaultPrice
	if w.cfg.Price != nil {
		worker, sum = *w.cfg.Price, *w.cfg.Price
	}
	if w.cfg.SummaryPrice != nil {
		sum = *w.cfg.SummaryPrice
	}
	return worker, sum
}

// costCadence reports whether the summary cadence is the cost-driven one.
func (w *Window) costCadence() bool { return w.cfg.SummaryEvery < 0 }

// foldTokens is the size, as sent, of the rounds a summary would fold
// that the view still carries (rounds dropped from the view cost nothing
// to carry) and of the rounds it would keep, and the mean size of those
// rounds as appended (before any masking): the history's growth per turn.
func (w *Window) foldTokens() (fold, kept int, growth float64) {
	keep := w.keepFrom()
	from, appended := max(w.foldStart, w.viewStart), 0
	for r := from; r < len(w.starts); r++ {
		n := 0
		for i := w.starts[r]; i < w.roundEnd(r); i++ {
			n += w.log[i].cost()
			appended += w.log[i].tokens
		}
		if r < keep {
			fold += n
		} else {
			kept += n
		}
	}
	return fold, kept, float64(appended) / float64(max(len(w.starts)-from, 1))
}

// summaryFixedCost is the cost of a summary beyond the transcript it
// folds, times a million (prices are per million tokens; see the comment
// at the top of this file).
func (w *Window) summaryFixedCost(kept int) float64 {
	worker, sp := w.prices()
	w.reference() // brings refTok and errsTok up to date
	w.errorsMessage()
	if w.sysTok == 0 {
		w.sysTok = w.counter.Count(summarizerPrompt)
	}
	reply := w.refTok
	if w.summary == nil {
		reply = w.cfg.SummaryMaxTokens / 4 // no summary yet to go by
	}
	in := tokensReplyPrimed + w.sysTok + w.schemaPromptTokens() + w.refTok + w.errsTok + summaryHead
	rewrite := float64(reply+kept) * max(worker.CacheWrite-worker.CachedInput, 0)
	return float64(in)*sp.Input + float64(reply)*sp.Output + rewrite
}

// chargeCarry adds this request's cost of carrying the foldable rounds and
// reports, under the cost-driven cadence, why a summary is due ("" if it
// is not). A cadence with prices that make carrying free never summarizes
// by cost; the budget still does.
//
// When the budget binds soon after each summary (a small context), the
// window would mask old outputs there anyway, which costs no model call,
// only the re-write of the masked prefix. The cadence then compares the
// two cycles per turn, with g the mean round's tokens and c the cached
// price: summarizing every T* = √(2·fixed/(c·g)) turns costs √(2·fixed·c·g)
// a turn; carrying until the budget, Tb turns after a summary, and masking
// there costs c·g·Tb/2 + kept·(write − cached)/Tb. When the second is
// cheaper the budget decides.
func (w *Window) chargeCarry(f *fitting) string {
	if !w.costCadence() || !w.foldable() {
		return ""
	}
	worker, sp := w.prices()
	fold, kept, g := w.foldTokens()
	c := worker.CachedInput
	w.carry += float64(fold) * c
	fixed := w.summaryFixedCost(kept)
	if w.carry <= 0 || w.carry < fixed || g <= 0 {
		return ""
	}
	rawBudget := float64(w.budget) / (w.counter.Ratio() * (1 + w.margin))
	tb := (rawBudget - float64(f.raw()-fold)) / g
	if tb > 0 {
		summarize := math.Sqrt(2 * fixed * c * g)
		mask := c*g*tb/2 + float64(kept)*max(worker.CacheWrite-c, 0)/tb
		if mask < summarize {
			return ""
		}
	}
	return fmt.Sprintf("carrying %d unsummarized tokens has cost %.4g since the last summary, more than a summary's fixed cost %.4g "+
		"(cached input at %g, summary input at %g and output at %g per million tokens)",
		fold, w.carry/1e6, fixed/1e6, c, sp.Input, sp.Output)
}

func validPrice(p llm.Price) bool {
	for _, v := range []float64{p.Input, p.CachedInput, p.CacheWrite, p.Output} {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return false
		}
	}
	return true
}
