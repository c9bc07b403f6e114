package telemetry_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/summarizer"
	"github.com/trioagent/trio/telemetry"
	"github.com/trioagent/trio/telemetry/otlptest"
	"github.com/trioagent/trio/tools"
)

// BenchmarkWorkerTurns measures the loop's cost per Worker turn (a
// zero-latency model, a no-op tool; window, gate, write-ahead record,
// trace and checkpoint as in a real run) three ways, interleaved and in
// rotating order so that machine load hits them alike: without the tracer
// ("baseline"), with the tracer the CLI installs when no exporter is
// configured (a nil *Tracer: "off"), and exporting to a loopback receiver
// ("on"). It reports each mode's time per turn and its ratio to the
// baseline. Each iteration is one run of 100 turns per mode.
func BenchmarkWorkerTurns(b *testing.B) {
	rc := otlptest.Start()
	defer rc.Close()
	reg, err := tools.NewRegistry(tools.New[noopArgs]("noop", "Does nothing.", func(context.Context, noopArgs) (tools.Result, error) {
		return tools.Result{OK: true, Output: "ok"}, nil
	}))
	if err != nil {
		b.Fatal(err)
	}
	const turns = 100
	modes := []string{"baseline", "off", "on"}
	total := map[string]time.Duration{}
	round := 0
	for b.Loop() {
		for k := range modes {
			mode := modes[(k+round)%len(modes)]
			var tr *telemetry.Tracer
			var opts []agent.Option
			switch mode {
			case "off":
				opts = append(opts, agent.WithObserver(tr.Observe))
			case "on":
				if tr, err = telemetry.New(telemetry.Config{TracesURL: telemetry.TracesURL(rc.URL())}); err != nil {
					b.Fatal(err)
				}
				opts = append(opts, agent.WithObserver(tr.Observe))
			}
			dir := b.TempDir()
			a, err := agent.New(&loopModel{}, reg, append(opts, agent.WithWorkspace(filepath.Join(dir, "ws")), agent.WithRunsDir(filepath.Join(dir, "runs")),
				agent.WithBudgets(agent.Budgets{MaxTotalTurns: turns, MaxSteps: turns + 1, MaxTokens: 1 << 40}),
				agent.WithWindow(summarizer.Config{ContextLimit: 1 << 20, SummaryEvery: 1 << 30}),
				agent.WithSandboxConfig(agent.SandboxConfig{Kind: agent.SandboxLocal}))...)
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			rep, err := a.Run(context.Background(), "benchmark")
			if err == nil {
				err = tr.Shutdown(context.Background())
			}
			total[mode] += time.Since(start)
			if err != nil || rep.Metrics.WorkerTurns != turns {
				b.Fatalf("%s: %v %v", mode, rep, err)
			}
		}
		round++
	}
	for _, mode := range modes {
		b.ReportMetric(float64(total[mode].Microseconds())/float64(round*turns), mode+"-µs/turn")
		b.ReportMetric(float64(total[mode])/float64(total["baseline"]), mode+"/baseline")
	}
}

// loopModel answers instantly: a one-step plan, a suite, then Worker
// turns that each call the no-op tool with new arguments.
type loopModel struct{ turn int }

func (m *loopModel) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	text := func(s string) llm.Response {
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: s}, FinishReason: "stop"}
	}
	switch req.Agent {
	case agent.RolePlanner:
		return text(`{"steps":[{"title":"calc","description":"Write calc.go.","files":["calc.go"],"expected":"calc exists","acceptance":"go test passes"}],"risks":[],"test_command":"go test ./...","cli":[],"tests_dir":"acceptance"}`), nil
	case agent.RoleTestDesigner:
		return text(`{"files":[{"path":"acceptance/calc_test.go","content":"package acceptance\n\nimport \"testing\"\n\nfunc TestCalc(t *testing.T) {}\n"}],"notes":"basic"}`), nil
	case agent.RoleWorker:
		m.turn++
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: fmt.Sprintf("call_%d", m.turn), Name: "noop", Arguments: fmt.Sprintf(`{"n":%d}`, m.turn)}}},
			FinishReason: "tool_calls", Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 1}}, nil
	}
	return llm.Response{}, fmt.Errorf("loop model: unexpected role %s", req.Agent)
}

type noopArgs struct {
	N int `json:"n"`
}

// BenchmarkObserve is the cost of one event as the agent delivers it,
// through a func value: an observer that does nothing, the nil tracer (no
// exporter configured), and an exporting tracer for scale.
func BenchmarkObserve(b *testing.B) {
	ok := true
	events := []agent.Event{
		{Kind: agent.EventModelCall, Role: agent.RoleWorker, Step: 1, Duration: time.Millisecond, Tokens: agent.Tokens{Prompt: 900, Completion: 30}},
		{Kind: agent.EventToolCall, Role: agent.RoleWorker, Step: 1, Tool: "write_file", Decision: "allow", OK: &ok, Outcome: "ok", CallID: "c1"},
	}
	var off *telemetry.Tracer
	run := func(b *testing.B, observe func(agent.Event)) {
		observers := []func(agent.Event){observe}
		for i := 0; b.Loop(); i++ {
			ev := events[i%2]
			ev.Time = time.Now()
			for _, o := range observers {
				o(ev)
			}
		}
	}
	b.Run("noop-func", func(b *testing.B) { run(b, func(agent.Event) {}) })
	b.Run("off", func(b *testing.B) { run(b, off.Observe) })
	b.Run("on", func(b *testing.B) {
		rc := otlptest.Start()
		defer rc.Close()
		on, err := telemetry.New(telemetry.Config{TracesURL: telemetry.TracesURL(rc.URL())})
		if err != nil {
			b.Fatal(err)
		}
		on.Observe(agent.Event{Kind: agent.EventRunStarted, Time: time.Now()})
		run(b, on.Observe)
		on.Shutdown(context.Background())
	})
}
