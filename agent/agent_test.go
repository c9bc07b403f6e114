package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/examples/demo"
	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/summarizer"
	"github.com/trioagent/trio/tools"
)

// buggyThenFixed is the calc run: the first build subtracts, the real
// acceptance test fails, the Worker states its analysis and repairs.
func buggyThenFixed() *fakeModel {
	return newFake().
		add(agent.RolePlanner, calcPlan()).
		add(agent.RoleTestDesigner, calcSuite()).
		add(agent.RoleWorker,
			calls("", write("go.mod", goMod), write("calc.go", calcBuggy), finish("calc written")),
			calls("What failed: TestAdd (Add(2, 3) = -1, want 5). Likely cause: Add subtracts. My last change caused it: calc.go uses a - b.",
				edit("calc.go", "a - b", "a + b")),
			calls("", runTests(), finish("Add fixed")),
		).
		add(agent.RoleCritic, failing("TestAdd"))
}

func TestRepairCompletes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var events []agent.Event
	rep := run(t, buggyThenFixed(), nil, e.opts(agent.WithObserver(func(ev agent.Event) { events = append(events, ev) }))...)
	if rep.Reason != agent.StopCompleted || rep.Status != "completed" {
		t.Fatalf("reason %s (%s), want completed", rep.Reason, rep.Detail)
	}
	m := rep.Metrics
	if m.FirstPass || m.RepairRounds != 1 || !m.Completed || m.Checks != 2 || m.StepsDone != 1 {
		t.Errorf("metrics %+v: want first_pass false, 1 repair round, 2 checks, 1 step done", m)
	}
	if got := readFile(t, filepath.Join(e.ws, "calc.go")); got != calcGood {
		t.Errorf("calc.go = %q, want the repaired file", got)
	}
	if len(rep.Analyses) != 1 || !strings.Contains(rep.Analyses[0], "What failed") {
		t.Errorf("analyses %q, want the repair's statement", rep.Analyses)
	}
	// Worker: 3 + 1 + 2 calls; Critic: run_tests twice, the first failing.
	if m.ToolCalls != 8 || m.ToolFailures != 1 || m.Denials != 0 {
		t.Errorf("tool calls %d failures %d denials %d, want 8, 1, 0", m.ToolCalls, m.ToolFailures, m.Denials)
	}
	wantCalls := map[string]int{agent.RolePlanner: 1, agent.RoleTestDesigner: 1, agent.RoleWorker: 3, agent.RoleCritic: 1}
	for role, n := range wantCalls {
		if got := m.Roles[role].Calls; got != n {
			t.Errorf("%s model calls = %d, want %d", role, got, n)
		}
	}
	if m.ModelCalls != 6 || m.PromptTokens != 600 || m.CompletionTokens != 60 {
		t.Errorf("model calls %d tokens %d/%d, want 6 and 600/60", m.ModelCalls, m.PromptTokens, m.CompletionTokens)
	}
	if m.WallTime <= 0 || m.SandboxTime <= 0 || m.ToolTime <= 0 {
		t.Errorf("times %v %v %v, want positive wall, sandbox and tool time", m.WallTime, m.SandboxTime, m.ToolTime)
	}

	// report.json on disk says the same.
	var disk map[string]any
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(e.runs, "run", agent.ReportJSON))), &disk); err != nil {
		t.Fatal(err)
	}
	dm := disk["metrics"].(map[string]any)
	for k, want := range map[string]any{"completed": true, "first_pass": false, "repair_rounds": 1.0, "tool_calls": 8.0, "model_calls": 6.0} {
		if dm[k] != want {
			t.Errorf("report.json metrics.%s = %v, want %v", k, dm[k], want)
		}
	}
	if disk["reason"] != "completed" || disk["status"] != "completed" {
		t.Errorf("report.json reason %v status %v", disk["reason"], disk["status"])
	}
	md := readFile(t, filepath.Join(e.runs, "run", agent.ReportMD))
	for _, want := range []string{"completed", "first pass", "repair rounds", "| worker | 3 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	// The trace counts what the report counts.
	trace := readFile(t, filepath.Join(e.runs, "run", agent.TraceFile))
	if n := strings.Count(trace, `"kind":"model_reply"`); n != m.ModelCalls {
		t.Errorf("trace has %d model replies, report %d model calls", n, m.ModelCalls)
	}
	if n := strings.Count(trace, `"kind":"critic_verdict"`); n != 2 {
		t.Errorf("trace has %d critic verdicts, want 2", n)
	}
	audit := readFile(t, filepath.Join(e.runs, "run", agent.AuditFile))
	if n := strings.Count(audit, "\n"); n != m.ToolCalls {
		t.Errorf("audit has %d records, want %d", n, m.ToolCalls)
	}
	entries, err := agent.ReadTrace(filepath.Join(e.runs, "run"))
	if err != nil {
		t.Fatal(err)
	}
	replies := 0
	for _, te := range entries {
		if te.Kind == "model_reply" {
			replies++
		}
	}
	if replies != m.ModelCalls {
		t.Errorf("ReadTrace: %d model replies, want %d", replies, m.ModelCalls)
	}
	if ins, err := agent.Inspect(filepath.Join(e.runs, "run")); err != nil || ins.Reason != agent.StopCompleted || ins.Metrics.ToolCalls != m.ToolCalls {
		t.Errorf("Inspect: %v, %+v", err, ins)
	}
	// Events: the CLI's progress.
	kinds := map[agent.EventKind]int{}
	for _, ev := range events {
		kinds[ev.Kind]++
	}
	for k, n := range map[agent.EventKind]int{agent.EventRunStarted: 1, agent.EventPlanReady: 1, agent.EventTestsDesigned: 1,
		agent.EventStepStarted: 1, agent.EventCriticVerdict: 2, agent.EventRepairStarted: 1, agent.EventRunFinished: 1, agent.EventToolCall: 8} {
		if kinds[k] != n {
			t.Errorf("%d %s events, want %d", kinds[k], k, n)
		}
	}
	// The Critic's calls show in progress too: run_tests once per check,
	// the first failing.
	var criticCalls []string
	for _, ev := range events {
		if ev.Kind == agent.EventToolCall && ev.Role == agent.RoleCritic {
			criticCalls = append(criticCalls, fmt.Sprintf("%s %s ok=%v %s", ev.Tool, ev.Decision, *ev.OK, ev.Message))
		}
	}
	if len(criticCalls) != 2 || !strings.HasPrefix(criticCalls[0], "run_tests allow ok=false go test") ||
		!strings.HasPrefix(criticCalls[1], "run_tests allow ok=true go test") {
		t.Errorf("critic tool_call events %q, want run_tests failing then passing", criticCalls)
	}
}

func TestStops(t *testing.T) {
	t.Parallel()
	invalidPlan := text(`{"steps": [], "risks": [], "test_command": "", "cli": [], "tests_dir": ""}`)
	tests := []struct {
		name     string
		model    *fakeModel
		opts     []agent.Option
		want     agent.StopReason
		inDetail string
	}{
		{
			name:  "plan invalid twice",
			model: newFake().add(agent.RolePlanner, invalidPlan, text("not json")),
			want:  agent.StopPlanInvalid, inDetail: "invalid",
		},
		{
			name: "same failure twice",
			model: newFake().add(agent.RolePlanner, calcPlan()).add(agent.RoleTestDesigner, calcSuite()).
				add(agent.RoleWorker,
					calls("", write("go.mod", goMod), write("calc.go", calcBuggy), finish("written")),
					calls("TestAdd failed; I think the test is flaky; my change did not cause it.", runTests(), finish("nothing to fix"))).
				add(agent.RoleCritic, failing("TestAdd"), failing("TestAdd")),
			want: agent.StopSameFailure, inDetail: "twice",
		},
		{
			name: "repeated call",
			model: newFake().add(agent.RolePlanner, calcPlan()).add(agent.RoleTestDesigner, calcSuite()).
				add(agent.RoleWorker,
					calls("", call{"list_files", map[string]any{}}),
					calls("", call{"list_files", map[string]any{}}),
					calls("", call{"list_files", map[string]any{}})),
			want: agent.StopRepeatedCall, inDetail: "list_files",
		},
		{
			name: "turn budget",
			model: newFake().add(agent.RolePlanner, calcPlan()).add(agent.RoleTestDesigner, calcSuite()).
				add(agent.RoleWorker,
					calls("", call{"list_files", map[string]any{}}),
					calls("", call{"read_file", map[string]any{"path": "acceptance/calc_test.go"}})),
			opts: []agent.Option{agent.WithBudgets(agent.Budgets{MaxTotalTurns: 2})},
			want: agent.StopBudgetSteps, inDetail: "2 Worker turns",
		},
		{
			// A step that has not finished in MaxSteps turns stops the run
			// instead of going on to the Critic (which has no reply here).
			name: "step budget",
			model: newFake().add(agent.RolePlanner, calcPlan()).add(agent.RoleTestDesigner, calcSuite()).
				add(agent.RoleWorker,
					calls("", call{"list_files", map[string]any{}}),
					calls("", call{"read_file", map[string]any{"path": "acceptance/calc_test.go"}})),
			opts: []agent.Option{agent.WithBudgets(agent.Budgets{MaxSteps: 2})},
			want: agent.StopBudgetSteps, inDetail: "plan step 1: 2 Worker turns spent without finish_step (MaxSteps",
		},
		{
			name: "token budget",
			model: newFake().add(agent.RolePlanner, calcPlan()).add(agent.RoleTestDesigner, calcSuite()).
				add(agent.RoleWorker, calls("", call{"list_files", map[string]any{}})),
			opts: []agent.Option{agent.WithBudgets(agent.Budgets{MaxTokens: 300})},
			want: agent.StopBudgetTokens, inDetail: "tokens",
		},
		{
			name: "repair budget",
			model: newFake().add(agent.RolePlanner, calcPlan()).add(agent.RoleTestDesigner, calcSuite()).
				add(agent.RoleWorker, calls("", write("go.mod", goMod), write("calc.go", calcBuggy), finish("written"))).
				add(agent.RoleCritic, failing("TestAdd")),
			opts: []agent.Option{agent.WithBudgets(agent.Budgets{MaxRepairRounds: -1})},
			want: agent.StopChecksFailed, inDetail: "fail",
		},
		{
			name: "oscillation",
			model: newFake().add(agent.RolePlanner, calcPlan()).add(agent.RoleTestDesigner, calcSuite()).
				add(agent.RoleWorker,
					calls("", write("go.mod", goMod), write("calc.go", calcBuggy), finish("written")),
					calls("TestAdd fails: Add subtracts; my change caused it.", edit("calc.go", "a - b", "a * b"), finish("multiply")),
					calls("TestAdd fails: Add multiplies; my change caused it.", edit("calc.go", "a * b", "a - b"), finish("subtract")),
					calls("TestAdd fails: Add subtracts; my change caused it.", edit("calc.go", "a - b", "a * b"), finish("multiply"))).
				add(agent.RoleCritic, failing("TestAdd"), failing("TestAdd"), failing("TestAdd"), failing("TestAdd")),
			want: agent.StopOscillation, inDetail: "alternate",
		},
		{
			name:  "wall time",
			model: newFake().add(agent.RolePlanner, calcPlan()),
			opts:  []agent.Option{agent.WithBudgets(agent.Budgets{MaxWallTime: time.Nanosecond})},
			want:  agent.StopBudgetTime, inDetail: "wall time",
		},
		{
			name:  "context window too small",
			model: newFake().add(agent.RolePlanner, calcPlan()).add(agent.RoleTestDesigner, calcSuite()),
			opts:  []agent.Option{agent.WithWindow(summarizer.Config{ContextLimit: 1024, ReplyReserve: 100})},
			want:  agent.StopContextBudget, inDetail: "budget",
		},
		{
			name:  "script runs out",
			model: newFake().add(agent.RolePlanner, calcPlan()).add(agent.RoleTestDesigner, calcSuite()),
			want:  agent.StopModelError, inDetail: "script has 0",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			rep := run(t, tt.model, nil, e.opts(tt.opts...)...)
			if rep.Reason != tt.want || !strings.Contains(rep.Detail, tt.inDetail) {
				t.Fatalf("stopped with %s (%s), want %s with %q", rep.Reason, rep.Detail, tt.want, tt.inDetail)
			}
			if rep.Explanation == "" || rep.Status == "completed" || rep.Metrics.Completed {
				t.Errorf("report %+v", rep)
			}
			if _, err := os.Stat(filepath.Join(e.runs, "run", agent.ReportMD)); err != nil {
				t.Error(err)
			}
		})
	}
}

// A denied command, an unknown tool and malformed arguments go back to the
// model as error results; the run continues and counts them.
func TestBadCallsComeBackAndCount(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := newFake().add(agent.RolePlanner, calcPlan()).add(agent.RoleTestDesigner, calcSuite()).
		add(agent.RoleWorker,
			calls("", call{"run_command", map[string]string{"command": "curl http://example.com"}}),
			calls("", call{"launch_rockets", map[string]any{}}, call{"write_file", `{"path": "calc.go", "content": `}),
			text(""),
			text("I'm sorry, I can't help with that."),
			llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "Let me write"}, FinishReason: "length"},
			calls("", write("go.mod", goMod), write("calc.go", calcGood), finish("done")),
		)
	rep := run(t, m, nil, e.opts()...)
	if rep.Reason != agent.StopCompleted {
		t.Fatalf("reason %s (%s)", rep.Reason, rep.Detail)
	}
	if mm := rep.Metrics; mm.Denials != 1 || mm.ToolFailures != 2 || mm.Malformed != 3 || !mm.FirstPass {
		t.Errorf("denials %d failures %d malformed replies %d first pass %v, want 1, 2, 3, true", mm.Denials, mm.ToolFailures, mm.Malformed, mm.FirstPass)
	}
	// What the model saw: the denial's reason and the list of tools.
	var sawDenied, sawTools bool
	for _, req := range m.requests {
		for _, msg := range req.Messages {
			if msg.Role != llm.RoleTool {
				continue
			}
			sawDenied = sawDenied || strings.Contains(msg.Content, `"denied":true`)
			sawTools = sawTools || (strings.Contains(msg.Content, "launch_rockets") && strings.Contains(msg.Content, "finish_step"))
		}
	}
	if !sawDenied || !sawTools {
		t.Errorf("the model saw the denial: %v, the tool list: %v", sawDenied, sawTools)
	}
}

// A repair reply without the analysis gets its calls refused and one
// reminder.
func TestRepairAnalysisReminder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := newFake().add(agent.RolePlanner, calcPlan()).add(agent.RoleTestDesigner, calcSuite()).
		add(agent.RoleWorker,
			calls("", write("go.mod", goMod), write("calc.go", calcBuggy), finish("written")),
			calls("", edit("calc.go", "a - b", "a + b")),
			calls("TestAdd failed because Add subtracts; my last change (calc.go) caused it.", edit("calc.go", "a - b", "a + b")),
			calls("", finish("fixed")),
		).
		add(agent.RoleCritic, failing("TestAdd"))
	rep := run(t, m, nil, e.opts()...)
	if rep.Reason != agent.StopCompleted || rep.Metrics.RepairRounds != 1 {
		t.Fatalf("reason %s (%s), repairs %d", rep.Reason, rep.Detail, rep.Metrics.RepairRounds)
	}
	if len(rep.Analyses) != 1 || !strings.Contains(rep.Analyses[0], "Add subtracts") {
		t.Errorf("analyses %q", rep.Analyses)
	}
	// The refused edit did not run: the second edit found "a - b". The one
	// failure is the Critic's first run_tests.
	if rep.Metrics.ToolFailures != 1 {
		t.Errorf("tool failures %d, want 1 (the first edit must not have run)", rep.Metrics.ToolFailures)
	}
}

// A suspect test leads to a new suite version, not a code change.
func TestSuspectTestRepairsTests(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	wrongTest := strings.Replace(calcTest, "{2, 3, 5}", "{2, 3, 6}", 1)
	m := newFake().add(agent.RolePlanner, calcPlan()).
		add(agent.RoleTestDesigner, suite(map[string]string{"acceptance/calc_test.go": wrongTest}), calcSuite()).
		add(agent.RoleWorker, calls("", write("go.mod", goMod), write("calc.go", calcGood), finish("written"))).
		add(agent.RoleCritic, text(mustJSON(map[string]any{
			"verdict": "suspect_test", "failures": []map[string]string{{"test_id": "TestAdd", "location": "acceptance/calc_test.go:11",
				"expected": "6", "actual": "5", "kind": "assertion"}},
			"suspect_tests": []map[string]string{{"test_id": "TestAdd", "reason": "2 + 3 is 5, not 6: the test contradicts the goal"}},
			"summary":       "The test is wrong.",
		})))
	rep := run(t, m, nil, e.opts()...)
	if rep.Reason != agent.StopCompleted {
		t.Fatalf("reason %s (%s)", rep.Reason, rep.Detail)
	}
	if rep.Metrics.TestRepairs != 1 || rep.Metrics.RepairRounds != 0 || rep.SuiteVersion != 2 {
		t.Errorf("test repairs %d, repair rounds %d, suite version %d; want 1, 0, 2", rep.Metrics.TestRepairs, rep.Metrics.RepairRounds, rep.SuiteVersion)
	}
	if got := readFile(t, filepath.Join(e.ws, "calc.go")); got != calcGood {
		t.Error("calc.go changed")
	}
	if !strings.Contains(readFile(t, filepath.Join(e.runs, "run", agent.TraceFile)), `"suite_version":2`) {
		t.Error("the trace does not show suite version 2")
	}
}

// countArgs are the arguments of the counting tool.
type countArgs struct {
	tools.NoEffects
	N int `json:"n"`
}

// Crash and resume: the context is cancelled after the third tool call;
// Resume finishes the run and no completed call runs twice.
func TestInterruptAndResume(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var invoked atomic.Int64
	seen := map[int]int{}
	counter := tools.New[countArgs]("count", "Counts its calls.", func(_ context.Context, a countArgs) (tools.Result, error) {
		invoked.Add(1)
		seen[a.N]++
		return tools.Result{OK: true, Output: "counted"}, nil
	})
	reg, err := tools.NewRegistry(counter)
	if err != nil {
		t.Fatal(err)
	}
	script := func() *fakeModel {
		return newFake().add(agent.RolePlanner, calcPlan()).add(agent.RoleTestDesigner, calcSuite()).
			add(agent.RoleWorker,
				calls("", call{"count", map[string]int{"n": 1}}, call{"count", map[string]int{"n": 2}}),
				calls("", call{"count", map[string]int{"n": 3}}, call{"count", map[string]int{"n": 4}}, write("go.mod", goMod)),
				calls("", write("calc.go", calcGood), call{"count", map[string]int{"n": 5}}, finish("done")),
			)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	toolCalls := 0
	a, err := agent.New(script(), reg, e.opts(agent.WithObserver(func(ev agent.Event) {
		if ev.Kind == agent.EventToolCall {
			if toolCalls++; toolCalls == 3 {
				cancel()
			}
		}
	}))...)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := a.Run(ctx, "Build package calc.")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Reason != agent.StopInterrupted || rep.Status != "interrupted" {
		t.Fatalf("first session: %s (%s), want interrupted", rep.Reason, rep.Detail)
	}
	if invoked.Load() != 3 {
		t.Fatalf("count ran %d times before the interruption, want 3", invoked.Load())
	}

	// Simulate a crash after the fourth call completed but before its
	// checkpoint: its "begin" and "end" are in calls.jsonl, the state still
	// has it pending. Resume must reuse the recorded result.
	wal, err := os.OpenFile(filepath.Join(e.runs, "run", agent.CallsFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(wal, `{"phase":"begin","key":"2.1","call_id":"x","tool":"count","args":{"n":4},"time":"2026-01-01T00:00:00Z"}`)
	fmt.Fprintln(wal, `{"phase":"end","key":"2.1","call_id":"x","tool":"count","result":{"ok":true,"output":"counted (recorded)","exit_code":0,"duration_ms":0},"time":"2026-01-01T00:00:00Z"}`)
	wal.Close()

	// A fresh model (as after a process restart): Resume restores its cursor.
	rep, err = agent.Resume(context.Background(), filepath.Join(e.runs, "run"), script(), reg, local)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Reason != agent.StopCompleted {
		t.Fatalf("resumed: %s (%s)", rep.Reason, rep.Detail)
	}
	if invoked.Load() != 4 {
		t.Errorf("count ran %d times in all, want 4 (n=4 replayed from the record)", invoked.Load())
	}
	for n, want := range map[int]int{1: 1, 2: 1, 3: 1, 4: 0, 5: 1} {
		if seen[n] != want {
			t.Errorf("count n=%d ran %d times, want %d", n, seen[n], want)
		}
	}
	// 5 counts, 2 writes, finish_step and the Critic's run_tests.
	if rep.Metrics.Replayed != 1 || rep.Metrics.ToolCalls != 9 {
		t.Errorf("replayed %d, tool calls %d; want 1 and 9", rep.Metrics.Replayed, rep.Metrics.ToolCalls)
	}
	if !strings.Contains(readFile(t, filepath.Join(e.runs, "run", agent.HistoryFile)), "counted (recorded)") {
		t.Error("the model did not receive the recorded result")
	}
	if rep.Metrics.Sessions != 2 || rep.Metrics.Roles[agent.RolePlanner].Calls != 1 {
		t.Errorf("sessions %d, planner calls %d; want 2 and 1", rep.Metrics.Sessions, rep.Metrics.Roles[agent.RolePlanner].Calls)
	}
	// Resuming a finished run says so.
	if _, err := agent.Resume(context.Background(), filepath.Join(e.runs, "run"), script(), reg, local); !errors.Is(err, agent.ErrRunFinished) {
		t.Errorf("resume of a finished run: %v, want ErrRunFinished", err)
	}
	// And gives its reason even when the session that finished it died
	// before report.json (a run on Temporal moved after its checkpoint
	// looped on a nil report before).
	os.Remove(filepath.Join(e.runs, "run", "report.json"))
	again, err := agent.Resume(context.Background(), filepath.Join(e.runs, "run"), script(), reg, local)
	if !errors.Is(err, agent.ErrRunFinished) || again == nil || again.Reason != agent.StopCompleted {
		t.Errorf("resume of a finished run without report.json: %+v, %v; want its completed report and ErrRunFinished", again, err)
	}
}

// The offline demo: plan, acceptance tests, two steps, a real failing test,
// a repair with its analysis, and every check green.
func TestDemo(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	model, err := demo.Model()
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(model, nil, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	rep, err := a.Run(context.Background(), demo.Goal())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("demo: %s in %s; tokens %d/%d; model calls %d; tool calls %d; sandbox %s",
		rep.Reason, time.Since(start).Round(time.Millisecond), rep.Metrics.PromptTokens, rep.Metrics.CompletionTokens,
		rep.Metrics.ModelCalls, rep.Metrics.ToolCalls, rep.Metrics.SandboxTime.Round(time.Millisecond))
	if rep.Reason != agent.StopCompleted || rep.Status != "completed" {
		t.Fatalf("demo stopped: %s (%s)\n%s", rep.Reason, rep.Detail, rep.Markdown())
	}
	if testing.Verbose() {
		t.Log(rep.Markdown())
	}
	m := rep.Metrics
	if m.FirstPass || m.RepairRounds != 1 || m.StepsDone != 2 || m.Checks != 2 {
		t.Errorf("first pass %v, repair rounds %d, steps %d, checks %d; want false, 1, 2, 2", m.FirstPass, m.RepairRounds, m.StepsDone, m.Checks)
	}
	if rep.Findings == nil || !rep.Findings.Passed() {
		t.Errorf("last findings %+v, want pass", rep.Findings)
	}
	if len(rep.Analyses) != 1 || !strings.Contains(rep.Analyses[0], "greedy") {
		t.Errorf("analyses %q", rep.Analyses)
	}
	// The project's tests really pass: run them again, outside the agent.
	cmd := exec.Command("go", "test", "./...")
	cmd.Dir = e.ws
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("go test in the demo workspace: %v\n%s", err, out)
	}
}

// The demo through the production path: the real openai-go provider against
// the scripted model served over HTTP on loopback.
func TestDemoOverHTTP(t *testing.T) {
	t.Parallel()
	model, stop, err := demo.Provider()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	e := newEnv(t)
	a, err := agent.New(model, nil, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := a.Run(context.Background(), demo.Goal())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Reason != agent.StopCompleted || rep.Metrics.FirstPass || rep.Metrics.RepairRounds != 1 {
		t.Fatalf("demo over HTTP: %s (%s), first pass %v, repairs %d", rep.Reason, rep.Detail, rep.Metrics.FirstPass, rep.Metrics.RepairRounds)
	}
	if rep.Metrics.ModelCalls < 12 {
		t.Errorf("%d model calls over HTTP, want at least 12 as with the scripted model", rep.Metrics.ModelCalls)
	}
}

// At 80% of the token budget the Worker is told to wrap up; at 100% the
// run stops naming the budget.
func TestWrapUpNote(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := newFake().add(agent.RolePlanner, withUsage(calcPlan(), 8000, 100)).add(agent.RoleTestDesigner, withUsage(calcSuite(), 8000, 100)).
		add(agent.RoleWorker, withUsage(calls("", call{"list_files", map[string]any{}}), 2000, 100))
	// Planner and test designer spend 16200 of 20000 tokens: over 80%. The
	// Worker's first request (about 2700 tokens) fits, and its turn brings
	// the total to 18300; its next request would pass the budget and is
	// not sent.
	rep := run(t, m, nil, e.opts(agent.WithBudgets(agent.Budgets{MaxTokens: 20000}))...)
	if rep.Reason != agent.StopBudgetTokens || !strings.Contains(rep.Detail, "18300 of 20000 spent") || !strings.Contains(rep.Detail, "not sent") {
		t.Fatalf("reason %s (%s), want budget_tokens at 18300 of 20000, the request not sent", rep.Reason, rep.Detail)
	}
	if n := len(m.requestsOf(agent.RoleWorker)); n != 1 {
		t.Errorf("the Worker was asked %d times, want once: the second request was over the budget", n)
	}
	last := m.requests[len(m.requests)-1]
	if last.Agent != agent.RoleWorker || !strings.Contains(last.Messages[len(last.Messages)-1].Content, "Wrap up") {
		t.Errorf("the Worker's request does not end with the wrap-up note: %+v", last.Messages[len(last.Messages)-1])
	}
}

// `trio demo` interrupted (Ctrl-C) and `trio resume`d: the demo over HTTP,
// cancelled after its sixth tool call, resumed with a new provider.
func TestDemoInterruptedAndResumed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	model, stop, err := demo.Provider()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	a, err := agent.New(model, nil, e.opts(agent.WithObserver(func(ev agent.Event) {
		if ev.Kind == agent.EventToolCall {
			if n++; n == 6 {
				cancel()
			}
		}
	}))...)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := a.Run(ctx, demo.Goal())
	stop()
	if err != nil || rep.Reason != agent.StopInterrupted {
		t.Fatalf("first session: %v, %s (%s)", err, rep.Reason, rep.Detail)
	}
	model, stop, err = demo.Provider()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	rep, err = agent.Resume(context.Background(), filepath.Join(e.runs, "run"), model, nil, local)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Reason != agent.StopCompleted || rep.Metrics.RepairRounds != 1 || rep.Metrics.Sessions != 2 {
		t.Fatalf("resumed demo: %s (%s), repairs %d, sessions %d", rep.Reason, rep.Detail, rep.Metrics.RepairRounds, rep.Metrics.Sessions)
	}
}
