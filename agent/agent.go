package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"time"

	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/tools"
)

// Agent runs goals with one model (or one per role, behind llm.Model), the
// tools of a registry and the options it was built with. An Agent may run
// several goals, one after the other or at once; each run gets its own
// folder, workspace tools and gate.
type Agent struct {
	model llm.Model
	reg   *tools.Registry
	cfg   config
}

// New returns an Agent that asks model and offers the Worker the built-in
// tools plus every tool of reg (nil means none). reg is only read: the
// built-ins are added to a per-run copy.
func New(model llm.Model, reg *tools.Registry, opts ...Option) (*Agent, error) {
	if model == nil {
		return nil, errors.New("agent: New: nil model")
	}
	if reg == nil {
		var err error
		if reg, err = tools.NewRegistry(); err != nil {
			return nil, fmt.Errorf("agent: New: %w", err)
		}
	}
	cfg := config{runsDir: "runs"}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&cfg); err != nil {
			return nil, optionError{err}
		}
	}
	if cfg.sandbox != nil && cfg.sandboxCfg != nil {
		return nil, optionError{errors.New("agent: WithSandbox and WithSandboxConfig both given: choose one")}
	}
	if cfg.policy == nil {
		cfg.policy = policy.Default()
	}
	cfg.budgets = cfg.budgets.withDefaults()
	return &Agent{model: model, reg: reg, cfg: cfg}, nil
}

// Run plans, builds and verifies goal, and returns the run's report. A run
// that stops for any reason (see StopReason) returns its Report and a nil
// error; the error is for failures to set up or record the run (the run
// folder cannot be written, the workspace cannot be opened), and then the
// Report, when there is one, says sandbox_error. A run cancelled through
// ctx stops with reason interrupted and can be resumed.
func (a *Agent) Run(ctx context.Context, goal string) (*Report, error) {
	if goal == "" {
		return nil, errors.New("agent: Run: empty goal")
	}
	id := a.cfg.runID
	if id == "" {
		id = newRunID()
	}
	dir := filepath.Join(a.cfg.runsDir, id)
	if _, err := os.Stat(filepath.Join(dir, StateFile)); err == nil {
		return nil, fmt.Errorf("agent: run %s already exists in %s (resume it or choose another run id)", id, dir)
	}
	// Before the run folder exists: containerd asked for and unreachable
	// leaves nothing behind.
	choice, err := a.chooseSandbox(ctx)
	if err != nil {
		return nil, err
	}
	_, statErr := os.Stat(dir)
	fresh := errors.Is(statErr, os.ErrNotExist)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("agent: create run folder: %w", err)
	}
	ws := a.cfg.runWorkspace()
	if ws == "" {
		ws = filepath.Join(dir, "workspace")
	}
	ws, err = filepath.Abs(ws)
	if err != nil {
		return nil, fmt.Errorf("agent: workspace: %w", err)
	}
	now := time.Now().UTC()
	st := &state{
		Version: stateVersion, RunID: id, Goal: goal, Workspace: ws,
		Started: now, Phase: phasePlan, Usage: map[string]RoleUsage{},
		Metadata: maps.Clone(a.cfg.metadata),
	}
	rep, err := a.execute(ctx, dir, st, false, choice)
	if rep == nil && err != nil && fresh {
		// Nothing ran (the sandbox or the run folder could not be set up):
		// leave no run folder that cannot be resumed.
		os.RemoveAll(dir)
	}
	return rep, err
}

// Resume continues the run in runDir from its checkpoint, with the model,
// registry and options given now (they need not be the same objects, but
// should be equivalent: the same custom tools, policy and script). The
// workspace is the run's unless WithWorkspace says otherwise; the sandbox
// is opened again as the options describe (Inspect returns the metadata
// recorded with WithMetadata, to rebuild the same setup). A tool call
// that completed before the interruption is not run again: its recorded
// result is reused. Resuming a run that already ended returns its report and
// an error wrapping ErrRunFinished, unless it ended for a resumable reason
// (interrupted, model_error, sandbox_error).
func Resume(ctx context.Context, runDir string, model llm.Model, reg *tools.Registry, opts ...Option) (*Report, error) {
	st, err := loadState(runDir)
	if err != nil {
		return nil, err
	}
	if st.Phase == phaseDone {
		rep, _ := LoadReport(runDir) // nil when report.json is missing
		return rep, fmt.Errorf("resume %s: %w (reason %s)", runDir, ErrRunFinished, st.Reason)
	}
	a, err := New(model, reg, append(opts, WithRunsDir(filepath.Dir(filepath.Clean(runDir))))...)
	if err != nil {
		return nil, err
	}
	if a.cfg.workspace != "" {
		ws, err := filepath.Abs(a.cfg.workspace)
		if err != nil {
			return nil, fmt.Errorf("agent: workspace: %w", err)
		}
		st.Workspace = ws
	}
	if len(a.cfg.metadata) > 0 {
		if st.Metadata == nil {
			st.Metadata = map[string]string{}
		}
		maps.Copy(st.Metadata, a.cfg.metadata)
	}
	choice, err := a.chooseSandbox(ctx)
	if err != nil {
		return nil, err
	}
	return a.execute(ctx, filepath.Clean(runDir), st, true, choice)
}

func newRunID() string {
	var b [3]byte
	rand.Read(b[:])
	return time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}
