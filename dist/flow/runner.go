package flow

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/dist/store"
	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/tools"
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

// SpecKey is where a run's Spec waits in the store.
func SpecKey(runID string) string { return "runs/" + runID + "/spec.json" }

// Spec is what a run needs beyond its goal and the worker's own settings
// (an eval task's run: its replay, seed, budgets and the eval's policy).
// It waits in the store beside the goal; a run without one runs with the
// worker's settings alone.
type Spec struct {
	// Replay is a scripted model (its YAML) that answers the run instead
	// of the worker's model: an eval task's replay script.
	Replay string `json:"replay,omitempty"`
	// Seed is the workspace the run starts from.
	Seed []File `json:"seed,omitempty"`
	// DefaultPolicy says the run follows the built-in strict policy;
	// otherwise Policy, when set, is the text of the policy file it
	// follows (PolicyName names it), else the worker's.
	DefaultPolicy bool   `json:"default_policy,omitempty"`
	Policy        string `json:"policy,omitempty"`
	PolicyName    string `json:"policy_name,omitempty"`
	// Unattended makes the policy's ask a no (no person is asked).
	Unattended bool              `json:"unattended,omitempty"`
	Budgets    *agent.Budgets    `json:"budgets,omitempty"`
	Metadata   map[string]string `json:"metadata,omitempty"`
}

// File is a file of a Spec's seed.
type File struct {
	Path string      `json:"path"` // slash-separated, relative
	Mode fs.FileMode `json:"mode"`
	Data []byte      `json:"data"`
}

// SaveSpec puts a run's spec in the store, once: a second submission of
// the same run id keeps the first.
func SaveSpec(ctx context.Context, st store.Store, runID string, s Spec) error {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("run %s: spec: %w", runID, err)
	}
	err = st.PutIfAbsent(ctx, SpecKey(runID), bytes.NewReader(b))
	if err != nil && !errors.Is(err, store.ErrExists) {
		return err
	}
	return nil
}

// LoadSpec is the run's spec; the zero Spec when it has none.
func LoadSpec(ctx context.Context, st store.Store, runID string) (Spec, error) {
	var s Spec
	b, err := store.ReadAll(ctx, st, SpecKey(runID))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return s, nil
	case err != nil:
		return s, fmt.Errorf("run %s: spec: %w", runID, err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("run %s: spec: %w", runID, err)
	}
	return s, nil
}

// ReadSeed reads the regular files under dir as a Spec's seed.
func ReadSeed(dir string) ([]File, error) {
	var out []File
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, File{Path: filepath.ToSlash(rel), Mode: fi.Mode().Perm(), Data: b})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("seed %s: %w", dir, err)
	}
	return out, nil
}

// laySeed writes the seed into the workspace ws.
func (s Spec) laySeed(ws string) error {
	for _, f := range s.Seed {
		if !filepath.IsLocal(filepath.FromSlash(f.Path)) {
			return fmt.Errorf("seed file %q: not a relative path", f.Path)
		}
		p := filepath.Join(ws, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.Data, f.Mode|0o200); err != nil {
			return err
		}
	}
	return nil
}

// policyOf is the policy the run follows: the spec's, else the worker's.
func (s Spec) policyOf(worker *policy.Policy) (*policy.Policy, error) {
	p := worker
	switch {
	case s.DefaultPolicy:
		p = policy.Default()
	case s.Policy != "":
		var err error
		if p, err = policy.Parse(s.PolicyName, []byte(s.Policy)); err != nil {
			return nil, fmt.Errorf("%w: the run's policy: %v", agent.ErrInvalidInput, err)
		}
	}
	if p != nil && s.Unattended {
		p = p.WithUnattended()
	}
	return p, nil
}

// AgentRunner runs sessions with the library's own entry points, as trio
// run and trio resume do: agent.New(...).Run for a run's first session
// (the goal from the store, the run id given), agent.Resume for every
// later one. model, pol and opts are the worker's (opts must not choose
// the workspace, the runs folder, the run id or the confirmer: the
// session does). pol's read rules decide what a commit may copy.
func AgentRunner(model llm.Model, pol *policy.Policy, opts ...agent.Option) Runner {
	return AgentRunnerWith(model, nil, pol, opts...)
}

// AgentRunnerWith is AgentRunner with an embedder's tools: registry, when
// not nil, makes each session's registry (the same tools every time, as
// agent.Resume wants), so that a completed call of a custom tool is
// answered from the log on the host the run moved to, never run again.
func AgentRunnerWith(model llm.Model, registry func() (*tools.Registry, error), pol *policy.Policy, opts ...agent.Option) Runner {
	return func(ctx context.Context, c Call) (string, error) {
		var reg *tools.Registry
		if registry != nil {
			var err error
			if reg, err = registry(); err != nil {
				return "", err
			}
		}
		var read policy.ReadRules
		o := slices.Clone(opts)
		p, err := c.Spec.policyOf(pol)
		if err != nil {
			return "", err
		}
		if p != nil {
			read = p.ReadRules()
			o = append(o, agent.WithPolicy(p))
		}
		if c.Spec.Budgets != nil {
			o = append(o, agent.WithBudgets(*c.Spec.Budgets))
		}
		if len(c.Spec.Metadata) > 0 {
			o = append(o, agent.WithMetadata(c.Spec.Metadata))
		}
		o = append(o, agent.WithWorkspace(c.Workspace), agent.WithConfirmer(c.Confirmer),
			agent.WithCheckpointHook(func(dir string) error { return c.Checkpoint(dir, read) }))
		var rep *agent.Report
		if c.Fresh {
			goal, err := store.ReadAll(ctx, c.Store, GoalKey(c.RunID))
			if err != nil {
				return "", fmt.Errorf("run %s: goal: %w", c.RunID, err)
			}
			if err := os.MkdirAll(c.Workspace, 0o755); err != nil {
				return "", err
			}
			if err := c.Spec.laySeed(c.Workspace); err != nil {
				return "", fmt.Errorf("run %s: %w", c.RunID, err)
			}
			a, err := agent.New(model, reg, append(o, agent.WithRunsDir(filepath.Dir(c.RunDir)), agent.WithRunID(c.RunID))...)
			if err != nil {
				return "", err
			}
			if rep, err = a.Run(ctx, string(goal)); err != nil {
				return "", err
			}
			return string(rep.Reason), nil
		}
		rep, err = agent.Resume(ctx, c.RunDir, model, reg, o...)
		switch {
		case errors.Is(err, agent.ErrRunFinished) && rep != nil:
			return string(rep.Reason), nil
		case err != nil:
			return "", err
		}
		return string(rep.Reason), nil
	}
}
