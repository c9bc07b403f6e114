package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/trioagent/trio/dist"
	"github.com/trioagent/trio/dist/flow"
	"github.com/trioagent/trio/dist/store"
	"github.com/trioagent/trio/eval"
	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/policy"
)

// temporalEval are trio eval's --temporal flags.
type temporalEval struct {
	on bool
	tf temporalFlags
	hb time.Duration
}

func (t *temporalEval) add(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&t.on, "temporal", false, "run the tasks on Temporal, one child workflow per task and sample, on trio worker processes; judge them here (see trio worker)")
	cmd.Flags().DurationVar(&t.hb, "heartbeat-timeout", time.Minute, "with --temporal: how long a session may be silent before its run moves to another worker")
	t.tf.add(cmd)
}

// noModels is the ModelFunc of an eval whose runs happen on workers: no
// run asks this process for a model.
func noModels(context.Context, eval.Task) (llm.Model, func(), error) {
	return nil, nil, errors.New("trio eval --temporal: the runs' models are the workers'")
}

// remote connects trio eval --temporal to Temporal and the store. The
// caller closes the client.
func (t *temporalEval) remote(io stdio, model string, pol *policy.Policy, polPath string) (*temporalRemote, error) {
	st, err := t.tf.openStore()
	if err != nil {
		return nil, err
	}
	r := &temporalRemote{st: st, io: io, hb: t.hb, replay: model == evalReplay, unattended: pol.Unattended()}
	if polPath == "" {
		r.builtinPolicy = true
	} else {
		b, err := os.ReadFile(polPath)
		if err != nil {
			return nil, configError(err)
		}
		r.policy, r.policyName = string(b), polPath
	}
	if r.c, err = t.tf.dial(); err != nil {
		return nil, err
	}
	return r, nil
}

// temporalRemote is an eval.Remote on Temporal: Start puts each run's
// goal and spec (replay, seed, budgets, the eval's policy) in the store
// and submits the fan-out workflow; Wait waits for a run's workflow and
// restores its last commit from the store into the sample's folder,
// where the eval judges it. The hidden tests never leave this host.
type temporalRemote struct {
	c             client.Client
	st            store.Store
	io            stdio
	hb            time.Duration
	replay        bool
	builtinPolicy bool
	policy        string
	policyName    string
	unattended    bool
	config        string
	evalID        string
}

func (r *temporalRemote) runID(run eval.RemoteRun) string {
	return flow.EvalRunID(run.Task.ID, run.Task.Hash, r.config, run.Sample)
}

func (r *temporalRemote) Start(ctx context.Context, config string, runs []eval.RemoteRun) error {
	r.config = config
	in := flow.EvalInput{}
	var ids []string
	for _, run := range runs {
		t, id := run.Task, r.runID(run)
		spec := flow.Spec{DefaultPolicy: r.builtinPolicy, Policy: r.policy, PolicyName: r.policyName, Unattended: r.unattended,
			Budgets: &run.Budgets, Metadata: map[string]string{"trio.eval.task": t.ID}}
		if r.replay {
			b, err := os.ReadFile(t.Replay)
			if err != nil {
				return err
			}
			spec.Replay = string(b)
		}
		if seed := t.SeedPath(); seed != "" {
			files, err := flow.ReadSeed(seed)
			if err != nil {
				return err
			}
			spec.Seed = files
		}
		if err := flow.SaveGoal(ctx, r.st, id, t.Goal); err != nil {
			return err
		}
		if err := flow.SaveSpec(ctx, r.st, id, spec); err != nil {
			return err
		}
		// Nobody answers an eval's run: ask is no at once.
		in.Runs = append(in.Runs, flow.RunInput{RunID: id, HeartbeatTimeout: r.hb})
		ids = append(ids, id)
	}
	in.EvalID = flow.EvalID(ids)
	r.evalID = in.EvalID
	_, started, err := flow.SubmitEval(ctx, r.c, in)
	if err != nil {
		return err
	}
	what := "submitted to Temporal"
	if !started {
		what = "submitted before: attached to it"
	}
	fmt.Fprintf(r.io.err, "trio eval: fan-out %s of %d runs %s; the runs are judged here as they end\n", in.EvalID, len(ids), what)
	return nil
}

func (r *temporalRemote) Wait(ctx context.Context, run eval.RemoteRun, dir string) (string, error) {
	id := r.runID(run)
	if _, err := flow.WaitRun(ctx, r.c, r.evalID, id); err != nil {
		return "", err
	}
	head, err := dist.Head(ctx, r.st, id)
	if err != nil {
		return "", err
	}
	if head == nil || head.Manifest == "" {
		return "", fmt.Errorf("run %s ended without a commit in the store", id)
	}
	runDir := filepath.Join(dir, "runs", id)
	if err := dist.Restore(ctx, r.st, head, runDir, filepath.Join(dir, "workspace")); err != nil {
		return "", fmt.Errorf("run %s: restore: %w", id, err)
	}
	return runDir, nil
}
