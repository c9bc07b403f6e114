package agent

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/trioagent/trio/critic"
	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/planner"
	"github.com/trioagent/trio/summarizer"
)

// stateVersion is bumped when state.json changes incompatibly.
const stateVersion = 1

// phase is where a run is; each phase change is checkpointed.
type phase string

const (
	phasePlan        phase = "plan"
	phaseDesignTests phase = "design_tests"
	phaseBuild       phase = "build"
	phaseCheck       phase = "check"
	phaseRepair      phase = "repair"
	phaseTestRepair  phase = "test_repair"
	phaseDone        phase = "done"
)

// Counters are the tool-call and reply tallies of a run. Tool calls are
// every call through the gate, the Critic's included (see audit.jsonl),
// except a call cut off by the run's end (it runs again on resume).
type Counters struct {
	ToolCalls int `json:"tool_calls"`
	// ToolFailures are calls that came back with ok false: unknown tools,
	// invalid arguments and tools that ran and failed (a failing test
	// command included); denials are counted apart.
	ToolFailures int `json:"tool_failures"`
	// Denials are calls the policy or a person refused.
	Denials int `json:"denials"`
	// Confirmations are calls a person was asked about: Approved of them
	// were answered yes (once or always), Refused no (a timeout included).
	Confirmations int `json:"confirmations"`
	Approved      int `json:"approved"`
	Refused       int `json:"refused"`
	// Replayed counts Worker calls whose result came from calls.jsonl on
	// resume instead of running again.
	Replayed int `json:"replayed,omitempty"`
	// Malformed counts Worker replies that were empty, cut by the token
	// limit, or text where a tool call was needed.
	Malformed int `json:"malformed_replies"`
	Summaries int `json:"summaries"`
	Masked    int `json:"masked"`
}

// state is the checkpoint, state.json. Everything a resumed run needs is
// here or in calls.jsonl.
type state struct {
	Version int    `json:"version"`
	RunID   string `json:"run_id"`
	// Goal is the goal. A run started by this version keeps it in goal.md
	// (GoalSHA256 checks it), written once, rather than in every rewrite
	// of the checkpoint; older checkpoints carry it here.
	Goal       string    `json:"goal,omitempty"`
	GoalSHA256 string    `json:"goal_sha256,omitempty"`
	Workspace  string    `json:"workspace"`
	Started    time.Time `json:"started"`
	Updated    time.Time `json:"updated"`
	Phase      phase     `json:"phase"`

	// Instructions are the workspace's AGENTS.md files, read once before
	// the plan (loadInstructions).
	Instructions *Instructions `json:"instructions,omitempty"`

	// Baseline are the workspace's files before the run; never stray.
	Baseline []string `json:"baseline,omitempty"`
	// BaselineSums are the SHA-256 of those files, so that the reviewer
	// reads only what the run changed.
	BaselineSums map[string]string `json:"baseline_sums,omitempty"`
	Plan         *planner.Plan     `json:"plan,omitempty"`
	// PlanRejections are why each plan the Planner replied with was
	// refused, in order (the last one too, when the run stopped on it).
	PlanRejections []string          `json:"plan_rejections,omitempty"`
	Suite          *critic.TestSuite `json:"suite,omitempty"`
	SuiteVersion   int               `json:"suite_version"`
	// SuiteChanges are changes to the acceptance tests found on resume
	// that no check has reported yet (see restoreOnResume).
	SuiteChanges []critic.SuiteChange `json:"suite_changes,omitempty"`

	// Step is the 0-based index of the plan step being built.
	Step int `json:"step"`
	// SegmentTurns counts Worker turns in the current step or repair round.
	SegmentTurns int `json:"segment_turns"`
	// SegmentStarted is set once the step's (or repair's) prompt is in History.
	SegmentStarted bool `json:"segment_started"`
	TotalTurns     int  `json:"total_turns"`
	// History is the Worker's conversation after the pinned system prompt
	// and goal/plan message, as loaded on resume; once the Worker's window
	// exists, the window holds it and History is released. It lives in
	// history.jsonl (appended, synced before each checkpoint) so that a
	// checkpoint does not grow with the run; HistoryLen is how many of its
	// lines the checkpoint covers (the window's length when it is written).
	History    []llm.Message `json:"-"`
	HistoryLen int           `json:"history_len"`
	// Window is the Worker window's state beyond its messages (summary,
	// masking, tracked errors, the failing output), restored on resume so
	// that a resumed run does not summarize again.
	Window *summarizer.State `json:"window,omitempty"`
	// Pending is the Worker's last reply while its tool calls run;
	// PendingDone of them have completed, PendingTurn keys them in calls.jsonl.
	Pending     *llm.Message `json:"pending,omitempty"`
	PendingDone int          `json:"pending_done,omitempty"`
	PendingTurn int          `json:"pending_turn,omitempty"`
	// StepFinished is set when finish_step succeeded in the pending reply.
	StepFinished bool     `json:"step_finished,omitempty"`
	StepNotes    []string `json:"step_notes,omitempty"`

	RepairRound int `json:"repair_round"`
	TestRepairs int `json:"test_repairs"`
	// ReviewRounds counts the extra rounds a blocking review asked for.
	ReviewRounds int `json:"review_rounds,omitempty"`
	// Replanned is set once the Planner revised the plan after a stuck
	// repair (one re-plan per run).
	Replanned bool `json:"replanned,omitempty"`
	// FailCounts are the number of failures of each failing check, for
	// the errors_increasing stop.
	FailCounts []int `json:"fail_counts,omitempty"`
	// AnalysisPending is set while the first reply of a repair round must
	// still state its analysis; AnalysisReminded once the reminder was sent.
	AnalysisPending  bool     `json:"analysis_pending,omitempty"`
	AnalysisReminded bool     `json:"analysis_reminded,omitempty"`
	Analyses         []string `json:"analyses,omitempty"`

	Findings        *critic.Findings `json:"findings,omitempty"`
	Checks          int              `json:"checks"`
	FirstPass       *bool            `json:"first_pass,omitempty"`
	Fingerprints    []string         `json:"fingerprints,omitempty"`
	WorkspaceHashes []string         `json:"workspace_hashes,omitempty"`
	LastCall        string           `json:"last_call,omitempty"`
	CallStreak      int              `json:"call_streak,omitempty"`
	WrapUpSent      bool             `json:"wrap_up_sent,omitempty"`

	// SentinelKey seeds each check's sentinel tests (critic.WithSentinelSeed):
	// secret from the Worker, since the run folder is out of its reach.
	SentinelKey []byte `json:"sentinel_key,omitempty"`

	Usage    map[string]RoleUsage `json:"usage"`
	Counters Counters             `json:"counters"`
	// Times of earlier sessions of this run (before a resume).
	Elapsed     time.Duration `json:"elapsed_ns"`
	ModelTime   time.Duration `json:"model_time_ns"`
	ToolTime    time.Duration `json:"tool_time_ns"`
	SandboxTime time.Duration `json:"sandbox_time_ns"`
	// StartTime is the sessions' starts, up to the first model call.
	StartTime time.Duration `json:"start_time_ns,omitempty"`
	Sessions  int           `json:"sessions"`

	// Sandbox is the latest session's sandbox.Info.Summary ("containerd",
	// "local (not isolated)", "userns; enforced: ...").
	Sandbox string `json:"sandbox,omitempty"`
	// Metadata is what the embedder recorded with WithMetadata.
	Metadata map[string]string `json:"metadata,omitempty"`

	// Cursor is the scripted model's position, when the model has one.
	Cursor map[string]int `json:"model_cursor,omitempty"`

	Reason StopReason `json:"reason,omitempty"`
	Detail string     `json:"detail,omitempty"`

	// fallback, when set, says why this is the previous checkpoint
	// (state.json.prev): for the trace of the session that resumes it.
	fallback string
}

// loadState reads the checkpoint and the history it covers, cutting off
// history.jsonl after it: for Resume only, under the run's lock. cut is
// how many bytes of history.jsonl were cut (messages after the checkpoint,
// or a torn line). A checkpoint whose history is damaged (a message it
// counts is torn or missing) gives way to the previous checkpoint when
// that one's history is whole; st.fallback says so.
func loadState(dir string) (st *state, cut int64, err error) {
	st, err = readState(dir)
	if err != nil {
		return nil, 0, fmt.Errorf("resume: %w", err)
	}
	path := filepath.Join(dir, HistoryFile)
	hist, cut, err := loadHistory(path, st.HistoryLen)
	if err != nil && st.fallback == "" {
		prev, perr := readStateFile(dir, filepath.Join(dir, StatePrevFile))
		if perr == nil && prev.HistoryLen < st.HistoryLen {
			if h, c, herr := loadHistory(path, prev.HistoryLen); herr == nil {
				prev.fallback = fmt.Sprintf("%s: %v; resumed from the previous checkpoint, %s (%d messages)", StateFile, err, StatePrevFile, prev.HistoryLen)
				st, hist, cut, err = prev, h, c, nil
			}
		}
	}
	if err != nil {
		return nil, 0, fmt.Errorf("resume: %w", invalidInput(err))
	}
	st.History = hist
	return st, cut, nil
}

func knownPhase(p phase) bool {
	switch p {
	case phasePlan, phaseDesignTests, phaseBuild, phaseCheck, phaseRepair, phaseTestRepair, phaseDone:
		return true
	}
	return false
}

// encodeState is the checkpoint as written: without the goal when goal.md
// holds it.
func encodeState(st *state) ([]byte, error) {
	cp := *st
	if cp.GoalSHA256 != "" {
		cp.Goal = ""
	}
	return json.MarshalIndent(&cp, "", " ")
}

// goalSum is the hex SHA-256 of a goal, as GoalSHA256 holds it.
func goalSum(goal string) string {
	h := sha256.Sum256([]byte(goal))
	return hex.EncodeToString(h[:])
}

// readState reads state.json and nothing else: it changes no file, so it
// is safe on a run that is still going.
func readState(dir string) (*state, error) {
	path := filepath.Join(dir, StateFile)
	st, err := readStateFile(dir, path)
	if err == nil || !errors.Is(err, ErrInvalidInput) && !errors.Is(err, ErrNoRun) {
		return st, err
	}
	// A damaged or missing state.json: the previous checkpoint, if whole.
	prev, perr := readStateFile(dir, filepath.Join(dir, StatePrevFile))
	if perr != nil {
		return nil, err
	}
	prev.fallback = fmt.Sprintf("%v; resumed from the previous checkpoint, %s", err, StatePrevFile)
	return prev, nil
}

// StatePrevFile is the checkpoint before the latest one, kept so that a
// damaged state.json is not the end of a run.
const StatePrevFile = "state.json.prev"

// saveCheckpoint writes b as the run's checkpoint. The one it replaces
// becomes state.json.prev when the history length changes (newHist), or
// when there is none yet: the previous checkpoint then covers fewer
// messages, so that it can stand in both for a damaged state.json and for
// a checkpoint whose last messages were torn from history.jsonl. The old
// checkpoint is linked, never copied or moved, so that state.json exists
// whenever the process dies.
func saveCheckpoint(dir string, b []byte, newHist bool) error {
	cur, prev := filepath.Join(dir, StateFile), filepath.Join(dir, StatePrevFile)
	if _, err := os.Stat(prev); newHist || err != nil {
		tmp := filepath.Join(dir, "."+StatePrevFile+".tmp") // sweepTemps removes it
		os.Remove(tmp)
		if err := os.Link(cur, tmp); err == nil {
			if err := os.Rename(tmp, prev); err != nil {
				os.Remove(tmp)
			}
		}
	}
	return writeFileAtomic(cur, b)
}

// readStateFile reads one checkpoint file of the run folder dir.
func readStateFile(dir, path string) (*state, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: no %s: %w", dir, filepath.Base(path), ErrNoRun)
	}
	if err != nil {
		return nil, invalidInput(err)
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, invalidInput(fmt.Errorf("%s: damaged checkpoint: %w", path, err))
	}
	if st.Version != stateVersion {
		return nil, invalidInput(fmt.Errorf("%s: state version %d, this build reads %d", path, st.Version, stateVersion))
	}
	if !knownPhase(st.Phase) {
		return nil, invalidInput(fmt.Errorf("%s: unknown phase %q (written by another version?)", path, st.Phase))
	}
	if st.GoalSHA256 != "" && st.Goal == "" {
		gp := filepath.Join(dir, GoalFile)
		g, err := os.ReadFile(gp)
		if err != nil {
			return nil, invalidInput(fmt.Errorf("%s: the goal of this run: %w", dir, err))
		}
		if goalSum(string(g)) != st.GoalSHA256 {
			return nil, invalidInput(fmt.Errorf("%s: the goal does not match the checkpoint's goal_sha256 (edited after the run started?)", gp))
		}
		st.Goal = string(g)
	}
	if st.Usage == nil {
		st.Usage = map[string]RoleUsage{}
	}
	return &st, nil
}

// loadHistory reads the first n messages of history.jsonl and cuts off
// anything after them (messages appended after the last checkpoint, or a
// torn line), so that appends continue from the checkpoint.
func loadHistory(path string, n int) ([]llm.Message, int64, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) && n == 0 {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	r := bufio.NewReader(f)
	msgs := make([]llm.Message, 0, n)
	var off int64
	for len(msgs) < n {
		b, err := r.ReadBytes('\n')
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %d messages, the checkpoint needs %d", path, len(msgs), n)
		}
		var m llm.Message
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, 0, fmt.Errorf("%s:%d: %w", path, len(msgs)+1, err)
		}
		msgs = append(msgs, m)
		off += int64(len(b))
	}
	if fi.Size() == off {
		return msgs, 0, nil
	}
	if err := f.Truncate(off); err != nil {
		return nil, 0, err
	}
	return msgs, fi.Size() - off, f.Sync()
}
