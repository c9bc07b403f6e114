package flow

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Defaults of RunInput.
const (
	defaultHeartbeat = time.Minute
	defaultMaxMoves  = 10
	// placeTimeout bounds a placement (a restore) on one host.
	placeTimeout = 30 * time.Minute
	// sessionStart bounds the wait for a session to start on the host it
	// was placed on: a host that died after its placement loses the run.
	sessionStart = 5 * time.Minute
	// sessionMax bounds one session (a run that runs longer moves on).
	sessionMax = 24 * time.Hour
	// placeWait bounds the attempts to place a run (hosts full, a store
	// out of reach).
	placeWait = 24 * time.Hour
)

// Run is the workflow of one run: place, run a session, move when the
// session is lost, wait for a person when it asks, until the run ends.
// Its code is versioned with workflow.GetVersion where a change alters
// the commands it issues, so that histories of running workflows replay.
func Run(ctx workflow.Context, in RunInput) (Result, error) {
	if in.HeartbeatTimeout <= 0 {
		in.HeartbeatTimeout = defaultHeartbeat
	}
	if in.MaxMoves <= 0 {
		in.MaxMoves = defaultMaxMoves
	}
	log := workflow.GetLogger(ctx)
	st := Status{RunID: in.RunID, State: "placing", Since: workflow.Now(ctx)}
	if err := workflow.SetQueryHandler(ctx, StatusQuery, func() (Status, error) { return st, nil }); err != nil {
		return Result{}, err
	}
	confirms := workflow.GetSignalChannel(ctx, ConfirmSignal)
	// Version 1 prefers another host after a lost session.
	avoidLost := workflow.GetVersion(ctx, "avoid-lost-host", workflow.DefaultVersion, 1) >= 1
	avoid := ""
	for {
		st.Epoch++
		st.State, st.Host, st.Since = "placing", "", workflow.Now(ctx)
		// A placement is retried while every host is full (an eval's
		// runs wait for free session slots), for a day at most.
		pctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			TaskQueue:              SharedQueue,
			StartToCloseTimeout:    placeTimeout,
			ScheduleToCloseTimeout: placeWait,
			RetryPolicy:            &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 30 * time.Second},
		})
		var pl Placement
		pin := PlaceInput{RunID: in.RunID, Epoch: st.Epoch}
		if avoidLost {
			pin.Avoid = avoid
		}
		if err := workflow.ExecuteActivity(pctx, PlaceActivity, pin).Get(ctx, &pl); err != nil {
			st.State = "failed"
			return Result{}, fmt.Errorf("place run %s: %w", in.RunID, err)
		}
		st.State, st.Host, st.Since = "running", pl.Host, workflow.Now(ctx)
		log.Info("session placed", "run", in.RunID, "host", pl.Host, "epoch", st.Epoch, "seq", pl.Seq)
		sctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			TaskQueue:              pl.Queue,
			ScheduleToStartTimeout: sessionStart,
			StartToCloseTimeout:    sessionMax,
			HeartbeatTimeout:       in.HeartbeatTimeout,
			// A session is never retried with its epoch: a lost one is
			// placed again, with a new epoch.
			RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
			WaitForCancellation: false,
		})
		var res SessionResult
		err := workflow.ExecuteActivity(sctx, SessionActivity, SessionInput{RunID: in.RunID, Epoch: st.Epoch, Answers: st.Answers}).Get(ctx, &res)
		switch {
		case err != nil && isPermanent(err):
			st.State = "failed"
			return Result{}, fmt.Errorf("run %s on %s: %w", in.RunID, pl.Host, err)
		case err != nil:
			st.Moves++
			st.Lost = append(st.Lost, pl.Host)
			avoid = pl.Queue
			log.Warn("session lost, moving the run", "run", in.RunID, "host", pl.Host, "epoch", st.Epoch, "error", err.Error())
			if st.Moves > in.MaxMoves {
				st.State = "failed"
				return Result{}, fmt.Errorf("run %s: %d sessions lost, the last on %s: %w", in.RunID, st.Moves, pl.Host, err)
			}
			continue
		case res.Ask != nil:
			// The session used the answers it was given (their calls are
			// in its log now); "always" holds for the rest of the run.
			avoid, st.Answers = "", always(st.Answers)
			st.State, st.Pending, st.Since = "waiting", res.Ask, workflow.Now(ctx)
			st.Answers = append(st.Answers, waitAnswer(ctx, confirms, *res.Ask, in.ConfirmTimeout))
			st.Pending = nil
			continue
		}
		st.State = "finished"
		return Result{RunID: in.RunID, Reason: res.Reason, Seq: res.Seq, Moves: st.Moves}, nil
	}
}

// waitAnswer waits for the answer to req: a confirm signal with its key,
// for timeout at most; no answer in time (or a timeout of zero: nobody
// can answer) is no.
func waitAnswer(ctx workflow.Context, confirms workflow.ReceiveChannel, req Request, timeout time.Duration) Answer {
	no := Answer{Key: req.Key, Answer: "no", By: "timeout"}
	if timeout <= 0 {
		return no
	}
	tctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	timer := workflow.NewTimer(tctx, timeout)
	for {
		var got *Answer
		timedOut := false
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(confirms, func(c workflow.ReceiveChannel, _ bool) {
			var a Answer
			c.Receive(ctx, &a)
			got = &a
		})
		sel.AddFuture(timer, func(workflow.Future) { timedOut = true })
		sel.Select(ctx)
		if timedOut {
			return no
		}
		// An answer to an earlier request (sent late) is dropped; an
		// empty key answers whatever is pending.
		if got.Key == req.Key || got.Key == "" {
			got.Key = req.Key
			if got.Answer != "yes" && got.Answer != "always" {
				got.Answer = "no"
			}
			return *got
		}
	}
}

// always keeps the answers that hold for the rest of the run.
func always(as []Answer) []Answer {
	var out []Answer
	for _, a := range as {
		if a.Answer == "always" {
			out = append(out, a)
		}
	}
	return out
}

// Permanent error types: a session that cannot go on anywhere.
const (
	errStale   = "StaleEpoch"
	errInvalid = "InvalidRun"
)

// isPermanent says the session failed in a way another host would not
// change (a damaged run, a bad configuration); a stale epoch is not: the
// workflow moves on with a newer one.
func isPermanent(err error) bool {
	var ae *temporal.ApplicationError
	return errors.As(err, &ae) && ae.Type() == errInvalid
}
