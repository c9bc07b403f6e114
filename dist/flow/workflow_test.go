package flow_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/trioagent/trio/dist/flow"
)

// env is a test environment with the run workflow and the activity names
// registered (their bodies come from each test's mocks).
func env(t *testing.T) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	e := s.NewTestWorkflowEnvironment()
	e.RegisterWorkflowWithOptions(flow.Run, workflow.RegisterOptions{Name: flow.RunWorkflow})
	e.RegisterActivityWithOptions(func(context.Context, flow.PlaceInput) (flow.Placement, error) { return flow.Placement{}, nil },
		activity.RegisterOptions{Name: flow.PlaceActivity})
	e.RegisterActivityWithOptions(func(context.Context, flow.SessionInput) (flow.SessionResult, error) {
		return flow.SessionResult{}, nil
	}, activity.RegisterOptions{Name: flow.SessionActivity})
	return e
}

// TestMoveAfterLostHost: the session on host A stops heartbeating (its
// activity fails with a heartbeat timeout); the workflow places the run
// again with a newer epoch, telling the placement to avoid A, and the
// session runs on B, where the run finishes.
func TestMoveAfterLostHost(t *testing.T) {
	e := env(t)
	var places []flow.PlaceInput
	e.OnActivity(flow.PlaceActivity, mock.Anything, mock.Anything).Return(func(_ context.Context, in flow.PlaceInput) (flow.Placement, error) {
		places = append(places, in)
		host := "a"
		if in.Avoid == flow.HostQueue("a") {
			host = "b"
		}
		return flow.Placement{Host: host, Queue: flow.HostQueue(host), Seq: 3 * len(places)}, nil
	})
	var sessions []string
	var epochs []int64
	e.OnActivity(flow.SessionActivity, mock.Anything, mock.Anything).Return(func(ctx context.Context, in flow.SessionInput) (flow.SessionResult, error) {
		q := activity.GetInfo(ctx).TaskQueue
		sessions, epochs = append(sessions, q), append(epochs, in.Epoch)
		if q == flow.HostQueue("a") {
			return flow.SessionResult{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil)
		}
		return flow.SessionResult{Reason: "completed", Seq: 9}, nil
	})
	e.ExecuteWorkflow(flow.RunWorkflow, flow.RunInput{RunID: "r1", HeartbeatTimeout: time.Minute})
	if !e.IsWorkflowCompleted() || e.GetWorkflowError() != nil {
		t.Fatalf("workflow: completed %v, error %v", e.IsWorkflowCompleted(), e.GetWorkflowError())
	}
	var res flow.Result
	if err := e.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.Reason != "completed" || res.Moves != 1 {
		t.Fatalf("result %+v, want completed after one move", res)
	}
	want := []string{flow.HostQueue("a"), flow.HostQueue("b")}
	if len(sessions) != 2 || sessions[0] != want[0] || sessions[1] != want[1] {
		t.Fatalf("sessions ran on %v, want %v", sessions, want)
	}
	if epochs[1] <= epochs[0] {
		t.Fatalf("the session after the move has epoch %d, not newer than %d", epochs[1], epochs[0])
	}
	if len(places) != 2 || places[0].Avoid != "" || places[1].Avoid != flow.HostQueue("a") {
		t.Fatalf("placements %+v: the second should avoid host a", places)
	}
}

// TestConfirmationTimeout: a session that asks ends; nobody answers
// within the policy's timeout; the next session gets the answer no.
func TestConfirmationTimeout(t *testing.T) {
	e := env(t)
	e.OnActivity(flow.PlaceActivity, mock.Anything, mock.Anything).Return(flow.Placement{Host: "a", Queue: flow.HostQueue("a")}, nil)
	var inputs []flow.SessionInput
	e.OnActivity(flow.SessionActivity, mock.Anything, mock.Anything).Return(func(_ context.Context, in flow.SessionInput) (flow.SessionResult, error) {
		inputs = append(inputs, in)
		if len(inputs) == 1 {
			return flow.SessionResult{Ask: &flow.Request{Key: "k1", Tool: "run_command", Command: "rm -rf build"}}, nil
		}
		return flow.SessionResult{Reason: "completed"}, nil
	})
	var during flow.Status
	e.RegisterDelayedCallback(func() {
		v, err := e.QueryWorkflow(flow.StatusQuery)
		if err == nil {
			err = v.Get(&during)
		}
		if err != nil {
			t.Error(err)
		}
	}, time.Minute)
	e.ExecuteWorkflow(flow.RunWorkflow, flow.RunInput{RunID: "r2", ConfirmTimeout: 5 * time.Minute})
	if err := e.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if during.State != "waiting" || during.Pending == nil || during.Pending.Key != "k1" {
		t.Fatalf("status while waiting: %+v", during)
	}
	if len(inputs) != 2 || len(inputs[1].Answers) != 1 {
		t.Fatalf("session inputs %+v, want a second session with one answer", inputs)
	}
	if a := inputs[1].Answers[0]; a.Key != "k1" || a.Answer != "no" || a.By != "timeout" {
		t.Fatalf("answer after the timeout: %+v, want no by timeout", a)
	}
}

// TestConfirmSignal: trio confirm's signal answers the pending request
// before the timeout; the next session gets yes.
func TestConfirmSignal(t *testing.T) {
	e := env(t)
	e.OnActivity(flow.PlaceActivity, mock.Anything, mock.Anything).Return(flow.Placement{Host: "a", Queue: flow.HostQueue("a")}, nil)
	var inputs []flow.SessionInput
	e.OnActivity(flow.SessionActivity, mock.Anything, mock.Anything).Return(func(_ context.Context, in flow.SessionInput) (flow.SessionResult, error) {
		inputs = append(inputs, in)
		if len(inputs) == 1 {
			return flow.SessionResult{Ask: &flow.Request{Key: "k1"}}, nil
		}
		return flow.SessionResult{Reason: "completed"}, nil
	})
	e.RegisterDelayedCallback(func() {
		e.SignalWorkflow(flow.ConfirmSignal, flow.Answer{Key: "stale-key", Answer: "yes"})
		e.SignalWorkflow(flow.ConfirmSignal, flow.Answer{Key: "k1", Answer: "yes", By: "alice"})
	}, time.Minute)
	e.ExecuteWorkflow(flow.RunWorkflow, flow.RunInput{RunID: "r3", ConfirmTimeout: time.Hour})
	if err := e.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(inputs) != 2 || len(inputs[1].Answers) != 1 || inputs[1].Answers[0] != (flow.Answer{Key: "k1", Answer: "yes", By: "alice"}) {
		t.Fatalf("session inputs %+v, want the second with alice's yes only", inputs)
	}
}

// TestInvalidRunFails: a session that fails in a way no other host would
// change ends the workflow instead of moving it.
func TestInvalidRunFails(t *testing.T) {
	e := env(t)
	e.OnActivity(flow.PlaceActivity, mock.Anything, mock.Anything).Return(flow.Placement{Host: "a", Queue: flow.HostQueue("a")}, nil)
	calls := 0
	e.OnActivity(flow.SessionActivity, mock.Anything, mock.Anything).Return(func(context.Context, flow.SessionInput) (flow.SessionResult, error) {
		calls++
		return flow.SessionResult{}, temporal.NewNonRetryableApplicationError("damaged state.json", "InvalidRun", errors.New("x"))
	})
	e.ExecuteWorkflow(flow.RunWorkflow, flow.RunInput{RunID: "r4"})
	if e.GetWorkflowError() == nil || calls != 1 {
		t.Fatalf("workflow error %v after %d sessions, want an error after one", e.GetWorkflowError(), calls)
	}
}

// TestDuplicateSubmission: a second submission of a run (same workflow
// id) starts nothing, while the first is running and after it ended; the
// run's session ran once.
func TestDuplicateSubmission(t *testing.T) {
	e := env(t)
	parent := func(ctx workflow.Context) ([]string, error) {
		var outcomes []string
		for range 3 {
			cctx := workflow.WithChildOptions(ctx, flow.ChildOptions("task-3f2a"))
			var res flow.Result
			err := workflow.ExecuteChildWorkflow(cctx, flow.RunWorkflow, flow.RunInput{RunID: "task-3f2a"}).Get(ctx, &res)
			var dup *temporal.ChildWorkflowExecutionAlreadyStartedError
			var started *serviceerror.WorkflowExecutionAlreadyStarted // as the test server says it
			switch {
			case errors.As(err, &dup), errors.As(err, &started):
				outcomes = append(outcomes, "duplicate")
			case err != nil:
				return nil, err
			default:
				outcomes = append(outcomes, res.Reason)
			}
		}
		return outcomes, nil
	}
	e.RegisterWorkflowWithOptions(parent, workflow.RegisterOptions{Name: "parent"})
	e.OnActivity(flow.PlaceActivity, mock.Anything, mock.Anything).Return(flow.Placement{Host: "a", Queue: flow.HostQueue("a")}, nil)
	sessions := 0
	e.OnActivity(flow.SessionActivity, mock.Anything, mock.Anything).Return(func(context.Context, flow.SessionInput) (flow.SessionResult, error) {
		sessions++
		return flow.SessionResult{Reason: "completed"}, nil
	})
	e.ExecuteWorkflow("parent")
	var outcomes []string
	if err := e.GetWorkflowResult(&outcomes); err != nil {
		t.Fatal(err)
	}
	if want := []string{"completed", "duplicate", "duplicate"}; len(outcomes) != 3 || outcomes[0] != want[0] || outcomes[1] != want[1] || outcomes[2] != want[2] {
		t.Fatalf("submissions: %v, want %v", outcomes, want)
	}
	if sessions != 1 {
		t.Fatalf("%d sessions ran, want 1", sessions)
	}
	if o := flow.StartOptions("r"); o.ID != "r" || o.WorkflowIDReusePolicy != enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE ||
		o.WorkflowIDConflictPolicy != enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL || !o.WorkflowExecutionErrorWhenAlreadyStarted {
		t.Fatalf("StartOptions %+v: a client submission would not be refused the same way", o)
	}
}
