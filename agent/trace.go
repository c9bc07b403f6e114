package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/trioagent/trio/critic"
	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/planner"
	"github.com/trioagent/trio/tools"
)

// TraceEntry is one line of trace.jsonl (for inspection tools; read the
// file with ReadTrace). Kind says which fields are set:
// model_request, model_reply (Usage, estimated when UsageEstimated),
// model_retry (Attempt, Status, Wait), model_refused (a request over the
// token budget or the context window, not sent), message, tool_call,
// tool_error, plan, suite, critic_verdict, phase, summary, masked,
// repair_analysis, malformed_reply, step_budget, healed (what was cut from
// a run folder file when a session opened it), stop.
type TraceEntry struct {
	Time         time.Time    `json:"time"`
	Kind         string       `json:"kind"`
	Role         string       `json:"role,omitempty"`
	Phase        string       `json:"phase,omitempty"`
	Step         int          `json:"step,omitempty"`
	Repair       int          `json:"repair,omitempty"`
	Messages     int          `json:"messages,omitempty"`
	ToolsOffered int          `json:"tools_offered,omitempty"`
	Structured   bool         `json:"structured,omitempty"`
	Last         *llm.Message `json:"last,omitempty"`
	Message      *llm.Message `json:"message,omitempty"`
	Reply        *llm.Message `json:"reply,omitempty"`
	Usage        *llm.Usage   `json:"usage,omitempty"`
	// UsageEstimated marks a reply whose endpoint reported no usage: Usage
	// was counted by the run's tokenizer.
	UsageEstimated bool            `json:"usage_estimated,omitempty"`
	FinishReason   string          `json:"finish_reason,omitempty"`
	Tool           string          `json:"tool,omitempty"`
	CallID         string          `json:"call_id,omitempty"`
	Key            string          `json:"key,omitempty"`
	Args           json.RawMessage `json:"args,omitempty"`
	Result         *tools.Result   `json:"result,omitempty"`
	Decision       string          `json:"decision,omitempty"`
	Replayed       bool            `json:"replayed,omitempty"`
	// Rerun marks a Critic call run again because the session that began
	// it died before recording its end.
	Rerun        bool              `json:"rerun,omitempty"`
	Plan         *planner.Plan     `json:"plan,omitempty"`
	Suite        *critic.TestSuite `json:"suite,omitempty"`
	SuiteVersion int               `json:"suite_version,omitempty"`
	Findings     *critic.Findings  `json:"findings,omitempty"`
	Fingerprint  string            `json:"fingerprint,omitempty"`
	TokensBefore int               `json:"tokens_before,omitempty"`
	TokensAfter  int               `json:"tokens_after,omitempty"`
	Reason       StopReason        `json:"reason,omitempty"`
	Detail       string            `json:"detail,omitempty"`
	Error        string            `json:"error,omitempty"`
	Duration     time.Duration     `json:"duration_ns,omitempty"`
	// Attempt, Status and Wait describe a model_retry: the attempt that
	// failed (1-based), its HTTP status (0 without one: a timeout, a cut
	// connection) and the wait before the next attempt.
	Attempt int           `json:"attempt,omitempty"`
	Status  int           `json:"status,omitempty"`
	Wait    time.Duration `json:"wait_ns,omitempty"`
}

func (r *run) trace(e TraceEntry) {
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	// A trace line that cannot be written must not stop the run; the
	// checkpoint is what resume needs.
	_ = r.traceOut.write(e, false)
}

// ReadTrace reads a run folder's trace.jsonl. A torn last line (a run killed
// mid-write) is skipped.
func ReadTrace(runDir string) ([]TraceEntry, error) {
	b, err := os.ReadFile(filepath.Join(runDir, TraceFile))
	if err != nil {
		return nil, fmt.Errorf("read trace: %w", err)
	}
	var out []TraceEntry
	lines := bytes.Split(b, []byte("\n"))
	for i, l := range lines {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		var e TraceEntry
		if err := json.Unmarshal(l, &e); err != nil {
			if i == len(lines)-1 {
				break
			}
			return out, fmt.Errorf("%s:%d: %w", filepath.Join(runDir, TraceFile), i+1, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// Inspect returns the report of the run in runDir as of its last
// checkpoint — the workspace, plan, usage per role, counters, status,
// reason, phase, sandbox and metadata — for the final report of a finished
// run and the state so far of a run that was interrupted, killed or is
// still running. It reads state.json only and changes nothing. A folder
// without a checkpoint is an error wrapping ErrNoRun.
func Inspect(runDir string) (*Report, error) {
	st, err := readState(runDir)
	if err != nil {
		return nil, fmt.Errorf("agent: inspect: %w", err)
	}
	r := &run{st: st, dir: runDir}
	rep := r.report()
	rep.Metrics.sumCost()
	rep.Updated = st.Updated
	rep.Finished = time.Time{}
	if st.Reason == "" {
		rep.Status = "running or killed"
		rep.Explanation = "the run has no stop reason yet: it is running, or was killed; resume it to continue"
	}
	if old, err := LoadReport(runDir); err == nil && st.Reason != "" {
		rep.Finished = old.Finished
	}
	return rep, nil
}
