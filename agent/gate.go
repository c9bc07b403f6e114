package agent

import (
	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/tools"
)

// newGate returns a safe_execute gate enforcing p for this run: the run's
// confirmer, the workspace scope (with the sandbox's view of it), and an
// observer that writes audit.jsonl and tallies the metrics.
func (r *run) newGate(p *policy.Policy) *tools.Gate {
	scope := policy.Scope{Workspace: r.ws.Dir}
	if d := r.sb.Info().WorkspaceDir; d != "" && d != r.ws.Dir {
		scope.Aliases = []string{d}
	}
	opts := []tools.GateOption{
		tools.WithScope(scope),
		tools.WithObserver(tools.ObserverFunc(r.observeCall)),
	}
	if r.cfg.confirmer != nil {
		opts = append(opts, tools.WithConfirmer(r.cfg.confirmer))
	}
	return tools.NewGate(p, opts...)
}

// observeCall records one gate decision in audit.jsonl and the counters.
func (r *run) observeCall(rec tools.Record) {
	_ = r.auditOut.write(rec, false)
	r.mu.Lock()
	defer r.mu.Unlock()
	c := &r.st.Counters
	c.ToolCalls++
	switch rec.Outcome {
	case tools.OutcomeDenied:
		c.Denials++
	case tools.OutcomeError, tools.OutcomeInvalid:
		c.ToolFailures++
	}
	if rec.Answer != nil {
		c.Confirmations++
	}
	r.st.ToolTime += rec.Duration
	cp := rec
	r.lastRecord = &cp
}
