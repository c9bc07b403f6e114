package flow

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"
)

// StartOptions are the options a run's workflow is started with: its id is
// the run id, and a second submission of the same run, running or ended,
// is refused (WorkflowExecutionAlreadyStarted) rather than run twice.
func StartOptions(runID string) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:                       runID,
		TaskQueue:                SharedQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		// Without it the SDK answers a duplicate with the existing run
		// and no error: Submit could not tell it started nothing.
		WorkflowExecutionErrorWhenAlreadyStarted: true,
	}
}

// ChildOptions are StartOptions for a run started by another workflow (an
// eval's fan-out, with ids derived from the task's hash, the sample and
// the configuration, EvalRunID): a repeated submission does not run the
// task twice. The run outlives its parent (a fan-out cancelled or
// terminated), so that a later submission finds it.
func ChildOptions(runID string) workflow.ChildWorkflowOptions {
	return workflow.ChildWorkflowOptions{
		WorkflowID:            runID,
		TaskQueue:             SharedQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_ABANDON,
	}
}

// Submit starts the workflow of run in.RunID, or finds the one a former
// submission started: started says which.
func Submit(ctx context.Context, c client.Client, in RunInput) (run client.WorkflowRun, started bool, err error) {
	run, err = c.ExecuteWorkflow(ctx, StartOptions(in.RunID), RunWorkflow, in)
	var dup *serviceerror.WorkflowExecutionAlreadyStarted
	switch {
	case errors.As(err, &dup):
		return c.GetWorkflow(ctx, in.RunID, ""), false, nil
	case err != nil:
		return nil, false, fmt.Errorf("start run %s: %w", in.RunID, err)
	}
	return run, true, nil
}

// Confirm sends a person's answer to the run's pending request (key ""
// answers whatever is pending).
func Confirm(ctx context.Context, c client.Client, runID string, a Answer) error {
	if err := c.SignalWorkflow(ctx, runID, "", ConfirmSignal, a); err != nil {
		return fmt.Errorf("confirm run %s: %w", runID, err)
	}
	return nil
}

// QueryStatus is the run's status as its workflow tells it.
func QueryStatus(ctx context.Context, c client.Client, runID string) (Status, error) {
	var st Status
	v, err := c.QueryWorkflow(ctx, runID, "", StatusQuery)
	if err == nil {
		err = v.Get(&st)
	}
	if err != nil {
		return st, fmt.Errorf("status of run %s: %w", runID, err)
	}
	return st, nil
}
