package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

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
		p.printf("trio: run %s resumed: %s  (tokens so far %s)\n", ev.RunID, ev.Message, p.tokens())
	case agent.EventWarning:
		if p.quiet && ev.Role == "" {
			fmt.Fprintf(p.w, "trio: warning: %s\n", ev.Message) // sandbox warnings always show
		}
		p.printf("trio: warning: %s\n", ev.Message)
	case agent.EventSandbox:
		// A newcomer must see why the first run is slow, even with --quiet.
		fmt.Fprintf(p.w, "trio: sandbox: %s\n", ev.Message)
	case agent.EventSetup:
		p.printf("trio: start: %s (%s)\n", ev.Message, ms(ev.Duration))
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
	case agent.EventModelRetry:
		p.printf("  [%s] retry: %s\n", ev.Role, clip(ev.Message, 200))
	case agent.EventToolCall:
		outcome := "ok"
		if ev.OK != nil && !*ev.OK {
			outcome = "failed"
		}
		call := ev.Tool
		if ev.Target != "" {
			call += " " + clip(ev.Target, 80)
		}
		if ev.Role != agent.RoleWorker {
			// The Critic's checks; the message is the target, then the
			// error if there was one.
			if why, ok := strings.CutPrefix(ev.Message, ev.Target+": "); ok && outcome != "ok" {
				outcome += ": " + clip(why, 100)
			}
			p.printf("  [%s] %s · %s · %s · %s\n", ev.Role, call, ev.Decision, ms(ev.Duration), outcome)
			break
		}
		where := fmt.Sprintf("step %d/%d", ev.Step, p.steps)
		if ev.Repair > 0 {
			where = fmt.Sprintf("repair %d", ev.Repair)
		}
		if outcome != "ok" {
			outcome += ": " + clip(resultText(ev.Message), 100)
		}
		p.printf("  [worker] %s %s · %s · %s · %s\n", where, call, decisionText(ev), ms(ev.Duration), outcome)
	case agent.EventCriticVerdict:
		p.printf("[critic] verdict %s  (tokens so far %s)\n", verdictText(ev), p.tokens())
	case agent.EventRepairStarted:
		// The message is the findings the Worker reads; the verdict line
		// just above has already said what failed.
		p.printf("[worker] repair round %d: repairing what the Critic found\n", ev.Repair)
	case agent.EventTestRepair:
		p.printf("[test_designer] repairing the tests: %s\n", clip(ev.Message, 200))
	case agent.EventSummary, agent.EventMasked:
		p.printf("  [summarizer] %s\n", ev.Message)
	case agent.EventRunFinished:
		// The final report, printed next, says how the run ended.
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
	fmt.Fprintf(p.w, "\n%s\n", stopLine(strings.ToUpper(r.Status), r.Status, r.Reason, r.Explanation))
	if r.Detail != "" {
		fmt.Fprintf(p.w, "  detail: %s\n", clip(r.Detail, 400))
	}
	fmt.Fprintf(p.w, "  steps %d/%d, checks %d, repair rounds %d, first pass: %s\n", m.StepsDone, m.Steps, m.Checks, m.RepairRounds, yesNo(m.FirstPass))
	fmt.Fprintf(p.w, "  model calls %d, tokens %d prompt / %d completion; tool calls %d (%d failed, %d denied)\n",
		m.ModelCalls, m.PromptTokens, m.CompletionTokens, m.ToolCalls, m.ToolFailures, m.Denials)
	if m.Confirmations > 0 {
		fmt.Fprintf(p.w, "  confirmations: %d asked, %d approved, %d refused\n", m.Confirmations, m.Approved, m.Refused)
	}
	if m.CachedPromptTokens > 0 || m.CacheWriteTokens > 0 {
		fmt.Fprintf(p.w, "  prompt tokens from the cache %d, written to it %d\n", m.CachedPromptTokens, m.CacheWriteTokens)
	}
	fmt.Fprintf(p.w, "  cost: %s\n", m.CostText())
	if line := retriesLine(m.Roles); line != "" {
		fmt.Fprintf(p.w, "  model retries: %s\n", line)
	}
	fmt.Fprintf(p.w, "  wall time %s (start %s, model %s, tools %s, other %s); sandbox %s\n", m.WallTime.Round(time.Millisecond),
		m.StartTime.Round(time.Millisecond), m.ModelTime.Round(time.Millisecond), m.ToolTime.Round(time.Millisecond),
		m.OtherTime.Round(time.Millisecond), r.Sandbox)
	fmt.Fprintf(p.w, "  project:    %s\n", r.Workspace)
	fmt.Fprintf(p.w, "  run folder: %s (report.md, trace.jsonl, audit.jsonl)\n", abs(runDir))
	switch {
	case r.Reason == agent.StopInterrupted || r.Reason.Resumable():
		fmt.Fprintf(p.w, "  continue with: trio resume %s\n", abs(runDir))
	default:
		fmt.Fprintf(p.w, "  details: trio inspect %s\n", abs(runDir))
	}
}

// retriesLine is the retried model attempts per role ("planner 2, worker
// 1"), or "" when there were none.
func retriesLine(roles map[string]agent.RoleUsage) string {
	var parts []string
	for _, role := range slices.Sorted(maps.Keys(roles)) {
		if n := roles[role].Retries; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", role, n))
		}
	}
	return strings.Join(parts, ", ")
}

// stopLine is "LABEL — explanation", with the stop reason in parentheses
// when it says more than the status ("FAILED (same_failure) — ...").
func stopLine(label, status string, reason agent.StopReason, explanation string) string {
	if string(reason) != status && reason != "" {
		label += " (" + string(reason) + ")"
	}
	if explanation == "" {
		return label
	}
	return label + " — " + explanation
}

// verdictText is the Critic's verdict line with the verdict said once: the
// message starts with the verdict itself ("fail (failed checks: tests), 1
// failure: ...", "pass: every check passed").
func verdictText(ev agent.Event) string {
	msg := clip(ev.Message, 300)
	if rest, ok := strings.CutPrefix(msg, ev.Verdict); ok && ev.Verdict != "" {
		return ev.Verdict + rest
	}
	return ev.Verdict + ": " + msg
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// decisionText is a tool call's decision for people. A call under "ask"
// that was neither asked about ("ask:yes"...) nor denied ran on an earlier
// "a" (always) answer.
func decisionText(ev agent.Event) string {
	if ev.Decision == "ask" {
		return `ask:always (earlier "a")`
	}
	return ev.Decision
}

// resultText is what a failed call said, from the JSON result the model
// received (possibly cut short): its output, else its stderr, else the
// message as it is.
//
// A text that was cut says so with a final "…", and JSON is never shown
// cut: a result without those fields is shown as its complete fields.
func resultText(msg string) string {
	cut := strings.HasSuffix(msg, "…")
	msg = strings.TrimSuffix(msg, "…")
	for _, field := range []string{"output", "stderr", "stdout"} {
		key := `"` + field + `":"`
		i := strings.Index(msg, key)
		if i < 0 {
			continue
		}
		rest := msg[i+len(key):]
		// The string runs to its closing quote, or to the cut.
		end, escaped := len(rest), false
		for j, c := range rest {
			if escaped {
				escaped = false
				continue
			}
			if c == '\\' {
				escaped = true
			} else if c == '"' {
				end = j
				break
			}
		}
		closed := end < len(rest)
		text := rest[:end]
		var s string
		for k := 0; k < 7 && len(text) > 0; k++ { // drop a cut escape sequence (\uXXXX at most)
			if json.Unmarshal([]byte(`"`+text+`"`), &s) == nil {
				break
			}
			text = text[:len(text)-1]
		}
		if s != "" {
			if !closed {
				s += "…"
			}
			if field != "output" {
				if code := exitCodeOf(msg); code != "" {
					s = "exit " + code + ": " + s
				}
			}
			return s
		}
	}
	if strings.HasPrefix(strings.TrimSpace(msg), "{") {
		return jsonFields(msg)
	}
	if cut {
		return msg + "…"
	}
	return msg
}

// jsonFields shows a JSON object, possibly cut short, as its complete
// scalar fields ("exit_code 1, denied true"), ending in "…" where the
// object was cut; a field cut in the middle is left out.
func jsonFields(msg string) string {
	dec := json.NewDecoder(strings.NewReader(msg))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "(a result that is not readable JSON)"
	}
	var parts []string
	complete, lastAtEnd := false, false
	for {
		t, err := dec.Token()
		if err != nil {
			break
		}
		if t == json.Delim('}') {
			complete = true
			break
		}
		key, _ := t.(string)
		var v any
		if err := dec.Decode(&v); err != nil {
			break
		}
		switch v := v.(type) {
		case map[string]any, []any, nil:
		default:
			if key != "ok" {
				parts = append(parts, fmt.Sprintf("%s %v", key, v))
				// A number the input ends in may have been cut.
				lastAtEnd = dec.InputOffset() == int64(len(msg))
			}
		}
	}
	if !complete && lastAtEnd {
		parts = parts[:len(parts)-1]
	}
	s := strings.Join(parts, ", ")
	if !complete {
		s += " …"
	}
	return strings.TrimSpace(s)
}

// exitCodeOf is the exit_code field of a JSON result, or "".
func exitCodeOf(msg string) string {
	i := strings.Index(msg, `"exit_code":`)
	if i < 0 {
		return ""
	}
	rest := msg[i+len(`"exit_code":`):]
	j := strings.IndexFunc(rest, func(r rune) bool { return (r < '0' || r > '9') && r != '-' })
	if j < 0 {
		j = len(rest)
	}
	return rest[:j]
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

// clip folds s onto one line of at most n bytes, cut at a rune boundary
// and marked "…".
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
