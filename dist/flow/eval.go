package flow

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// EvalWorkflow is the workflow type of an eval's fan-out.
const EvalWorkflow = "trio.Eval"

// EvalInput starts an eval's fan-out: one child run workflow per task and
// sample. Each run's goal and Spec wait in the store under its id.
type EvalInput struct {
	EvalID string     `json:"eval_id"`
	Runs   []RunInput `json:"runs"`
}

// EvalResult says which runs this fan-out started and which it found
// started by an earlier submission (running or ended: their results are
// those runs' own); Failed are the runs it started that failed.
type EvalResult struct {
	Started  []string `json:"started,omitempty"`
	Attached []string `json:"attached,omitempty"`
	Failed   []string `json:"failed,omitempty"`
}

// EvalRunID is the run (and child workflow) id of a task's sample in an
// eval: derived from the task's id and content hash, the sample and the
// eval's configuration hash, so that a repeated submission of the same
// task under the same configuration names the same run, and a changed
// task or configuration a new one.
func EvalRunID(task, taskHash, config string, sample int) string {
	h := sha256.Sum256([]byte(strings.Join([]string{task, taskHash, config, fmt.Sprint(sample)}, "\x00")))
	return fmt.Sprintf("eval-%s-%d-%s", task, sample, hex.EncodeToString(h[:6]))
}

// EvalID is the id of the fan-out of runs: a second submission of the
// same runs finds the first.
func EvalID(runs []string) string {
	h := sha256.Sum256([]byte(strings.Join(runs, "\x00")))
	return "eval-" + hex.EncodeToString(h[:8])
}

// Eval is the workflow of an eval's fan-out: it starts a child run
// workflow per run (ChildOptions: a run id that exists, running or ended,
// is not started again but attached to), and waits for those it started.
// Children outlive a cancelled or terminated fan-out, so that a later
// submission attaches to them.
func Eval(ctx workflow.Context, in EvalInput) (EvalResult, error) {
	var res EvalResult
	type child struct {
		id string
		f  workflow.ChildWorkflowFuture
	}
	children := make([]child, 0, len(in.Runs))
	for _, r := range in.Runs {
		cctx := workflow.WithChildOptions(ctx, ChildOptions(r.RunID))
		children = append(children, child{r.RunID, workflow.ExecuteChildWorkflow(cctx, RunWorkflow, r)})
	}
	var started []child
	for _, c := range children {
		err := c.f.GetChildWorkflowExecution().Get(ctx, nil)
		switch {
		case alreadyStarted(err):
			res.Attached = append(res.Attached, c.id)
		case err != nil:
			return res, fmt.Errorf("eval %s: start run %s: %w", in.EvalID, c.id, err)
		default:
			res.Started = append(res.Started, c.id)
			started = append(started, c)
		}
	}
	log := workflow.GetLogger(ctx)
	log.Info("eval fanned out", "eval", in.EvalID, "started", len(res.Started), "attached", len(res.Attached))
	for _, c := range started {
		var r Result
		if err := c.f.Get(ctx, &r); err != nil {
			// A run that failed is that run's result, not the eval's.
			log.Warn("eval run failed", "eval", in.EvalID, "run", c.id, "error", err.Error())
			res.Failed = append(res.Failed, c.id)
		}
	}
	return res, nil
}

// alreadyStarted says a child's start found its id taken (the server says
// so with ChildWorkflowExecutionAlreadyStartedError, the SDK's test
// server with WorkflowExecutionAlreadyStarted).
func alreadyStarted(err error) bool {
	var dup *temporal.ChildWorkflowExecutionAlreadyStartedError
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	return errors.As(err, &dup) || errors.As(err, &started)
}

// SubmitEval starts the fan-out in.EvalID, or finds the one a former
// submission started: started says which.
func SubmitEval(ctx context.Context, c client.Client, in EvalInput) (run client.WorkflowRun, started bool, err error) {
	run, err = c.ExecuteWorkflow(ctx, StartOptions(in.EvalID), EvalWorkflow, in)
	var dup *serviceerror.WorkflowExecutionAlreadyStarted
	switch {
	case errors.As(err, &dup):
		return c.GetWorkflow(ctx, in.EvalID, ""), false, nil
	case err != nil:
		return nil, false, fmt.Errorf("start eval %s: %w", in.EvalID, err)
	}
	return run, true, nil
}

// WaitRun waits for the run's workflow to end and returns its result. A
// run the fan-out evalID has not started yet is waited for while the
// fan-out runs.
func WaitRun(ctx context.Context, c client.Client, evalID, runID string) (Result, error) {
	var r Result
	for {
		err := c.GetWorkflow(ctx, runID, "").Get(ctx, &r)
		var nf *serviceerror.NotFound
		if !errors.As(err, &nf) {
			if err != nil {
				return r, fmt.Errorf("run %s: %w", runID, err)
			}
			return r, nil
		}
		d, derr := c.DescribeWorkflowExecution(ctx, evalID, "")
		if derr != nil {
			return r, fmt.Errorf("run %s: %w (fan-out %s: %v)", runID, err, evalID, derr)
		}
		if d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			return r, fmt.Errorf("run %s: %w (its fan-out %s ended)", runID, err, evalID)
		}
		select {
		case <-ctx.Done():
			return r, context.Cause(ctx)
		case <-time.After(time.Second): // the fan-out starts its children in a moment
		}
	}
}
