package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/tools"
)

// A failed call shows what the tool said, not the JSON the model read.
func TestResultText(t *testing.T) {
	t.Parallel()
	long := tools.Result{OK: false, ExitCode: 2, Stdout: strings.Repeat("x", 300), Stderr: "boom"}.ForModel()
	tests := []struct {
		name, msg, want string
	}{
		{"denied", tools.Result{Denied: true, Output: `denied by policy: "rm a.txt" matches commands.ask "rm *"`}.ForModel(),
			`denied by policy: "rm a.txt" matches commands.ask "rm *"`},
		{"stderr with exit code", tools.Result{ExitCode: 1, Stderr: "no such file\n"}.ForModel(), "exit 1: no such file\n"},
		{"cut inside an escape", `{"ok":false,"output":"path: \"a\u00`, `path: "a…`},
		{"cut, stdout before stderr", oneLineCut(long, 200), "exit 2: " + strings.Repeat("x", 300)[:200-len(`{"ok":false,"exit_code":2,"stdout":"`)] + "…"},
		{"not JSON", "something broke", "something broke"},
		{"not JSON, cut", "something broke and…", "something broke and…"},
		// A result with none of the text fields: its complete fields, and
		// "…" where it was cut, never the cut JSON.
		{"fields only, cut", `{"ok":false,"exit_code":137,"timed_out":true,"duration_ms":12`, "exit_code 137, timed_out true …"},
		{"fields only", `{"ok":false,"exit_code":1,"truncated":{"stdout":true}}`, "exit_code 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := resultText(tt.msg); got != tt.want {
				t.Errorf("resultText(%q)\n got %q\nwant %q", tt.msg, got, tt.want)
			}
		})
	}
}

// oneLineCut cuts s at n bytes with the agent's marker.
func oneLineCut(s string, n int) string { return s[:n] + "…" }

// The progress lines say each thing once and read as sentences.
func TestProgressLines(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	denied := tools.Result{Denied: true, Output: `denied by policy: "rm b.txt" matches commands.ask "rm *"; the person asked said no`}.ForModel()
	tests := []struct {
		name string
		ev   agent.Event
		want string
		not  string
	}{
		{"verdict once", agent.Event{Kind: agent.EventCriticVerdict, Verdict: "pass", Message: "pass: every check passed"},
			"[critic] verdict pass: every check passed", "pass: pass"},
		{"failed verdict once", agent.Event{Kind: agent.EventCriticVerdict, Verdict: "fail", Message: "fail (failed checks: tests), 1 failure: bold"},
			"[critic] verdict fail (failed checks: tests), 1 failure: bold", "fail: fail"},
		{"verdict without the prefix", agent.Event{Kind: agent.EventCriticVerdict, Verdict: "suspect_test", Message: "a test is wrong"},
			"[critic] verdict suspect_test: a test is wrong", ""},
		{"repair round without the findings dump", agent.Event{Kind: agent.EventRepairStarted, Repair: 1, Message: "Verdict: fail Summary: bold"},
			"[worker] repair round 1: repairing what the Critic found", "Summary"},
		{"denied call", agent.Event{Kind: agent.EventToolCall, Role: agent.RoleWorker, Step: 1, Tool: "run_command", Decision: "ask:no", OK: &no, Message: denied},
			`run_command · ask:no · 0s · failed: denied by policy: "rm b.txt"`, `{"ok"`},
		{"covered by always", agent.Event{Kind: agent.EventToolCall, Role: agent.RoleWorker, Step: 1, Tool: "run_command", Decision: "ask", OK: &yes, Duration: 3 * time.Millisecond},
			`run_command · ask:always (earlier "a") · 3ms · ok`, ""},
		{"command of a worker call", agent.Event{Kind: agent.EventToolCall, Role: agent.RoleWorker, Step: 1, Tool: "run_command", Target: "go test ./...", Decision: "ask:yes", OK: &yes},
			`step 1/1 run_command go test ./... · ask:yes · 0s · ok`, ""},
		{"long target on one line", agent.Event{Kind: agent.EventToolCall, Role: agent.RoleWorker, Step: 1, Tool: "write_file", Target: "a/" + strings.Repeat("x", 100) + "\nb", Decision: "allow", OK: &yes},
			"write_file a/" + strings.Repeat("x", 78) + "… · allow", "\nb"},
		{"critic check with its error", agent.Event{Kind: agent.EventToolCall, Role: agent.RoleCritic, Tool: "run_command", Target: "calc --help", Decision: "allow", OK: &no, Message: "calc --help: sandbox down"},
			"[critic] run_command calc --help · allow · 0s · failed: sandbox down", ""},
		{"run finished is left to the report", agent.Event{Kind: agent.EventRunFinished, Reason: agent.StopCompleted, Message: "done"}, "", "run finished"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var errb, outb bytes.Buffer
			p := newProgress(&errb, &outb, false, false)
			p.steps = 1
			p.event(tt.ev)
			got := errb.String()
			if !strings.Contains(got, tt.want) || (tt.not != "" && strings.Contains(got, tt.not)) {
				t.Errorf("got %q, want it to contain %q and not %q", got, tt.want, tt.not)
			}
		})
	}
}

// The final report names the status once, and the reason when it says more.
func TestReportHead(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status string
		reason agent.StopReason
		want   string
	}{
		{"completed", agent.StopCompleted, "\nCOMPLETED — why\n"},
		{"failed", agent.StopSameFailure, "\nFAILED (same_failure) — why\n"},
	}
	for _, tt := range tests {
		var errb bytes.Buffer
		p := newProgress(&errb, &bytes.Buffer{}, true, false)
		p.report(&agent.Report{Status: tt.status, Reason: tt.reason, Explanation: "why"}, "runs/x")
		if !strings.HasPrefix(errb.String(), tt.want) || !strings.Contains(errb.String(), "first pass: no") {
			t.Errorf("report starts %q, want %q and first pass: no:\n%s", errb.String()[:min(40, errb.Len())], tt.want, errb.String())
		}
	}
}

// --json writes one JSON object per event on stdout, and nothing else.
func TestProgressJSONOnlyOnStdout(t *testing.T) {
	t.Parallel()
	var errb, outb bytes.Buffer
	p := newProgress(&errb, &outb, false, true)
	p.event(agent.Event{Kind: agent.EventRunStarted, RunID: "r"})
	p.warn("careful")
	p.event(agent.Event{Kind: agent.EventPlanReady, Steps: 2, Message: "2 steps"})
	lines := strings.Split(strings.TrimSpace(outb.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("stdout has %d lines:\n%s", len(lines), outb.String())
	}
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil || m["kind"] == nil {
			t.Errorf("not an event: %q (%v)", l, err)
		}
	}
	if !strings.Contains(errb.String(), "careful") {
		t.Errorf("warning not on stderr: %q", errb.String())
	}
}

// A retried model attempt is a progress line, and the final report counts
// retries per role.
func TestProgressShowsRetries(t *testing.T) {
	t.Parallel()
	var w bytes.Buffer
	p := newProgress(&w, &bytes.Buffer{}, false, false)
	p.event(agent.Event{Kind: agent.EventModelRetry, Role: agent.RolePlanner, Message: "attempt 1 failed (HTTP 429); retrying in 2s"})
	p.report(&agent.Report{Status: "completed", Reason: agent.StopCompleted, Metrics: agent.Metrics{Roles: map[string]agent.RoleUsage{
		agent.RolePlanner: {Calls: 1, Retries: 1}, agent.RoleWorker: {Calls: 3}, agent.RoleCritic: {Calls: 1, Retries: 2}}}}, t.TempDir())
	for _, want := range []string{"[planner] retry: attempt 1 failed (HTTP 429); retrying in 2s", "model retries: critic 2, planner 1\n"} {
		if !strings.Contains(w.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, w.String())
		}
	}
}

// What makes a first run slow shows even with --quiet.
func TestProgressShowsSandboxStepsWhenQuiet(t *testing.T) {
	t.Parallel()
	var w bytes.Buffer
	p := newProgress(&w, &bytes.Buffer{}, true, false)
	p.event(agent.Event{Kind: agent.EventSandbox, Message: "building the trusted Go build cache"})
	if !strings.Contains(w.String(), "trio: sandbox: building the trusted Go build cache") {
		t.Errorf("quiet progress hides the sandbox step:\n%s", w.String())
	}
}

// clip never cuts a character in two.
func TestClipRunes(t *testing.T) {
	t.Parallel()
	s := strings.Repeat("é", 10) // two bytes each
	for n := 1; n < 20; n++ {
		got := clip(s, n)
		if !utf8.ValidString(got) || !strings.HasSuffix(got, "…") || len(got)-len("…") > n {
			t.Errorf("clip(%d) = %q", n, got)
		}
	}
}
