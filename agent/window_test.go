package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/summarizer"
	"github.com/trioagent/trio/tools"
)

// summaryReply is a valid structured summary whose progress text can be
// looked for in later requests.
func summaryReply(progress string, u llm.Usage) llm.Response {
	r := text(mustJSON(summarizer.Summary{
		Progress: progress, CompletedSteps: []string{}, FilesChanged: []string{"go.mod: module calc"},
		UnresolvedErrors: []string{}, Decisions: []string{}, NextSteps: []string{"write calc.go"},
	}))
	r.Usage = u
	return r
}

// A run that summarized before an interruption resumes with its summary:
// the window's state is in the checkpoint, so no summary is asked for again
// (the script has no second summarizer reply) and the Worker still sees it.
// Interrupted right after the summary, before the Worker's reply, the
// checkpoint also moves the summarizer's script position past it.
func TestResumeKeepsSummary(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// stopAt is the event after which the first session is cancelled.
		stopAt func(agent.Event) bool
		// resumedTurns is how many Worker requests the resumed session makes.
		resumedTurns int
	}{
		{"after the next tool call", func() func(agent.Event) bool {
			n := 0
			return func(ev agent.Event) bool {
				if ev.Kind == agent.EventToolCall {
					n++
				}
				return n == 3
			}
		}(), 1},
		{"right after the summary", func(ev agent.Event) bool { return ev.Kind == agent.EventSummary }, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			var invoked atomic.Int64
			counter := tools.New[countArgs]("count", "Counts its calls.", func(_ context.Context, a countArgs) (tools.Result, error) {
				invoked.Add(1)
				return tools.Result{OK: true, Output: fmt.Sprintf("counted %d", a.N)}, nil
			})
			reg, err := tools.NewRegistry(counter)
			if err != nil {
				t.Fatal(err)
			}
			const progress = "go.mod is written; the first count ran (summary marker 7f3a)"
			script := func() *fakeModel {
				return newFake().add(agent.RolePlanner, calcPlan()).add(agent.RoleTestDesigner, calcSuite()).
					add(agent.RoleSummarizer, summaryReply(progress, llm.Usage{})).
					add(agent.RoleWorker,
						calls("", write("go.mod", goMod)),
						calls("", call{"count", map[string]int{"n": 1}}),
						calls("", call{"count", map[string]int{"n": 2}}), // the summary is made before this turn
						calls("", write("calc.go", calcGood), finish("done")),
					)
			}
			window := agent.WithWindow(summarizer.Config{SummaryEvery: 2, KeepRounds: 1})

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			first := script()
			a, err := agent.New(first, reg, e.opts(window, agent.WithObserver(func(ev agent.Event) {
				if tt.stopAt(ev) {
					cancel()
				}
			}))...)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := a.Run(ctx, "Build package calc.")
			if err != nil {
				t.Fatal(err)
			}
			if rep.Reason != agent.StopInterrupted || rep.Metrics.Summaries != 1 {
				t.Fatalf("first session: %s (%s), %d summaries; want interrupted after 1 summary", rep.Reason, rep.Detail, rep.Metrics.Summaries)
			}
			if n := len(first.requestsOf(agent.RoleSummarizer)); n != 1 {
				t.Fatalf("first session asked the summarizer %d times, want 1", n)
			}
			var st struct {
				Cursor map[string]int `json:"model_cursor"`
			}
			if err := json.Unmarshal([]byte(readFile(t, filepath.Join(e.runs, "run", agent.StateFile))), &st); err != nil {
				t.Fatal(err)
			}
			if st.Cursor[agent.RoleSummarizer] != 1 {
				t.Errorf("checkpointed summarizer position %d, want 1 (past the summary the window keeps)", st.Cursor[agent.RoleSummarizer])
			}

			second := script()
			rep, err = agent.Resume(context.Background(), filepath.Join(e.runs, "run"), second, reg, window, local)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Reason != agent.StopCompleted {
				t.Fatalf("resumed: %s (%s)", rep.Reason, rep.Detail)
			}
			if n := len(second.requestsOf(agent.RoleSummarizer)); n != 0 {
				t.Errorf("the resumed session asked the summarizer %d times, want 0 (the summary is restored)", n)
			}
			if rep.Metrics.Summaries != 1 || rep.Metrics.Roles[agent.RoleSummarizer].Calls != 1 {
				t.Errorf("summaries %d, summarizer calls %d; want 1 and 1", rep.Metrics.Summaries, rep.Metrics.Roles[agent.RoleSummarizer].Calls)
			}
			worker := second.requestsOf(agent.RoleWorker)
			if len(worker) != tt.resumedTurns {
				t.Fatalf("resumed session made %d Worker requests, want %d", len(worker), tt.resumedTurns)
			}
			var sent strings.Builder
			for _, m := range worker[0].Messages {
				sent.WriteString(m.Content)
				for _, tc := range m.ToolCalls {
					sent.WriteString(tc.Arguments)
				}
			}
			if !strings.Contains(sent.String(), progress) {
				t.Error("the resumed Worker request does not carry the restored summary")
			}
			if strings.Contains(sent.String(), "go 1.22") {
				t.Error("the folded write_file call of go.mod is still sent after resume")
			}
			if invoked.Load() != 2 {
				t.Errorf("count ran %d times, want 2", invoked.Load())
			}
		})
	}
}

// Summary calls count for the summarizer role and the run's token budget,
// also when WithWindow gives the summaries to another model: the report
// matches the usage the window's events carry, rejected replies included.
func TestSummarizerTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sum := newFake().add(agent.RoleSummarizer,
		func() llm.Response {
			r := text("not json")
			r.Usage = llm.Usage{PromptTokens: 1000, CompletionTokens: 20}
			return r
		}(),
		summaryReply("go.mod and calc.go are written", llm.Usage{PromptTokens: 40000, CompletionTokens: 500}))
	m := newFake().add(agent.RolePlanner, calcPlan()).add(agent.RoleTestDesigner, calcSuite()).
		add(agent.RoleWorker,
			calls("", write("go.mod", goMod)),
			calls("", write("calc.go", calcGood)),
			calls("", call{"list_files", map[string]any{}}), // the summary is made before this turn
			calls("", finish("done")),
		)
	var mu sync.Mutex
	var fromEvents llm.Usage
	events := 0
	cfg := summarizer.Config{SummaryEvery: 2, KeepRounds: 1, Summarizer: sum, OnEvent: func(ev summarizer.Event) {
		if ev.Kind == summarizer.EventSummary || ev.Kind == summarizer.EventSummaryRejected {
			mu.Lock()
			events++
			fromEvents.PromptTokens += ev.Usage.PromptTokens
			fromEvents.CompletionTokens += ev.Usage.CompletionTokens
			mu.Unlock()
		}
	}}
	rep := run(t, m, nil, e.opts(agent.WithWindow(cfg), agent.WithBudgets(agent.Budgets{MaxTokens: 30000}))...)

	if rep.Reason != agent.StopBudgetTokens {
		t.Fatalf("stopped with %s (%s), want budget_tokens: the summary's 40500 tokens exceed the budget", rep.Reason, rep.Detail)
	}
	got := rep.Metrics.Roles[agent.RoleSummarizer]
	want := agent.RoleUsage{Calls: 2, PromptTokens: 41000, CompletionTokens: 520}
	if got.Calls != want.Calls || got.PromptTokens != want.PromptTokens || got.CompletionTokens != want.CompletionTokens {
		t.Errorf("summarizer usage %+v, want %+v", got, want)
	}
	mu.Lock()
	if events != got.Calls || fromEvents.PromptTokens != got.PromptTokens || fromEvents.CompletionTokens != got.CompletionTokens {
		t.Errorf("window events: %d calls, %+v; report: %+v", events, fromEvents, got)
	}
	mu.Unlock()
	if rep.Metrics.PromptTokens < 41000 {
		t.Errorf("run prompt tokens %d do not include the summarizer's", rep.Metrics.PromptTokens)
	}
	if n := len(m.requestsOf(agent.RoleSummarizer)); n != 0 {
		t.Errorf("the run's model was asked for %d summaries; WithWindow named another", n)
	}
	trace, err := agent.ReadTrace(filepath.Join(e.runs, "run"))
	if err != nil {
		t.Fatal(err)
	}
	traced := 0
	for _, te := range trace {
		if te.Kind == "summary" && te.Usage != nil {
			traced += te.Usage.PromptTokens
		}
	}
	if traced != 41000 {
		t.Errorf("summary trace entries carry %d prompt tokens, want 41000", traced)
	}
}

// An endpoint that reports no usage: tokens are estimated with the window's
// counter, marked so in the trace and the report, and the token budget
// still stops the run.
func TestUnreportedUsageStillBudgets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := newFake().add(agent.RolePlanner, calcPlan()).add(agent.RoleTestDesigner, calcSuite())
	m.noUsage = true
	for i := range 40 {
		m.add(agent.RoleWorker, calls("", write(fmt.Sprintf("notes/n%d.txt", i), strings.Repeat("note ", 50+i))))
	}
	const budget = 20000
	rep := run(t, m, nil, e.opts(agent.WithBudgets(agent.Budgets{MaxTokens: budget}))...)
	if rep.Reason != agent.StopBudgetTokens {
		t.Fatalf("stopped with %s (%s), want budget_tokens", rep.Reason, rep.Detail)
	}
	// Every request is held to the budget before it is sent: the run stops
	// short of it, with the request it did not send named.
	if total := rep.Metrics.PromptTokens + rep.Metrics.CompletionTokens; total > budget || total < budget/2 {
		t.Errorf("stopped at %d estimated tokens, want at most the budget %d (and not far under)", total, budget)
	}
	if !strings.Contains(rep.Detail, "worker request of about") || !strings.Contains(rep.Detail, "not sent") {
		t.Errorf("detail %q does not name the request that was not sent", rep.Detail)
	}
	for _, role := range []string{agent.RolePlanner, agent.RoleTestDesigner, agent.RoleWorker} {
		u := rep.Metrics.Roles[role]
		if u.Calls == 0 || u.Estimated != u.Calls || u.PromptTokens == 0 || u.CompletionTokens == 0 {
			t.Errorf("%s usage %+v: want every call estimated with prompt and completion tokens", role, u)
		}
	}
	if w := rep.Metrics.Roles[agent.RoleWorker]; w.Calls >= 40 {
		t.Errorf("the Worker made %d calls: the budget did not stop it", w.Calls)
	}
	trace, err := agent.ReadTrace(filepath.Join(e.runs, "run"))
	if err != nil {
		t.Fatal(err)
	}
	replies := 0
	for _, te := range trace {
		if te.Kind != "model_reply" {
			continue
		}
		replies++
		if !te.UsageEstimated || te.Usage == nil || te.Usage.PromptTokens == 0 {
			t.Errorf("model_reply of %s: usage %+v estimated %v", te.Role, te.Usage, te.UsageEstimated)
		}
	}
	if replies == 0 {
		t.Error("no model_reply in the trace")
	}
	if md := readFile(t, filepath.Join(e.runs, "run", agent.ReportMD)); !strings.Contains(md, "estimated") {
		t.Error("report.md does not say the tokens were estimated")
	}
}

// The run's price table drives the Worker window's default, cost-driven
// summary cadence: with no cache discount on the Worker's model and a cheap
// summarizer, carrying the first foldable rounds already costs more than a
// summary, so the window summarizes within a four-turn step (and again as
// the history grows); without a
// price table (cached input assumed at 10 %) the same run makes none (the
// script has no summarizer reply to give).
func TestPricesDriveSummaryCadence(t *testing.T) {
	t.Parallel()
	noCache := llm.Price{Input: 3, CachedInput: 3, CacheWrite: 3, Output: 15}
	cheap := llm.Price{Input: 0.1, CachedInput: 0.1, CacheWrite: 0.1, Output: 0.4}
	for _, tt := range []struct {
		name      string
		prices    map[string]llm.Price
		summaries int
	}{
		{"no cache discount", map[string]llm.Price{agent.RoleWorker: noCache, agent.RoleSummarizer: cheap}, 1},
		{"no price table", nil, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			m := newFake().add(agent.RolePlanner, calcPlan()).add(agent.RoleTestDesigner, calcSuite()).
				add(agent.RoleWorker,
					calls("", write("go.mod", goMod)),
					calls("", call{"list_files", map[string]any{}}),
					calls("", call{"list_files", map[string]any{}}),
					calls("", write("calc.go", calcGood), finish("done")),
				)
			if tt.summaries > 0 {
				for i := range 3 {
					m.add(agent.RoleSummarizer, summaryReply(fmt.Sprintf("go.mod is written (%d)", i), llm.Usage{}))
				}
			}
			opts := []agent.Option{agent.WithWindow(summarizer.Config{KeepRounds: 1})}
			if tt.prices != nil {
				opts = append(opts, agent.WithPrices(tt.prices))
			}
			rep := run(t, m, nil, e.opts(opts...)...)
			if rep.Reason != agent.StopCompleted {
				t.Fatalf("stopped with %s (%s)", rep.Reason, rep.Detail)
			}
			n := len(m.requestsOf(agent.RoleSummarizer))
			if rep.Metrics.Summaries < tt.summaries || rep.Metrics.Summaries != n || (tt.summaries == 0 && n != 0) {
				t.Fatalf("%d summaries, %d summarizer requests; want at least %d, all accepted", rep.Metrics.Summaries, n, tt.summaries)
			}
			if tt.summaries == 0 {
				return
			}
			trace, err := agent.ReadTrace(filepath.Join(e.runs, "run"))
			if err != nil {
				t.Fatal(err)
			}
			for _, te := range trace {
				if te.Kind == "summary" && !strings.Contains(te.Detail, "more than a summary's fixed cost") {
					t.Errorf("summary trace entry %q does not give the cost reason", te.Detail)
				}
			}
		})
	}
}
