package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/trioagent/trio/agent"
)

// progress shows a run's events: lines for people on stderr (unless
// quiet) and, with --json, the events as JSON lines on stdout.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	enc   *json.Encoder
	quiet bool

	step, steps int
	tokensIn    int
	tokensOut   int
}

func newProgress(stderr, stdout io.Writer, quiet, jsonOut bool) *progress {
	p := &progress{w: stderr, quiet: quiet}
	if jsonOut {
		p.enc = json.NewEncoder(stdout)
	}
	return p
}

// warn is shown even in quiet mode.
func (p *progress) warn(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "trio: warning: %s\n", msg)
}

func (p *progress) printf(format string, args ...any) {
	if !p.quiet {
		fmt.Fprintf(p.w, format, args...)
	}
}

// event is the agent's observer.
func (p *progress) event(ev agent.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.enc != nil {
		p.enc.Encode(ev)
	}
	if ev.Steps > 0 {
		p.steps = ev.Steps
	}
	if ev.Step > 0 {
		p.step = ev.Step
	}
	if t := ev.Tokens; t.TotalPrompt > 0 || t.TotalCompletion > 0 {
		p.tokensIn, p.tokensOut = t.TotalPrompt, t.TotalCompletion
	}
	switch ev.Kind {
	case agent.EventRunStarted:
		p.printf("trio: run %s started\n", ev.RunID)
	case agent.EventRunResumed:
		p.printf("trio: run %s resumed: %s\n", ev.RunID, ev.Message)
	case agent.EventWarning:
		if p.quiet && ev.Role == "" {
			fmt.Fprintf(p.w, "trio: warning: %s\n", ev.Message) // sandbox warnings always show
		}
		p.printf("trio: warning: %s\n", ev.Message)
	case agent.EventPlanReady:
		p.printf("[planner] plan ready: %s\n", ev.Message)
	case agent.EventTestsDesigned:
		p.printf("[test_designer] acceptance tests, %s\n", ev.Message)
	case agent.EventStepStarted:
		p.printf("[worker] step %d/%d: %s  (tokens so far %s)\n", ev.Step, p.steps, ev.Message, p.tokens())
	case agent.EventStepFinished:
		p.printf("[worker] step %d/%d done: %s\n", ev.Step, p.steps, clip(ev.Message, 120))
	case agent.EventModelCall:
		if ev.Message != "" {
			p.printf("[%s] model call failed after %s: %s\n", ev.Role, ms(ev.Duration), clip(ev.Message, 200))
		} else {
			p.printf("  [%s] reply in %s, +%d/%d tokens (run %s)\n", ev.Role, ms(ev.Duration), ev.Tokens.Prompt, ev.Tokens.Completion, p.tokens())
		}
	case agent.EventToolCall:
		outcome := "ok"
		if ev.OK != nil && !*ev.OK {
			outcome = "failed"
		}
		if ev.Role != agent.RoleWorker {
			// The Critic's checks: the message is the command it ran.
			p.printf("  [%s] %s %s · %s · %s · %s\n", ev.Role, ev.Tool, clip(ev.Message, 80), ev.Decision, ms(ev.Duration), outcome)
			break
		}
		where := fmt.Sprintf("step %d/%d", ev.Step, p.steps)
		if ev.Repair > 0 {
			where = fmt.Sprintf("repair %d", ev.Repair)
		}
		if outcome != "ok" {
			outcome += ": " + clip(ev.Message, 100)
		}
		p.printf("  [worker] %s %s · %s · %s · %s\n", where, ev.Tool, ev.Decision, ms(ev.Duration), outcome)
	case agent.EventCriticVerdict:
		p.printf("[critic] verdict %s: %s  (tokens so far %s)\n", ev.Verdict, clip(ev.Message, 300), p.tokens())
	case agent.EventRepairStarted:
		p.printf("[worker] repair round %d: %s\n", ev.Repair, clip(ev.Message, 200))
	case agent.EventTestRepair:
		p.printf("[test_designer] repairing the tests: %s\n", clip(ev.Message, 200))
	case agent.EventSummary, agent.EventMasked:
		p.printf("  [summarizer] %s\n", ev.Message)
	case agent.EventRunFinished:
		p.printf("trio: run finished: %s (%s)\n", ev.Reason, ev.Message)
	default:
		p.printf("trio: %s %s\n", ev.Kind, ev.Message)
	}
}

// report prints the short end-of-run report and where the run folder is;
// it shows in quiet mode too.
func (p *progress) report(r *agent.Report, runDir string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := r.Metrics
	fmt.Fprintf(p.w, "\n%s: %s — %s\n", strings.ToUpper(r.Status), r.Reason, r.Explanation)
	if r.Detail != "" {
		fmt.Fprintf(p.w, "  detail: %s\n", clip(r.Detail, 400))
	}
	fmt.Fprintf(p.w, "  steps %d/%d, checks %d, repair rounds %d, first pass %v\n", m.StepsDone, m.Steps, m.Checks, m.RepairRounds, m.FirstPass)
	fmt.Fprintf(p.w, "  model calls %d, tokens %d prompt / %d completion; tool calls %d (%d failed, %d denied, %d confirmed)\n",
		m.ModelCalls, m.PromptTokens, m.CompletionTokens, m.ToolCalls, m.ToolFailures, m.Denials, m.Confirmations)
	fmt.Fprintf(p.w, "  wall time %s (model %s, tools %s); sandbox %s\n", m.WallTime.Round(time.Millisecond),
		m.ModelTime.Round(time.Millisecond), m.ToolTime.Round(time.Millisecond), r.Sandbox)
	fmt.Fprintf(p.w, "  project:    %s\n", r.Workspace)
	fmt.Fprintf(p.w, "  run folder: %s (report.md, trace.jsonl, audit.jsonl)\n", abs(runDir))
	switch {
	case r.Reason == agent.StopInterrupted || r.Reason.Resumable():
		fmt.Fprintf(p.w, "  continue with: trio resume %s\n", abs(runDir))
	default:
		fmt.Fprintf(p.w, "  details: trio inspect %s\n", abs(runDir))
	}
}

func (p *progress) tokens() string {
	return fmt.Sprintf("%s in / %s out", kilo(p.tokensIn), kilo(p.tokensOut))
}

func kilo(n int) string {
	if n < 10_000 {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%.1fk", float64(n)/1000)
}

func ms(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
