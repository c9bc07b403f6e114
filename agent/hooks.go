package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/trioagent/trio/tools"
)

// WithHooks runs the user's hook programs (Claude Code's contract: see
// tools.Hooks) around every tool call of every role and once when the run
// stops. Hook programs run on the host, as the user's own code; each run
// of one is recorded in audit.jsonl and trace.jsonl.
func WithHooks(h *tools.Hooks) Option {
	return func(c *config) error {
		if h == nil {
			return errors.New("agent: WithHooks: nil hooks")
		}
		c.hooks = h
		return nil
	}
}

// hookAudit is a hook's line in audit.jsonl, told apart from the gate's
// records by "kind":"hook" first.
func hookAudit(rec tools.HookRecord) any {
	b, err := json.Marshal(rec)
	if err != nil || len(b) < 2 {
		return rec
	}
	return json.RawMessage(append([]byte(`{"kind":"hook",`), b[1:]...))
}

// runHooks are the configured hooks bound to this run, or nil.
func (r *run) runHooks() *tools.Hooks {
	if r.cfg.hooks == nil {
		return nil
	}
	transcript, err := filepath.Abs(filepath.Join(r.dir, HistoryFile))
	if err != nil {
		transcript = filepath.Join(r.dir, HistoryFile)
	}
	return r.cfg.hooks.ForRun(r.st.RunID, r.ws.Dir, r.observeHook).WithSession(tools.HookSession{
		TranscriptPath: transcript, PermissionMode: tools.ClaudePermissionMode(r.cfg.policy)})
}

// hookOptions are the gate options that run the hooks around each call.
func (r *run) hookOptions() []tools.GateOption {
	if h := r.runHooks(); h != nil {
		return []tools.GateOption{tools.WithHooks(h)}
	}
	return nil
}

// observeHook writes a hook's record to the audit log and the trace; a
// tool hook's "continue": false stops the run after its call.
func (r *run) observeHook(rec tools.HookRecord) {
	_ = r.auditOut.write(hookAudit(rec), false)
	verdict := "continue"
	if rec.Stop && rec.Event != tools.HookStop {
		r.mu.Lock()
		if r.hookStop == nil {
			r.hookStop = &stop{reason: StopHookStopped, detail: fmt.Sprintf("a %s hook of %s (%q) stopped the run: %s", rec.Event, rec.Tool, rec.Command, orNone(rec.StopReason))}
		}
		r.mu.Unlock()
	}
	switch {
	case rec.Stop:
		verdict = "stop"
	case rec.Blocked:
		verdict = "block"
	case rec.Ask:
		verdict = "ask"
	}
	r.trace(TraceEntry{Kind: "hook", Tool: rec.Tool, CallID: rec.CallID, Role: rec.Role, Decision: verdict,
		Detail: fmt.Sprintf("%s %q: exit %d; %s", rec.Event, rec.Command, rec.ExitCode, rec.Reason), Duration: rec.Duration, Error: rec.Error})
}

// stopHooks runs the Stop hooks as the run ends. The run's context may
// be over by now (an interrupt), so they get a fresh one, bounded by each
// hook's own timeout.
func (r *run) stopHooks(reason StopReason, detail string) {
	if r.ws == nil {
		return // the run never opened its workspace
	}
	h := r.runHooks()
	if h == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	h.Stop(ctx, tools.StopInfo{Reason: string(reason), Detail: detail})
}

// hookStopped is the stop a hook asked for, or nil.
func (r *run) hookStopped() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hookStop == nil {
		return nil
	}
	return r.hookStop
}

func orNone(s string) string {
	if s == "" {
		return "(no reason given)"
	}
	return s
}
