package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/summarizer"
	"github.com/trioagent/trio/tools"
)

// repeatLimit is how many times in a row the same call with the same result
// may happen before the run stops with repeated_call.
const repeatLimit = 3

// worker runs Worker turns for the current step or repair round until the
// model calls finish_step, the segment's turn budget is spent, or the run
// must stop.
func (r *run) worker(ctx context.Context) error {
	st := r.st
	b := r.cfg.budgets
	for {
		if st.Pending != nil {
			if err := r.runPending(ctx); err != nil {
				return err
			}
		}
		if st.StepFinished {
			st.StepFinished = false
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if st.TotalTurns >= b.MaxTotalTurns {
			return stopf(StopBudgetSteps, "%s spent (MaxTotalTurns)", plural(st.TotalTurns, "Worker turn", "Worker turns"))
		}
		if st.SegmentTurns >= b.MaxSteps {
			// A step that did not finish in its budget is not built: the
			// Critic would only judge half a project.
			where := fmt.Sprintf("plan step %d", st.Step+1)
			if st.Phase == phaseRepair {
				where = fmt.Sprintf("repair round %d", st.RepairRound)
			}
			r.trace(TraceEntry{Kind: "step_budget", Step: st.Step + 1, Detail: plural(st.SegmentTurns, "turn", "turns")})
			return stopf(StopBudgetSteps, "%s: %s spent without finish_step (MaxSteps, budgets.max_steps)", where, plural(st.SegmentTurns, "Worker turn", "Worker turns"))
		}
		if err := r.tokenBudget(); err != nil {
			return err
		}
		if err := r.turn(ctx); err != nil {
			return err
		}
	}
}

// tokenBudget stops the run when the tokens are spent and tells the Worker
// to wrap up at 80%.
func (r *run) tokenBudget() error {
	used, limit := r.totalTokens(), r.cfg.budgets.MaxTokens
	if used >= limit {
		return stopf(StopBudgetTokens, "%d of %d tokens spent", used, limit)
	}
	if !r.st.WrapUpSent && used*5 >= limit*4 {
		r.st.WrapUpSent = true
		r.appendHistory(llm.Message{Role: llm.RoleUser, Content: summarizer.WrapUpNote()})
		r.emit(Event{Kind: EventWarning, Role: RoleWorker, Message: fmt.Sprintf("80%% of the token budget spent (%d of %d): the Worker is told to wrap up", used, limit)})
	}
	return nil
}

// turn asks the Worker once and records its reply as pending.
func (r *run) turn(ctx context.Context) error {
	st := r.st
	defs := r.workerDefs
	msgs, err := r.win.Messages(ctx, defs)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		return stopf(StopContextBudget, "%v", err)
	}
	// CachePrefix lets a provider with explicit cache breakpoints cache the
	// window's stable prefix and not its volatile tail.
	resp, err := r.model.Complete(ctx, llm.Request{Agent: RoleWorker, Messages: msgs, Tools: defs, CachePrefix: r.win.StablePrefix()})
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		return stopf(StopModelError, "worker turn %d: %v", st.TotalTurns+1, err)
	}
	// Calibrate the window's estimate with the endpoint's count (a reply
	// without usage is skipped by the counter).
	r.win.Observe(resp.Usage, len(msgs))
	st.TotalTurns++
	st.SegmentTurns++
	msg := resp.Message
	msg.Role = llm.RoleAssistant
	r.appendHistory(msg)

	text := strings.TrimSpace(msg.Content)
	analysis := false
	switch {
	case st.AnalysisPending && text == "" && !st.AnalysisReminded:
		// Analysis first: the calls of a repair reply without one are
		// answered, not run, and the Worker is reminded once.
		st.AnalysisReminded = true
		for _, tc := range msg.ToolCalls {
			r.appendHistory(llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, Name: tc.Name,
				Content: `{"ok":false,"output":"not run: state your analysis first (what failed, likely causes, whether your last change caused it)"}`})
		}
		r.appendHistory(llm.Message{Role: llm.RoleUser, Content: analysisReminder})
		r.emit(Event{Kind: EventWarning, Role: RoleWorker, Repair: st.RepairRound, Message: "the repair reply has no analysis: reminder sent"})
		return r.checkpoint()
	case st.AnalysisPending:
		st.AnalysisPending = false
		if text == "" {
			r.emit(Event{Kind: EventWarning, Role: RoleWorker, Repair: st.RepairRound, Message: "the repair reply still has no analysis after the reminder"})
			text = "(none given)"
		}
		st.Analyses = append(st.Analyses, text)
		analysis = true
		r.trace(TraceEntry{Kind: "repair_analysis", Repair: st.RepairRound, Detail: text})
	}

	if len(msg.ToolCalls) == 0 && analysis {
		// An analysis on its own is what the repair asked for first.
		r.appendHistory(llm.Message{Role: llm.RoleUser, Content: nudge})
		return r.checkpoint()
	}
	if len(msg.ToolCalls) == 0 {
		why := "text instead of a tool call"
		switch {
		case resp.FinishReason == "length":
			why = "reply cut by the token limit"
		case text == "":
			why = "empty reply"
		}
		st.Counters.Malformed++
		r.trace(TraceEntry{Kind: "malformed_reply", Role: RoleWorker, Detail: why})
		r.appendHistory(llm.Message{Role: llm.RoleUser, Content: nudge})
		return r.checkpoint()
	}
	if resp.FinishReason == "length" {
		st.Counters.Malformed++
		r.trace(TraceEntry{Kind: "malformed_reply", Role: RoleWorker, Detail: "reply cut by the token limit; its tool calls go through the gate as written"})
	}
	st.Pending = &msg
	st.PendingDone = 0
	st.PendingTurn = st.TotalTurns
	return r.checkpoint()
}

// runPending executes the pending reply's tool calls in order, each with a
// write-ahead record and a checkpoint after it.
func (r *run) runPending(ctx context.Context) error {
	st := r.st
	msg := st.Pending
	for st.PendingDone < len(msg.ToolCalls) {
		if err := ctx.Err(); err != nil {
			return err
		}
		i := st.PendingDone
		tc := msg.ToolCalls[i]
		key := fmt.Sprintf("%d.%d", st.PendingTurn, i)
		call := tools.Call{ID: tc.ID, Name: tc.Name, Arguments: json.RawMessage(tc.Arguments)}
		res, replayed := r.wal.recorded(key, call)
		start := time.Now()
		decision := "replayed"
		r.lastRecord = nil
		if replayed {
			r.countReplayed(res)
		} else {
			if err := r.wal.begin(key, call); err != nil {
				return err
			}
			var err error
			res, err = r.workerGate.Call(tools.WithCallerRole(ctx, RoleWorker), r.workerView, call)
			if err != nil {
				if ctx.Err() != nil {
					return err // in flight: runs again on resume
				}
				r.trace(TraceEntry{Kind: "tool_error", Tool: tc.Name, CallID: tc.ID, Detail: err.Error()})
				return stopf(StopSandboxError, "%s: %v", tc.Name, err)
			}
			if err := r.wal.end(key, call, res); err != nil {
				return err
			}
			decision = decisionOf(res, r.lastRecord)
		}
		d := time.Since(start)
		out := res.ForModel()
		r.appendHistory(llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, Name: tc.Name, Content: out})
		r.trace(TraceEntry{Kind: "tool_call", Role: RoleWorker, Step: st.Step + 1, Tool: tc.Name, CallID: tc.ID, Key: key,
			Args: validJSON(call.Arguments), Result: &res, Decision: decision, Replayed: replayed, Duration: d})
		ok := res.OK
		r.emit(Event{Kind: EventToolCall, Role: RoleWorker, Step: r.stepOf(RoleWorker), Repair: r.repairOf(RoleWorker), Tool: tc.Name,
			Target: r.callTarget(call), Decision: decision, OK: &ok, Duration: d, Message: oneLine(out, 200),
			CallID: tc.ID, Rule: r.callRule(), Outcome: r.callOutcome(res, replayed), Content: &Content{Args: string(call.Arguments), Result: out}})
		if tc.Name == FinishStepName && res.OK {
			st.StepFinished = true
			st.StepNotes = append(st.StepNotes, finishNote(call.Arguments))
		}
		st.PendingDone = i + 1
		repeated := r.sameCall(tc, out)
		if err := r.checkpoint(); err != nil {
			return err
		}
		if s := r.hookStopped(); s != nil {
			return s
		}
		if repeated {
			return stopf(StopRepeatedCall, "%s %s returned the same result %d times in a row", tc.Name, oneLine(tc.Arguments, 200), repeatLimit)
		}
	}
	// No checkpoint here: the next reply's checkpoint covers it, and a
	// resumed run with every pending call done just clears it.
	st.Pending = nil
	st.PendingDone = 0
	return nil
}

// sameCall tracks consecutive identical calls (name, arguments, result).
func (r *run) sameCall(tc llm.ToolCall, out string) bool {
	h := sha256.New()
	h.Write([]byte(tc.Name))
	h.Write([]byte{0})
	h.Write([]byte(canonicalJSON(tc.Arguments)))
	h.Write([]byte{0})
	h.Write([]byte(out))
	sig := hex.EncodeToString(h.Sum(nil)[:12])
	if sig == r.st.LastCall {
		r.st.CallStreak++
	} else {
		r.st.LastCall, r.st.CallStreak = sig, 1
	}
	return r.st.CallStreak >= repeatLimit
}

// canonicalJSON re-encodes valid JSON so that key order and spacing do not
// make two identical calls differ.
func canonicalJSON(s string) string {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return s
	}
	return string(b)
}

// decisionOf is the gate's decision on a call, as a word: allow, deny,
// invalid (unknown tool or bad arguments), or the answer to an ask.
func decisionOf(res tools.Result, rec *tools.Record) string {
	if rec == nil {
		if res.Denied {
			return "deny"
		}
		return "allow"
	}
	switch {
	case rec.Outcome == tools.OutcomeInvalid:
		return "invalid"
	case rec.Answer != nil:
		return "ask:" + rec.Answer.String()
	case rec.Outcome == tools.OutcomeDenied:
		return "deny"
	}
	return rec.Decision.Verdict.String()
}

// countReplayed tallies a call whose result came from calls.jsonl (the gate
// did not see it this session).
func (r *run) countReplayed(res tools.Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := &r.st.Counters
	c.Replayed++
	c.ToolCalls++
	switch {
	case res.Denied:
		c.Denials++
	case !res.OK:
		c.ToolFailures++
	}
}

func finishNote(args json.RawMessage) string {
	var a FinishArgs
	if json.Unmarshal(args, &a) == nil {
		return a.Note
	}
	return ""
}
