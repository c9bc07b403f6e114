package flow_test

import (
	"errors"
	"slices"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/trioagent/trio/dist/flow"
)

// TestEvalDuplicateSubmission: an eval's fan-out starts one child run per
// task and sample; a second submission of the same eval, after the first
// ended, starts none of them again (each is attached to); a submission
// with one more task starts only that one. A run that fails is recorded,
// not the eval's failure. Each run's workflow ran once.
func TestEvalDuplicateSubmission(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	e := s.NewTestWorkflowEnvironment()
	runs := map[string]int{}
	e.RegisterWorkflowWithOptions(func(_ workflow.Context, in flow.RunInput) (flow.Result, error) {
		runs[in.RunID]++
		if in.RunID == "bad" {
			return flow.Result{}, errors.New("11 sessions lost")
		}
		return flow.Result{RunID: in.RunID, Reason: "completed"}, nil
	}, workflow.RegisterOptions{Name: flow.RunWorkflow})
	e.RegisterWorkflowWithOptions(flow.Eval, workflow.RegisterOptions{Name: flow.EvalWorkflow})
	submissions := func(ctx workflow.Context) ([]flow.EvalResult, error) {
		var out []flow.EvalResult
		for i, ids := range [][]string{{"a", "b", "bad"}, {"a", "b", "bad"}, {"a", "b", "c"}} {
			in := flow.EvalInput{}
			for _, id := range ids {
				in.Runs = append(in.Runs, flow.RunInput{RunID: id})
			}
			in.EvalID = flow.EvalID(ids)
			// The SDK's test server refuses a child id that ran before only
			// under REJECT_DUPLICATE: the second fan-out is a new one.
			cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: in.EvalID + "-" + string(rune('0'+i))})
			var res flow.EvalResult
			if err := workflow.ExecuteChildWorkflow(cctx, flow.EvalWorkflow, in).Get(ctx, &res); err != nil {
				return nil, err
			}
			out = append(out, res)
		}
		return out, nil
	}
	e.RegisterWorkflowWithOptions(submissions, workflow.RegisterOptions{Name: "submissions"})
	e.ExecuteWorkflow("submissions")
	var got []flow.EvalResult
	if err := e.GetWorkflowResult(&got); err != nil {
		t.Fatal(err)
	}
	want := []flow.EvalResult{
		{Started: []string{"a", "b", "bad"}, Failed: []string{"bad"}},
		{Attached: []string{"a", "b", "bad"}},
		{Started: []string{"c"}, Attached: []string{"a", "b"}},
	}
	for i := range want {
		if !slices.Equal(got[i].Started, want[i].Started) || !slices.Equal(got[i].Attached, want[i].Attached) || !slices.Equal(got[i].Failed, want[i].Failed) {
			t.Errorf("submission %d: %+v, want %+v", i+1, got[i], want[i])
		}
	}
	for id, n := range runs {
		if n != 1 {
			t.Errorf("run %s ran %d times", id, n)
		}
	}
	if len(runs) != 4 {
		t.Errorf("runs %v, want a, b, bad and c", runs)
	}
	if o := flow.ChildOptions("r"); o.WorkflowIDReusePolicy != enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE ||
		o.ParentClosePolicy != enumspb.PARENT_CLOSE_POLICY_ABANDON {
		t.Errorf("ChildOptions %+v: a run must not start twice nor die with its fan-out", o)
	}
}

// TestEvalRunID: a task's run id is the same for the same task content,
// sample and configuration, and differs when any of them changes.
func TestEvalRunID(t *testing.T) {
	t.Parallel()
	base := flow.EvalRunID("py-roman", "h1", "c1", 1)
	if again := flow.EvalRunID("py-roman", "h1", "c1", 1); again != base {
		t.Fatalf("%s then %s for the same task", base, again)
	}
	for _, other := range []string{
		flow.EvalRunID("py-roman", "h2", "c1", 1),
		flow.EvalRunID("py-roman", "h1", "c2", 1),
		flow.EvalRunID("py-roman", "h1", "c1", 2),
		flow.EvalRunID("py-rpn", "h1", "c1", 1),
	} {
		if other == base {
			t.Errorf("%s: the same id for another task, sample or configuration", other)
		}
	}
}
