package agent

import (
	"fmt"
	"strings"

	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/tools"
)

// newGate returns a safe_execute gate enforcing p for this run: the run's
// confirmer, the workspace scope (with the sandbox's view of it), and an
// observer that writes audit.jsonl and tallies the metrics. The Critic's
// gate also traces each call and emits its tool_call event (the Worker's
// calls are traced and announced by the Worker loop, which knows their
// results).
func (r *run) newGate(p *policy.Policy, role string) *tools.Gate {
	scope := r.scope()
	// Commands run in the run's sandbox: one that isolates holds the
	// path, network and limit rules itself, and the policy then judges
	// which programs run, not their arguments (policy.Scope.Enforced).
	scope.Enforced = r.sb.Info().Isolated
	observe := func(rec tools.Record) { r.observeCall(rec, nil) }
	if role != RoleWorker {
		observe = func(rec tools.Record) {
			// The Critic numbers its calls from 1 in every session: the
			// session number makes their ids unique in the run's audit.
			rec.CallID = fmt.Sprintf("s%d-%s", r.st.Sessions, rec.CallID)
			note := r.takeNote()
			r.observeCall(rec, note)
			r.announceCall(role, rec, note)
		}
	}
	opts := []tools.GateOption{
		tools.WithScope(scope),
		tools.WithObserver(tools.ObserverFunc(observe)),
	}
	if r.cfg.confirmer != nil {
		opts = append(opts, tools.WithConfirmer(r.cfg.confirmer))
	}
	opts = append(opts, r.hookOptions()...)
	return tools.NewGate(p, opts...)
}

// scope is where the workspace is, for the policy's path arguments: the
// host folder, and the sandbox's name for it when that differs.
func (r *run) scope() policy.Scope {
	scope := policy.Scope{Workspace: r.ws.Dir}
	if d := r.sb.Info().WorkspaceDir; d != "" && d != r.ws.Dir {
		scope.Aliases = []string{d}
	}
	return scope
}

// observeCall records one gate decision in audit.jsonl and the counters;
// note is set for a Critic call recorded in calls.jsonl.
func (r *run) observeCall(rec tools.Record, note *walNote) {
	_ = r.auditOut.write(auditLine(rec, note), false)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.st.ToolTime += rec.Duration
	cp := rec
	r.lastRecord = &cp
	if r.interrupted(rec) {
		return
	}
	c := &r.st.Counters
	c.ToolCalls++
	if note != nil && note.Replayed {
		c.Replayed++
	}
	switch rec.Outcome {
	case tools.OutcomeDenied:
		c.Denials++
	case tools.OutcomeError, tools.OutcomeInvalid:
		c.ToolFailures++
	}
	if rec.Answer != nil {
		c.Confirmations++
		if *rec.Answer == policy.AnswerNo {
			c.Refused++
		} else {
			c.Approved++
		}
	}
}

// interrupted reports whether rec is a call cut off by the run's end
// (Ctrl-C, a cancelled context, the wall-time deadline). It is neither a
// failure of the model's nor a finished call: the write-ahead log runs it
// again on resume, where it is counted.
func (r *run) interrupted(rec tools.Record) bool {
	return rec.Outcome == tools.OutcomeError && rec.Error != "" && r.ended != nil && r.ended() != nil
}

// announceCall traces and emits a call made by a role other than the
// Worker (the Critic's run_tests and --help run), from the gate's record.
func (r *run) announceCall(role string, rec tools.Record, note *walNote) {
	ok := rec.Outcome == tools.OutcomeOK
	decision := decisionOf(tools.Result{Denied: rec.Outcome == tools.OutcomeDenied}, &rec)
	msg := effectsText(rec.Effects)
	if rec.Error != "" {
		msg = strings.TrimSpace(msg + ": " + rec.Error)
	}
	te := TraceEntry{Kind: "tool_call", Role: role, Tool: rec.Tool, CallID: rec.CallID, Decision: decision, Duration: rec.Duration, Detail: msg}
	if note != nil {
		te.Key, te.Replayed, te.Rerun = note.Key, note.Replayed, note.Rerun
		if note.Replayed {
			decision = "replayed"
		}
	}
	r.trace(te)
	outcome := string(rec.Outcome)
	if note != nil && note.Replayed {
		outcome = "replayed"
	}
	r.emit(Event{Kind: EventToolCall, Role: role, Tool: rec.Tool, Target: effectsText(rec.Effects), Decision: decision, OK: &ok, Duration: rec.Duration, Message: oneLine(msg, 200),
		CallID: rec.CallID, Rule: rec.Decision.Rule, Outcome: outcome})
}

// callRule and callOutcome are the policy rule and the gate's outcome of
// the latest Worker call ("replayed" for one taken from the write-ahead
// log, which does not pass the gate again).
func (r *run) callRule() string {
	if r.lastRecord != nil {
		return r.lastRecord.Decision.Rule
	}
	return ""
}

func (r *run) callOutcome(res tools.Result, replayed bool) string {
	switch {
	case replayed:
		return "replayed"
	case r.lastRecord != nil:
		return string(r.lastRecord.Outcome)
	case res.Denied:
		return string(tools.OutcomeDenied)
	case !res.OK:
		return string(tools.OutcomeError)
	}
	return string(tools.OutcomeOK)
}

// callTarget is what a Worker call acted on: from the gate's record, or,
// for a call replayed from the write-ahead log (which does not pass the
// gate again), from its decoded arguments.
func (r *run) callTarget(c tools.Call) string {
	if r.lastRecord != nil {
		return effectsText(r.lastRecord.Effects)
	}
	if t, ok := r.workerView.Tool(c.Name); ok {
		if inv, err := t.Decode(c.Arguments); err == nil {
			return effectsText(inv.Effects)
		}
	}
	return ""
}

// effectsText is what a call does, for people: its commands and paths.
func effectsText(es []tools.Effect) string {
	var parts []string
	for _, e := range es {
		switch {
		case e.Command.Line != "":
			parts = append(parts, e.Command.Line)
		case len(e.Command.Argv) > 0:
			parts = append(parts, strings.Join(e.Command.Argv, " "))
		case e.Path != "":
			parts = append(parts, e.Path)
		}
	}
	return strings.Join(parts, "; ")
}
