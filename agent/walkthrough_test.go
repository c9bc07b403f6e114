package agent_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/tools"
)

// A tool_call event says what the call acted on (its command or path), for
// the Worker's calls and the Critic's alike.
func TestToolCallTargets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var events []agent.Event
	rep := run(t, buggyThenFixed(), nil, e.opts(agent.WithObserver(func(ev agent.Event) { events = append(events, ev) }))...)
	if rep.Reason != agent.StopCompleted {
		t.Fatalf("reason %s (%s)", rep.Reason, rep.Detail)
	}
	type key struct{ role, tool, target string }
	got := map[key]bool{}
	for _, ev := range events {
		if ev.Kind == agent.EventToolCall {
			got[key{ev.Role, ev.Tool, ev.Target}] = true
		}
	}
	for _, want := range []key{
		{agent.RoleWorker, "write_file", "go.mod"},
		{agent.RoleWorker, "write_file", "calc.go"},
		{agent.RoleWorker, "edit_file", "calc.go"},
		{agent.RoleWorker, "run_tests", "go test -json ./..."}, // the command as run,
		{agent.RoleCritic, "run_tests", "go test -json ./..."}, // the command as run,
	} {
		if !got[want] {
			t.Errorf("no tool_call event %+v; got %v", want, got)
		}
	}
}

// Counts in messages agree with their nouns: a one-step plan is "1 step",
// one failure is "1 failure".
func TestMessagesSingular(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var events []agent.Event
	run(t, buggyThenFixed(), nil, e.opts(agent.WithObserver(func(ev agent.Event) { events = append(events, ev) }))...)
	checked := map[agent.EventKind]bool{}
	for _, ev := range events {
		switch ev.Kind {
		case agent.EventPlanReady:
			checked[ev.Kind] = true
			if !strings.HasPrefix(ev.Message, "1 step;") {
				t.Errorf("plan_ready %q, want it to start with %q", ev.Message, "1 step;")
			}
		case agent.EventCriticVerdict:
			if ev.Verdict == "fail" {
				checked[ev.Kind] = true
				if !strings.Contains(ev.Message, ", 1 failure") || strings.Contains(ev.Message, "failure(s)") {
					t.Errorf("critic_verdict %q, want %q", ev.Message, ", 1 failure")
				}
			}
		}
	}
	if len(checked) != 2 {
		t.Errorf("events checked %v, want plan_ready and a failing critic_verdict", checked)
	}
}

// The model_error explanation does not guess at a cause (a script that ran
// out) that a real endpoint cannot have; the detail says what failed.
func TestModelErrorExplanationHonest(t *testing.T) {
	t.Parallel()
	if s := agent.StopModelError.Explain(); strings.Contains(s, "script") {
		t.Errorf("explanation %q guesses at a script", s)
	}
}

// waitArgs are the arguments of the tool that, while blocking, is cut off.
type waitArgs struct{ tools.NoEffects }

// A tool call cut off by cancellation (Ctrl-C) is not a tool failure: it
// runs again on resume, and the resumed run counts the same tool calls and
// failures as a run never interrupted.
func TestInterruptedCallNotAFailure(t *testing.T) {
	t.Parallel()
	var block atomic.Bool
	started := make(chan struct{}, 1)
	wait := tools.New[waitArgs]("wait", "Waits.", func(ctx context.Context, _ waitArgs) (tools.Result, error) {
		if block.Load() {
			started <- struct{}{}
			<-ctx.Done()
			return tools.Result{}, ctx.Err()
		}
		return tools.Result{OK: true, Output: "waited"}, nil
	})
	reg, err := tools.NewRegistry(wait)
	if err != nil {
		t.Fatal(err)
	}
	script := func() *fakeModel {
		return newFake().add(agent.RolePlanner, calcPlan()).add(agent.RoleTestDesigner, calcSuite()).
			add(agent.RoleWorker,
				// One call that fails on its own (the model's failure) and the one cut off.
				calls("", write("go.mod", goMod), edit("calc.go", "x", "y"), write("calc.go", calcGood), call{"wait", map[string]any{}}, finish("done")))
	}

	ref := newEnv(t)
	want := run(t, script(), reg, ref.opts()...)
	if want.Reason != agent.StopCompleted {
		t.Fatalf("uninterrupted run: %s (%s)", want.Reason, want.Detail)
	}

	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-started; cancel() }()
	block.Store(true)
	a, err := agent.New(script(), reg, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := a.Run(ctx, "Build package calc.")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Reason != agent.StopInterrupted {
		t.Fatalf("first session: %s (%s), want interrupted", rep.Reason, rep.Detail)
	}
	if f := rep.Metrics.ToolFailures; f != 1 {
		t.Errorf("tool failures when interrupted %d, want 1 (the edit; the cut-off call is not one)", f)
	}
	block.Store(false)
	got, err := agent.Resume(context.Background(), filepath.Join(e.runs, "run"), script(), reg, local)
	if err != nil {
		t.Fatal(err)
	}
	if got.Reason != agent.StopCompleted {
		t.Fatalf("resumed run: %s (%s)", got.Reason, got.Detail)
	}
	if g, w := got.Metrics, want.Metrics; g.ToolFailures != w.ToolFailures || g.ToolCalls != w.ToolCalls {
		t.Errorf("interrupted and resumed: %d tool calls, %d failed; uninterrupted: %d, %d", g.ToolCalls, g.ToolFailures, w.ToolCalls, w.ToolFailures)
	}
}

// Every audit.jsonl record names the role that made the call, so that the
// Critic's calls can be told from the Worker's.
func TestAuditRecordsRole(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	run(t, buggyThenFixed(), nil, e.opts()...)
	f, err := os.Open(filepath.Join(e.runs, "run", agent.AuditFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	roles := map[string]map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var rec struct{ Role, Tool string }
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("audit line %s: %v", sc.Bytes(), err)
		}
		if rec.Role == "" {
			t.Errorf("audit record without a role: %s", sc.Bytes())
		}
		if roles[rec.Role] == nil {
			roles[rec.Role] = map[string]bool{}
		}
		roles[rec.Role][rec.Tool] = true
	}
	if !roles[agent.RoleWorker]["write_file"] || !roles[agent.RoleCritic]["run_tests"] || roles[agent.RoleCritic]["write_file"] {
		t.Errorf("tools by role %v, want the Worker's write_file and the Critic's run_tests", roles)
	}
}
