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
	"strings"
	"time"
	"unicode/utf8"

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
//
// A goal that is not UTF-8 text or is larger than Budgets.MaxGoalBytes, a
// workspace that is not a folder and a runs folder that cannot be written
// are errors wrapping ErrInvalidInput; a workspace another run holds is an
// error wrapping ErrLocked. Either way nothing is left behind and no model
// is asked. The session holds an exclusive lock on the run folder and on
// the workspace until Run returns.
func (a *Agent) Run(ctx context.Context, goal string) (*Report, error) {
	if goal == "" {
		return nil, errors.New("agent: Run: empty goal")
	}
	clk := a.newSetupClock("")
	if err := checkGoal(goal, a.cfg.budgets.MaxGoalBytes); err != nil {
		return nil, err
	}
	id := a.cfg.runID
	if id == "" {
		id = newRunID()
	}
	dir := filepath.Join(a.cfg.runsDir, id)
	if _, err := os.Stat(filepath.Join(dir, StateFile)); err == nil {
		return nil, invalidInput(fmt.Errorf("agent: run %s already exists in %s (resume it or choose another run id)", id, dir))
	}
	ws := a.cfg.runWorkspace()
	if ws == "" {
		ws = filepath.Join(dir, "workspace")
	}
	ws, err := filepath.Abs(ws)
	if err != nil {
		return nil, fmt.Errorf("agent: workspace: %w", err)
	}
	if err := checkWorkspace(ws); err != nil {
		return nil, err
	}
	if err := checkReuse(ws, id, a.cfg.reuseWorkspace); err != nil {
		return nil, err
	}
	// Before the run folder exists: containerd asked for and unreachable
	// leaves nothing behind.
	choice, err := a.chooseSandbox(ctx)
	if err != nil {
		return nil, err
	}
	clk.runID = id
	clk.mark("workspace checked, sandbox chosen (" + choice.kind() + ")")
	sweepUnfinished(a.cfg.runsDir)
	now := time.Now().UTC()
	st := &state{
		Version: stateVersion, RunID: id, Goal: goal, GoalSHA256: goalSum(goal), Workspace: ws,
		Started: now, Phase: phasePlan, Usage: map[string]RoleUsage{},
		Metadata: maps.Clone(a.cfg.metadata),
	}
	dir, runLock, err := createRunFolder(a.cfg.runsDir, id, st)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	defer runLock.release()
	wsLock, err := openWorkspace(ws, id)
	if err != nil {
		os.RemoveAll(dir) // nothing ran: leave no run folder behind
		return nil, err
	}
	defer wsLock.release()
	// Once, under the workspace's lock and before anything can write:
	// Diff compares with this.
	clk.mark("run folder created, run and workspace locked")
	if err := takeSnapshot(ws, dir, a.cfg.policy.ReadRules()); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("agent: %w", err)
	}
	clk.mark("start snapshot of the workspace taken")
	rep, err := a.execute(ctx, dir, st, false, choice, nil, clk)
	if rep == nil && err != nil && !errors.Is(err, ErrMCPStart) {
		// Nothing ran (the sandbox or the run folder could not be set up):
		// leave no run folder that cannot be resumed. An MCP server that
		// did not start leaves it, for the audit's record of why; Resume
		// tries again.
		os.RemoveAll(dir)
	}
	return rep, err
}

// DefaultMaxGoalBytes is the largest goal a run accepts unless
// Budgets.MaxGoalBytes says otherwise: goals are prose, and every model
// role reads the whole goal, so a goal this size already costs tens of
// thousands of tokens per call.
const DefaultMaxGoalBytes = 256 << 10

// checkGoal refuses a goal that is not text or too large, before anything
// is created or asked.
func checkGoal(goal string, limit int) error {
	if len(goal) > limit {
		return invalidInput(fmt.Errorf("agent: the goal is %s, more than the limit of %s (Budgets.MaxGoalBytes)", byteSize(int64(len(goal))), byteSize(int64(limit))))
	}
	if !utf8.ValidString(goal) {
		i := 0
		for i < len(goal) {
			r, n := utf8.DecodeRuneInString(goal[i:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			i += n
		}
		return invalidInput(fmt.Errorf("agent: the goal is not UTF-8 text (invalid byte 0x%02x at offset %d): a binary file?", goal[i], i))
	}
	if strings.ContainsRune(goal, 0) {
		return invalidInput(fmt.Errorf("agent: the goal holds a NUL byte at offset %d: a binary file?", strings.IndexByte(goal, 0)))
	}
	return nil
}

// byteSize is n bytes for people: "312 bytes", "50.0 MiB".
func byteSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB (%d bytes)", float64(n)/(1<<20), n)
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB (%d bytes)", float64(n)/(1<<10), n)
	}
	return fmt.Sprintf("%d bytes", n)
}

// checkWorkspace refuses a workspace path that names something other than
// a folder.
func checkWorkspace(ws string) error {
	fi, err := os.Stat(ws)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return invalidInput(fmt.Errorf("agent: workspace %s: %w", ws, err))
	case !fi.IsDir():
		return invalidInput(fmt.Errorf("agent: workspace %s is a file, not a folder", ws))
	}
	return nil
}

// openWorkspace creates the workspace when missing and locks it for the
// run.
func openWorkspace(ws, runID string) (*fileLock, error) {
	if err := checkWorkspace(ws); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return nil, invalidInput(fmt.Errorf("agent: create workspace: %w", err))
	}
	l, err := lockWorkspace(ws, runID)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	if err := checkWritable(ws, "workspace"); err != nil {
		l.release()
		return nil, err
	}
	return l, nil
}

// Resume continues the run in runDir from its checkpoint, with the model,
// registry and options given now (they need not be the same objects, but
// should be equivalent: the same custom tools, policy and script). The
// workspace is the run's unless WithWorkspace says otherwise; the sandbox
// is opened again as the options describe (Inspect returns the metadata
// recorded with WithMetadata, to rebuild the same setup). A tool call
// that completed before the interruption is not run again: its recorded
// result is reused, the Critic's included. Resuming a run that already
// ended returns its report and an error wrapping ErrRunFinished, unless it
// ended for a resumable reason (interrupted, model_error, sandbox_error).
//
// The session holds an exclusive lock on the run folder and on the
// workspace until Resume returns: a run or workspace in use by another
// session is an error wrapping ErrLocked (a *LockedError naming the
// holder's pid and host), returned before anything changes. A damaged run
// folder (state.json, a JSONL file damaged before its last record, a
// missing calls.jsonl while a reply's calls are pending) is an error
// wrapping ErrInvalidInput; a torn last record is cut off and the cut is
// recorded in the trace.
func Resume(ctx context.Context, runDir string, model llm.Model, reg *tools.Registry, opts ...Option) (*Report, error) {
	runDir = filepath.Clean(runDir)
	began := time.Now()
	// Read-only first: a folder without a run gets no lock file.
	st, err := readState(runDir)
	if err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	runLock, err := lockRun(runDir, st.RunID)
	if err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	defer runLock.release()
	if err := checkWritable(runDir, "run folder"); err != nil {
		return nil, err
	}
	sweepTemps(runDir)
	st, histCut, err := loadState(runDir)
	if err != nil {
		return nil, err
	}
	if st.Phase == phaseDone {
		rep, err := LoadReport(runDir)
		if err != nil {
			// Killed between its last checkpoint and report.json (or
			// moved: a durable run commits at the checkpoint): the
			// report its state gives, so the caller still learns how
			// it ended.
			rep, _ = Inspect(runDir)
		}
		return rep, fmt.Errorf("resume %s: %w (reason %s)", runDir, ErrRunFinished, st.Reason)
	}
	if err := checkCalls(runDir, st); err != nil {
		return nil, err
	}
	a, err := New(model, reg, append(opts, WithRunsDir(filepath.Dir(runDir)))...)
	if err != nil {
		return nil, err
	}
	clk := a.newSetupClock(st.RunID)
	clk.began = began
	clk.mark("run folder locked, checkpoint read")
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
	wsLock, err := openWorkspace(st.Workspace, st.RunID)
	if err != nil {
		return nil, err
	}
	defer wsLock.release()
	if st.Phase == phasePlan {
		// Killed between the run folder's creation and its snapshot:
		// nothing has written to the workspace yet (the Planner reads
		// only), so the snapshot is still the starting workspace. A
		// snapshot that exists is never retaken.
		if err := takeSnapshot(st.Workspace, runDir, a.cfg.policy.ReadRules()); err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
		clk.mark("workspace locked, start snapshot of the workspace taken")
	}
	choice, err := a.chooseSandbox(ctx)
	if err != nil {
		return nil, err
	}
	var healed []string
	if st.fallback != "" {
		healed = append(healed, st.fallback)
	}
	if histCut > 0 {
		healed = append(healed, fmt.Sprintf("%s: cut %s after the %d messages the checkpoint covers (written after it, or torn)", HistoryFile, byteSize(histCut), st.HistoryLen))
	}
	// A write the kill interrupted left its temporary file; the write
	// itself runs again from the record of calls.
	removed, err := tools.RemoveInterruptedWrites(st.Workspace)
	if err != nil {
		return nil, fmt.Errorf("agent: workspace: %w", err)
	}
	if len(removed) > 0 {
		healed = append(healed, fmt.Sprintf("workspace: removed %s of writes the interruption cut short: %s", plural(len(removed), "temporary file", "temporary files"), strings.Join(removed, ", ")))
	}
	clk.mark("sandbox chosen (" + choice.kind() + "), workspace checked")
	return a.execute(ctx, runDir, st, true, choice, healed, clk)
}

// checkCalls refuses to resume without calls.jsonl when the checkpoint
// says calls may have completed that only it records: the calls of a
// pending Worker reply, or the Critic's calls of a check in progress.
// Resuming would run them again without a word.
func checkCalls(dir string, st *state) error {
	path := filepath.Join(dir, CallsFile)
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var what string
	switch {
	case st.Pending != nil:
		what = fmt.Sprintf("the checkpoint has a pending Worker reply with %s, %d done", plural(len(st.Pending.ToolCalls), "tool call", "tool calls"), st.PendingDone)
	case st.Phase == phaseCheck:
		what = "the checkpoint is in the Critic's check, whose calls it records"
	default:
		return nil
	}
	return invalidInput(fmt.Errorf("resume: %s is missing and %s: resuming would run completed calls again without a record; restore the file, or create it empty to accept that they run again", path, what))
}

func newRunID() string {
	var b [3]byte
	rand.Read(b[:])
	return time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}
