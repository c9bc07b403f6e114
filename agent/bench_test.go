package agent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

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

// startModel stops the run at the Planner's call, the first model call:
// what ran before it is the start (workspace baseline and snapshot). It
// records when it was called and the process's peak resident memory then.
type startModel struct {
	cancel context.CancelFunc
	at     time.Time
	peakKB int64
}

func (m *startModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	if m.at.IsZero() {
		m.at = time.Now()
		m.peakKB = vmHWM()
	}
	m.cancel()
	return llm.Response{}, context.Canceled
}

// vmHWM is the process's peak resident set size in KiB (Linux), 0 when
// unknown; resetPeak starts it again from the current size.
func vmHWM() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

func resetPeak() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// BenchmarkStartLargeWorkspace measures the start of a run on an existing
// project: TRIO_BENCH_FILES small files (100,000 unless set) in 100
// folders, and one 2 GB sparse file. Reported: the time from Run to the
// first model call, and the peak resident memory over it. Run with
// -benchtime=1x.
func BenchmarkStartLargeWorkspace(b *testing.B) {
	n := 100000
	if s := os.Getenv("TRIO_BENCH_FILES"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatalf("TRIO_BENCH_FILES=%q: %v", s, err)
		}
	}
	dir := b.TempDir()
	ws := filepath.Join(dir, "ws")
	for i := 0; i < n; i++ {
		d := filepath.Join(ws, fmt.Sprintf("pkg%03d", i%100))
		if i < 100 {
			if err := os.MkdirAll(d, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		body := fmt.Sprintf("// file %d\npackage pkg%03d\n\nconst N%d = %d\n", i, i%100, i, i*7919)
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%06d.go", i)), []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	big, err := os.Create(filepath.Join(ws, "big.bin"))
	if err != nil {
		b.Fatal(err)
	}
	if err := big.Truncate(2 << 30); err != nil {
		b.Fatal(err)
	}
	big.Close()
	var total time.Duration
	var peak int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		m := &startModel{cancel: cancel}
		a, err := agent.New(m, nil,
			agent.WithWorkspace(ws), agent.WithRunsDir(filepath.Join(dir, fmt.Sprintf("runs%d", i))),
			agent.WithReuseWorkspace(), agent.WithSandboxConfig(agent.SandboxConfig{Kind: agent.SandboxLocal}))
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		resetPeak()
		start := time.Now()
		_, err = a.Run(ctx, "benchmark")
		cancel()
		if m.at.IsZero() {
			b.Fatalf("the run ended before its first model call: %v", err)
		}
		total += m.at.Sub(start)
		peak = max(peak, m.peakKB)
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "start-s/op")
	b.ReportMetric(float64(peak)/1024, "peak-RSS-MB")
}
