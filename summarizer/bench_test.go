package summarizer_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/summarizer"
)

// BenchmarkCountO200K measures counting throughput on code-like text.
func BenchmarkCountO200K(b *testing.B) {
	c, err := summarizer.NewCounter("gpt-4o")
	if err != nil {
		b.Fatal(err)
	}
	text := codeText(7, 64<<10)
	b.SetBytes(int64(len(text)))
	var tokens int
	for b.Loop() {
		tokens = c.Count(text)
	}
	b.ReportMetric(float64(len(text))/float64(tokens), "bytes/token")
}

// BenchmarkMessagesPerTurn measures one Worker turn of the window — Append
// of a call and its output, then Messages — with history already holding
// 10, 100 or 1000 messages. Outputs repeat, so the counter's cache is warm
// and the figure is the window's own cost (plus the amortized summary every
// eight turns), which must not grow with the history.
func BenchmarkMessagesPerTurn(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("history=%d", n), func(b *testing.B) {
			ctx := context.Background()
			c := counter(b)
			fake := &fakeSummarizer{t: b, counter: c}
			w, err := summarizer.NewWindow(summarizer.Config{Counter: c, ContextLimit: 32000, ReplyReserve: 2000, Summarizer: fake,
				SummaryEvery: summarizer.DefaultSummaryEvery})
			if err != nil {
				b.Fatal(err)
			}
			w.Pin(sys, goal, plan)
			outputs := make([]string, 8)
			for i := range outputs {
				outputs[i] = codeText(i, 3000)
			}
			tools := testTools()
			t := 0
			for w.Len() < n {
				w.Append(turn(t, outputs)...)
				t++
				if _, err := w.Messages(ctx, tools); err != nil {
					b.Fatal(err)
				}
			}
			// Warm the counter's cache for every turn shape.
			for i := range 64 {
				for _, m := range turn(t+i, outputs) {
					c.CountMessage(m)
				}
			}
			turns := make([][]llm.Message, 64)
			for i := range turns {
				turns[i] = turn(t+i, outputs)
			}
			var sent int
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				w.Append(turns[i%len(turns)]...)
				msgs, err := w.Messages(ctx, tools)
				if err != nil {
					b.Fatal(err)
				}
				sent = len(msgs)
			}
			b.ReportMetric(float64(sent), "msgs-sent")
			fake.check()
		})
	}
}

// BenchmarkLongRun runs the 200-turn scripted run at a 128k and an 8k
// limit, under the fixed cadence (a summary every DefaultSummaryEvery
// turns) and the cost-driven one (run once per cached-price ratio, since
// its decisions depend on the price), and reports for each:
//
//   - prefix-reuse: the share of the Worker's prompt tokens that repeat the
//     previous request's prefix (what a provider's prompt cache can serve);
//   - reuse-bound: 1 − mean tokens appended per turn / mean prompt tokens,
//     the most any layout could reuse with these prompts, since a turn's
//     new round has never been sent before; reuse-bound-budget is the same
//     with every prompt at the budget, the most any cadence could reach at
//     this limit;
//   - cost/full@N%: the modelled cost at cached input priced N % of input
//     (DeepSeek and Anthropic 10 %, OpenAI 25–50 %), a cache write at the
//     input price and summary replies at 4× (DefaultPrice), relative to
//     sending the whole history at the same prices, which a cache serves
//     almost entirely, so the comparison is not flattered;
//   - summaries, max-prompt against budget, and the tokens sent.
//
// It logs the per-call curve.
func BenchmarkLongRun(b *testing.B) {
	ratios := []int{10, 25, 50}
	for _, limit := range []int{128000, 8000} {
		type variant struct {
			name   string
			every  int
			ratios []int // the ratios the run is priced at
		}
		vs := []variant{{fmt.Sprintf("every-%d", summarizer.DefaultSummaryEvery), summarizer.DefaultSummaryEvery, ratios}}
		for _, pct := range ratios {
			vs = append(vs, variant{fmt.Sprintf("cost@%d%%", pct), summarizer.CostDriven, []int{pct}})
		}
		for _, v := range vs {
			b.Run(fmt.Sprintf("limit=%d/cadence=%s", limit, v.name), func(b *testing.B) {
				cfg := summarizer.Config{Model: "gpt-4o", ContextLimit: limit, ReplyReserve: min(4096, limit/5), SummaryEvery: v.every}
				if v.every == summarizer.CostDriven {
					p := benchPrice(v.ratios[0])
					cfg.Price = &p
				}
				const turns = 200
				var r runResult
				for b.Loop() {
					r = longRun(b, cfg, turns, 1)
				}
				with, without := sum(r.prompts)+r.summaryIn, sum(r.full)
				b.ReportMetric(float64(with), "tokens-window")
				b.ReportMetric(float64(without), "tokens-full")
				b.ReportMetric(float64(with)/float64(without), "window/full")
				b.ReportMetric(float64(maxOf(r.prompts)), "max-prompt")
				b.ReportMetric(float64(limit-cfg.ReplyReserve), "budget")
				b.ReportMetric(float64(r.summaries), "summaries")
				b.ReportMetric(float64(sum(r.reused))/float64(sum(r.prompts)), "prefix-reuse")
				perTurn := float64(r.full[len(r.full)-1]-r.full[0]) / float64(len(r.full)-1)
				b.ReportMetric(1-perTurn/(float64(sum(r.prompts))/float64(len(r.prompts))), "reuse-bound")
				b.ReportMetric(1-perTurn/float64(limit-cfg.ReplyReserve), "reuse-bound-budget")
				fullReused := fullReuse(r.full)
				for _, pct := range v.ratios {
					p := benchPrice(pct)
					win := modelledCost(r.prompts, r.reused, r.summaryIn, p.CachedInput) + p.Output*float64(r.summaryOut)
					whole := modelledCost(r.full, fullReused, 0, p.CachedInput)
					b.ReportMetric(win, fmt.Sprintf("cost@%d%%", pct))
					b.ReportMetric(win/whole, fmt.Sprintf("cost/full@%d%%", pct))
				}
				b.Logf("prompt tokens per call (call:tokens), first summary at call %d, %d summaries, %.0f tokens appended per turn:\n%s",
					r.firstSummary, r.summaries, perTurn, curve(r.prompts, 10))
			})
		}
	}
}

// benchPrice is DefaultPrice with cached input at pct % of input.
func benchPrice(pct int) llm.Price {
	p := summarizer.DefaultPrice
	p.CachedInput = float64(pct) / 100
	return p
}
