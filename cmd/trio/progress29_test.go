package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/trioagent/trio/agent"
)

// Every step of a run's start, before the first model call, is told with
// its duration as it ends (the start snapshot, the sandbox, the token
// counter...), before the Planner's reply; the trace records them, and
// the report's time split (start, model, tools, other) adds up to the
// wall time.
func TestStartStepsAreTold(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws, runs := filepath.Join(dir, "ws"), filepath.Join(dir, "runs")
	r := trio(t, dir, nil, "demo", "--sandbox", "local", "--workspace", ws, "--runs-dir", runs)
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	planner := strings.Index(r.stderr, "[planner] reply")
	if planner < 0 {
		t.Fatalf("no planner reply:\n%s", r.stderr)
	}
	steps := []string{
		"trio: start: workspace checked, sandbox chosen (local) (",
		"trio: start: run folder created, run and workspace locked (",
		"trio: start: start snapshot of the workspace taken (",
		"trio: start: run folder's records opened (",
		"trio: start: sandbox local opened (",
		"trio: start: tools ready (",
		"trio: start: token counter ready (",
		"trio: start: checkpoint written (",
		"trio: start: the workspace's listing and instructions read for the planner (",
	}
	last := -1
	for _, want := range steps {
		i := strings.Index(r.stderr, want)
		switch {
		case i < 0:
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		case i > planner:
			t.Errorf("%q comes after the first model reply:\n%s", want, r.stderr)
		case i < last:
			t.Errorf("%q out of order:\n%s", want, r.stderr)
		}
		last = max(last, i)
	}
	if !strings.Contains(r.stderr, "wall time ") || !strings.Contains(r.stderr, "(start ") || !strings.Contains(r.stderr, ", other ") {
		t.Errorf("the report's time split lacks the start and the rest:\n%s", r.stderr)
	}

	ids, _ := os.ReadDir(runs)
	if len(ids) != 1 {
		t.Fatalf("runs: %v", ids)
	}
	runDir := filepath.Join(runs, ids[0].Name())
	rep, err := agent.LoadReport(runDir)
	if err != nil {
		t.Fatal(err)
	}
	m := rep.Metrics
	if m.StartTime <= 0 {
		t.Errorf("start time %s", m.StartTime)
	}
	if sum := m.StartTime + m.ModelTime + m.ToolTime + m.OtherTime; sum != m.WallTime {
		t.Errorf("start %s + model %s + tools %s + other %s = %s, want the wall time %s", m.StartTime, m.ModelTime, m.ToolTime, m.OtherTime, sum, m.WallTime)
	}
	trace, err := agent.ReadTrace(runDir)
	if err != nil {
		t.Fatal(err)
	}
	var told []string
	for _, e := range trace {
		if e.Kind == "setup" {
			told = append(told, e.Detail)
		}
	}
	if len(told) != len(steps) {
		t.Errorf("the trace's setup entries %q, want %d", told, len(steps))
	}
}

// A resumed session's progress counts the tokens from the run's totals,
// not from zero.
func TestResumeCarriesTokens(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws, runs := filepath.Join(dir, "ws"), filepath.Join(dir, "runs")
	a := startTrio(t, dir, cleanEnv(), "demo", "--sandbox", "local", "--workspace", ws, "--runs-dir", runs)
	a.until(t, agent.EventStepFinished)
	a.cmd.Process.Signal(syscall.SIGINT)
	if code := a.wait(); code != exitInterrupted {
		t.Fatalf("exit %d, want 130\n%s", code, a.stderr)
	}
	ids, _ := os.ReadDir(runs)
	if len(ids) != 1 {
		t.Fatalf("runs: %v", ids)
	}
	runDir := filepath.Join(runs, ids[0].Name())
	b, err := os.ReadFile(filepath.Join(runDir, agent.ReportJSON))
	if err != nil {
		t.Fatal(err)
	}
	var rep agent.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	in, out := rep.Metrics.PromptTokens, rep.Metrics.CompletionTokens
	if in == 0 || out == 0 {
		t.Fatalf("the interrupted run spent %d/%d tokens", in, out)
	}
	r := trio(t, dir, nil, "resume", runDir)
	if r.code != exitOK {
		t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
	}
	p := &progress{tokensIn: in, tokensOut: out}
	if want := "(tokens so far " + p.tokens() + ")"; !strings.Contains(r.stderr, "resumed: ") || !strings.Contains(r.stderr, want) {
		t.Errorf("the resumed line does not count from %s:\n%s", want, r.stderr)
	}
	if strings.Contains(r.stderr, "tokens so far 0 in / 0 out") {
		t.Errorf("a progress line counts from zero:\n%s", r.stderr)
	}
}
