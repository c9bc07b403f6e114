package agent_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/summarizer"
	"github.com/trioagent/trio/tools"
)

// loopModel answers instantly: a plan, a suite, then Worker turns that each
// call a no-op tool with new arguments.
type loopModel struct{ turn int }

func (m *loopModel) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	switch req.Agent {
	case agent.RolePlanner:
		return calcPlan(), nil
	case agent.RoleTestDesigner:
		return calcSuite(), nil
	case agent.RoleWorker:
		m.turn++
		r := calls("", call{"noop", map[string]int{"n": m.turn}})
		r.Usage = llm.Usage{PromptTokens: 10, CompletionTokens: 1}
		return r, nil
	}
	return llm.Response{}, fmt.Errorf("loop model: unexpected role %s", req.Agent)
}

type noopArgs struct {
	tools.NoEffects
	N int `json:"n"`
}

// BenchmarkWorkerTurn measures the loop's own cost per Worker turn: window,
// gate, write-ahead record (fsynced), trace and checkpoint (fsynced), with a
// zero-latency model and a no-op tool. Run with -benchtime=200x: with
// summaries off, the window's view (and so the cost) grows with the turns.
func BenchmarkWorkerTurn(b *testing.B) {
	reg, err := tools.NewRegistry(tools.New[noopArgs]("noop", "Does nothing.", func(context.Context, noopArgs) (tools.Result, error) {
		return tools.Result{OK: true, Output: "ok"}, nil
	}))
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	a, err := agent.New(&loopModel{}, reg,
		agent.WithWorkspace(dir+"/ws"), agent.WithRunsDir(dir+"/runs"),
		agent.WithBudgets(agent.Budgets{MaxTotalTurns: b.N, MaxSteps: b.N + 1, MaxTokens: 1 << 40}),
		agent.WithWindow(summarizer.Config{ContextLimit: 1 << 20, SummaryEvery: 1 << 30}),
	)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	rep, err := a.Run(context.Background(), "benchmark")
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if rep.Reason != agent.StopBudgetSteps || rep.Metrics.WorkerTurns != b.N {
		b.Fatalf("stopped with %s after %d turns: %s", rep.Reason, rep.Metrics.WorkerTurns, rep.Detail)
	}
}
