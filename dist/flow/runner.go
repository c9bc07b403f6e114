package flow

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/dist/store"
	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/policy"
)

// GoalKey is where a run's goal waits in the store for its first session.
func GoalKey(runID string) string { return "runs/" + runID + "/goal.md" }

// SaveGoal puts a run's goal in the store, once: a second submission of
// the same run id keeps the first goal.
func SaveGoal(ctx context.Context, st store.Store, runID, goal string) error {
	err := st.PutIfAbsent(ctx, GoalKey(runID), strings.NewReader(goal))
	if err != nil && !errors.Is(err, store.ErrExists) {
		return err
	}
	return nil
}

// AgentRunner runs sessions with the library's own entry points, as trio
// run and trio resume do: agent.New(...).Run for a run's first session
// (the goal from the store, the run id given), agent.Resume for every
// later one. model, pol and opts are the worker's (opts must not choose
// the workspace, the runs folder, the run id or the confirmer: the
// session does). pol's read rules decide what a commit may copy.
func AgentRunner(model llm.Model, pol *policy.Policy, opts ...agent.Option) Runner {
	return func(ctx context.Context, c Call) (string, error) {
		var read policy.ReadRules
		o := slices.Clone(opts)
		if pol != nil {
			read = pol.ReadRules()
			o = append(o, agent.WithPolicy(pol))
		}
		o = append(o, agent.WithWorkspace(c.Workspace), agent.WithConfirmer(c.Confirmer),
			agent.WithCheckpointHook(func(dir string) error { return c.Checkpoint(dir, read) }))
		var rep *agent.Report
		if c.Fresh {
			goal, err := store.ReadAll(ctx, c.Store, GoalKey(c.RunID))
			if err != nil {
				return "", fmt.Errorf("run %s: goal: %w", c.RunID, err)
			}
			a, err := agent.New(model, nil, append(o, agent.WithRunsDir(filepath.Dir(c.RunDir)), agent.WithRunID(c.RunID))...)
			if err != nil {
				return "", err
			}
			if rep, err = a.Run(ctx, string(goal)); err != nil {
				return "", err
			}
			return string(rep.Reason), nil
		}
		rep, err := agent.Resume(ctx, c.RunDir, model, nil, o...)
		switch {
		case errors.Is(err, agent.ErrRunFinished) && rep != nil:
			return string(rep.Reason), nil
		case err != nil:
			return "", err
		}
		return string(rep.Reason), nil
	}
}
