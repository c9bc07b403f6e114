package agent_test

import (
	"strings"
	"testing"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/llm"
)

func revisedSteps(steps ...map[string]any) llm.Response {
	return text(mustJSON(map[string]any{"reason": "the repairs kept the subtraction; rewrite Add from the goal", "steps": steps}))
}

var rewriteAdd = map[string]any{"title": "rewrite Add", "description": "Rewrite calc.go so that Add returns a + b.",
	"files": []string{"calc.go"}, "expected": "Add adds", "acceptance": "TestAdd passes"}

// stuckRun fails TestAdd, repairs nothing, and fails it again: the same
// failure twice in a row.
func stuckRun() *fakeModel {
	return newFake().
		add(agent.RolePlanner, calcPlan(), revisedSteps(rewriteAdd)).
		add(agent.RoleTestDesigner, calcSuite()).
		add(agent.RoleWorker,
			calls("", write("go.mod", goMod), write("calc.go", calcBuggy), finish("calc written")),
			calls("What failed: TestAdd. Likely cause: the test's inputs. My last change did not cause it.", finish("nothing changed")),
			calls("", write("calc.go", calcGood), finish("Add rewritten")),
		).
		add(agent.RoleCritic, failing("TestAdd"), failing("TestAdd"))
}

func TestSameFailureReplansAndCompletes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := stuckRun()
	var events []agent.Event
	rep := run(t, m, nil, e.opts(agent.WithReplan(true), agent.WithObserver(func(ev agent.Event) { events = append(events, ev) }))...)
	if rep.Reason != agent.StopCompleted {
		t.Fatalf("reason %s (%s), want completed after the re-plan", rep.Reason, rep.Detail)
	}
	if len(rep.Plan.Steps) != 2 || rep.Plan.Steps[1].Title != "rewrite Add" || rep.Plan.Steps[1].ID != 2 || rep.Metrics.StepsDone != 2 {
		t.Errorf("plan %+v, %d steps done; want the revised step appended and built", rep.Plan.Steps, rep.Metrics.StepsDone)
	}
	if rep.Metrics.Checks != 3 || rep.Metrics.RepairRounds != 1 {
		t.Errorf("checks %d repair rounds %d, want 3 and 1", rep.Metrics.Checks, rep.Metrics.RepairRounds)
	}
	reqs := m.requestsOf(agent.RolePlanner)
	if len(reqs) != 2 || reqs[1].Output == nil || reqs[1].Output.Name != "revised_steps" {
		t.Fatalf("planner requests %d, want the plan and one revision", len(reqs))
	}
	msg := reqs[1].Messages[1].Content
	for _, want := range []string{"same_failure: the same failure", "[assertion] TestAdd", "Repair analysis 1: What failed: TestAdd", "Step note: calc written"} {
		if !strings.Contains(msg, want) {
			t.Errorf("revision request lacks %q:\n%s", want, msg)
		}
	}
	found := false
	for _, ev := range events {
		found = found || (ev.Kind == agent.EventPlanReady && strings.Contains(ev.Message, "revised plan after same_failure: 1 step added"))
	}
	if !found {
		t.Error("no plan_ready event for the revised plan")
	}
}

func TestReplanOnlyOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := newFake().
		add(agent.RolePlanner, calcPlan(), revisedSteps(rewriteAdd)).
		add(agent.RoleTestDesigner, calcSuite()).
		add(agent.RoleWorker,
			calls("", write("go.mod", goMod), write("calc.go", calcBuggy), finish("calc written")),
			calls("What failed: TestAdd. Likely cause: unknown. My last change did not cause it.", finish("nothing changed")),
			calls("", finish("did not rewrite")),
		).
		add(agent.RoleCritic, failing("TestAdd"), failing("TestAdd"), failing("TestAdd"))
	rep := run(t, m, nil, e.opts(agent.WithReplan(true))...)
	if rep.Reason != agent.StopSameFailure || len(m.requestsOf(agent.RolePlanner)) != 2 {
		t.Fatalf("reason %s, %d planner calls; want same_failure after exactly one re-plan", rep.Reason, len(m.requestsOf(agent.RolePlanner)))
	}
	// Without WithReplan the first same_failure stops the run.
	e = newEnv(t)
	m = stuckRun()
	if rep := run(t, m, nil, e.opts()...); rep.Reason != agent.StopSameFailure || len(m.requestsOf(agent.RolePlanner)) != 1 {
		t.Fatalf("without re-plan: reason %s, want same_failure and no revision", rep.Reason)
	}
}

func TestErrorsIncreasingStops(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	fails := func(n int) llm.Response {
		var fs []map[string]string
		for i := range n {
			fs = append(fs, map[string]string{"test_id": "TestAdd/" + string(rune('a'+i)), "location": "acceptance/calc_test.go:12",
				"expected": "5", "actual": "-1", "kind": "assertion"})
		}
		return text(mustJSON(map[string]any{"verdict": "fail", "failures": fs, "suspect_tests": []any{}, "summary": "worse"}))
	}
	bad := []string{calcBuggy, "// Package calc adds.\npackage calc\n\n// Add returns a plus b.\nfunc Add(a, b int) int { return a * b }\n",
		"// Package calc adds.\npackage calc\n\n// Add returns a plus b.\nfunc Add(a, b int) int { return 7 }\n"}
	m := newFake().
		add(agent.RolePlanner, calcPlan()).
		add(agent.RoleTestDesigner, calcSuite()).
		add(agent.RoleWorker,
			calls("", write("go.mod", goMod), write("calc.go", bad[0]), finish("calc written")),
			calls("What failed: TestAdd. Likely cause: subtraction. My last change caused it.", write("calc.go", bad[1]), finish("tried *")),
			calls("What failed: TestAdd. Likely cause: multiplication. My last change caused it.", write("calc.go", bad[2]), finish("tried 7")),
		).
		add(agent.RoleCritic, fails(1), fails(2), fails(3))
	rep := run(t, m, nil, e.opts(agent.WithBudgets(agent.Budgets{MaxRepairRounds: 5}))...)
	if rep.Reason != agent.StopErrorsIncreasing || !strings.Contains(rep.Detail, "(1, 2, 3)") || rep.Metrics.Checks != 3 {
		t.Fatalf("reason %s (%s) after %d checks, want errors_increasing (1, 2, 3) after 3", rep.Reason, rep.Detail, rep.Metrics.Checks)
	}
}
