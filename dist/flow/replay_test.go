package flow_test

import (
	"testing"
	"time"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/trioagent/trio/dist/flow"
)

// Histories recorded from a Temporal dev server (temporal workflow show
// --output json) by trio worker processes running the demo's script:
// history-move.json, a run whose worker was killed (SIGKILL) after its
// third completed tool call and that finished on the other worker;
// history-ask.json, a run that asked about go test, waited and resumed
// after trio confirm's yes.
var histories = []string{"testdata/history-move.json", "testdata/history-ask.json"}

// TestReplayRecordedHistories: today's workflow code replays the recorded
// histories without a non-determinism error. A change to Run that alters
// the commands it issues must be gated with workflow.GetVersion, or this
// fails.
func TestReplayRecordedHistories(t *testing.T) {
	for _, h := range histories {
		t.Run(h, func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflowWithOptions(flow.Run, workflow.RegisterOptions{Name: flow.RunWorkflow})
			if err := r.ReplayWorkflowHistoryFromJSONFile(nil, h); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestReplayCatchesAnUnversionedChange: a Run that issues other commands
// (here: a session without its placement) fails to replay the recorded
// histories, which is what the test above guards against.
func TestReplayCatchesAnUnversionedChange(t *testing.T) {
	changed := func(ctx workflow.Context, in flow.RunInput) (flow.Result, error) {
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{TaskQueue: flow.HostQueue("a"), StartToCloseTimeout: time.Hour})
		var res flow.SessionResult
		err := workflow.ExecuteActivity(ctx, flow.SessionActivity, flow.SessionInput{RunID: in.RunID, Epoch: 1}).Get(ctx, &res)
		return flow.Result{RunID: in.RunID, Reason: res.Reason}, err
	}
	for _, h := range histories {
		r := worker.NewWorkflowReplayer()
		r.RegisterWorkflowWithOptions(changed, workflow.RegisterOptions{Name: flow.RunWorkflow})
		if err := r.ReplayWorkflowHistoryFromJSONFile(nil, h); err == nil {
			t.Errorf("%s: a changed workflow replayed without an error", h)
		}
	}
}
