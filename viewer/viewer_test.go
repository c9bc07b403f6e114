package viewer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/critic"
	"github.com/trioagent/trio/examples/demo"
	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/planner"
	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/summarizer"
	"github.com/trioagent/trio/tools"
	"github.com/trioagent/trio/viewer"
)

var (
	demoOnce sync.Once
	demoDir  string
	demoErr  error
)

// demoRun runs the offline demo once (local sandbox) and returns its run
// folder.
func demoRun(t *testing.T) string {
	t.Helper()
	demoOnce.Do(func() {
		dir, err := os.MkdirTemp("", "trio-viewer-demo-")
		if err != nil {
			demoErr = err
			return
		}
		model, err := demo.Model()
		if err != nil {
			demoErr = err
			return
		}
		// The fixed cadence of eight turns folds the demo's history once,
		// so the trace holds a summary to show (the cost-driven default
		// does not fold a run this short).
		a, err := agent.New(model, nil, agent.WithWorkspace(filepath.Join(dir, "project")), agent.WithRunsDir(filepath.Join(dir, "runs")),
			agent.WithSandboxConfig(agent.SandboxConfig{Kind: agent.SandboxLocal}), agent.WithWindow(summarizer.Config{SummaryEvery: 8}))
		if err != nil {
			demoErr = err
			return
		}
		rep, err := a.Run(context.Background(), demo.Goal())
		if err != nil {
			demoErr = err
			return
		}
		if rep.Reason != agent.StopCompleted {
			demoErr = fmt.Errorf("demo: %s: %s", rep.Reason, rep.Detail)
		}
		demoDir = rep.RunDir
	})
	if demoErr != nil {
		t.Fatal(demoErr)
	}
	return demoDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if demoDir != "" {
		os.RemoveAll(filepath.Dir(filepath.Dir(demoDir)))
	}
	os.Exit(code)
}

// Load reads the demo's folder into what the page shows: both steps done,
// the phases in order (the start, snapshot and sandbox, apart from the
// plan) with the repair round, the failing then passing
// verdict, tool calls joined to the gate's rule, the summary, the files.
func TestLoadDemo(t *testing.T) {
	d, outputs, err := viewer.Load(demoRun(t))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := agent.LoadReport(demoRun(t))
	if err != nil {
		t.Fatal(err)
	}
	var phases []string
	for _, p := range d.Phases {
		phases = append(phases, p.Name)
		if p.EndMS < p.StartMS {
			t.Errorf("phase %s ends before it starts", p.Name)
		}
	}
	if got, want := strings.Join(phases, ", "), "start, plan, design tests, build step 1, build step 2, check, repair 1, check"; got != want {
		t.Errorf("phases: %s, want %s", got, want)
	}
	if len(d.Steps) != 2 || d.Steps[0].State != "done" || d.Steps[1].State != "done" || d.Steps[0].Title != "Converter package" {
		t.Errorf("steps: %+v", d.Steps)
	}
	if len(d.Verdicts) != 2 || d.Verdicts[0].Verdict != "fail" || d.Verdicts[1].Verdict != "pass" || len(d.Verdicts[0].Failures) == 0 ||
		d.Verdicts[0].Failures[0].TestID != "TestRenderInline/two_bold_spans" {
		t.Errorf("verdicts: %+v", d.Verdicts)
	}
	if len(d.Repairs) != 1 || !strings.HasPrefix(d.Repairs[0].Analysis, "What failed:") {
		t.Errorf("repairs: %+v", d.Repairs)
	}
	if len(d.Models) != rep.Metrics.ModelCalls || len(d.Tools) != rep.Metrics.ToolCalls {
		t.Errorf("%d model calls, %d tool calls; report %d, %d", len(d.Models), len(d.Tools), rep.Metrics.ModelCalls, rep.Metrics.ToolCalls)
	}
	prompt := 0
	for _, m := range d.Models {
		prompt += m.Prompt
	}
	if prompt != rep.Metrics.PromptTokens {
		t.Errorf("prompt tokens %d, report %d", prompt, rep.Metrics.PromptTokens)
	}
	var runTests int
	for _, tc := range d.Tools {
		if tc.Name == "run_tests" {
			runTests++
			if !strings.HasPrefix(tc.Rule, `commands.allow: "go test *"`) || !strings.HasPrefix(tc.Target, "$ go test") || tc.Out < 0 {
				t.Errorf("run_tests call: %+v", tc)
			}
		}
	}
	if runTests < 3 {
		t.Errorf("%d run_tests calls", runTests)
	}
	if len(d.Summaries) != 1 || d.Summaries[0].NextCall == 0 || d.Summaries[0].After >= d.Summaries[0].Before {
		t.Errorf("summaries: %+v", d.Summaries)
	}
	written := map[string]int{}
	for _, f := range d.Files {
		written[f.Path] = f.Writes
	}
	if written["md/md.go"] != 2 || written["go.mod"] != 1 { // written, then edited in the repair
		t.Errorf("files: %+v", d.Files)
	}
	// Each file the demo created, as a diff against the run's start.
	for _, f := range d.Files {
		if f.Path != "md/md.go" {
			continue
		}
		if f.Status != "added" || f.Added == 0 || f.Diff < 0 || !strings.Contains(outputs[f.Diff], "+++ b/md/md.go") {
			t.Errorf("md/md.go against the start: %+v", f)
		}
	}
	if len(outputs) == 0 {
		t.Error("no outputs")
	}
}

// The page is self-contained: no external script, style, image or link,
// and a policy that forbids every fetch; the data cannot close its block.
func TestPageSelfContained(t *testing.T) {
	d, outputs, err := viewer.Load(demoRun(t))
	if err != nil {
		t.Fatal(err)
	}
	d.Goal = "</script><script>alert(1)</script> https://example.com/x.js"
	var b bytes.Buffer
	if err := viewer.Render(&b, d, outputs); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if !strings.Contains(page, `content="default-src 'none'`) {
		t.Error("no content security policy")
	}
	if n := strings.Count(page, "</script>"); n != 3 {
		t.Errorf("%d </script> tags, want 3 (data, outputs, script): the data broke out", n)
	}
	if m := regexp.MustCompile(`(?i)<(script|link|img|iframe)[^>]+(src|href)=`).FindString(page); m != "" {
		t.Errorf("the page loads %s", m)
	}
	// Outside the two data blocks, no URL at all.
	code := regexp.MustCompile(`(?s)<script type="application/json" id="run-(data|outputs)">.*?</script>`).ReplaceAllString(page, "")
	if m := regexp.MustCompile(`https?://[^" ]+`).FindAllString(code, -1); len(m) > 0 {
		for _, u := range m {
			if u != "http://www.w3.org/2000/svg" { // the SVG namespace, a name, not a fetch
				t.Errorf("the page names the URL %s", u)
			}
		}
	}
}

// bigRun writes a run folder of n Worker turns, each a model call and a
// tool call with a 2 KB output, with a summary every 50 calls.
func bigRun(t testing.TB, n int) string {
	dir := t.TempDir()
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var trace, audit bytes.Buffer
	tenc, aenc := json.NewEncoder(&trace), json.NewEncoder(&audit)
	at := start
	next := func(d time.Duration) time.Time { at = at.Add(d); return at }
	tenc.Encode(agent.TraceEntry{Time: next(time.Millisecond), Kind: "phase", Phase: "build", Step: 1})
	out := strings.Repeat("line of output\n", 140)
	for i := range n {
		tenc.Encode(agent.TraceEntry{Time: next(20 * time.Millisecond), Kind: "model_reply", Role: "worker", Duration: 15 * time.Millisecond,
			Usage: &llm.Usage{PromptTokens: 1000 + 37*(i%50), CompletionTokens: 40}, FinishReason: "tool_calls"})
		id := fmt.Sprintf("call_%d", i)
		res := tools.Result{OK: i%17 != 0, Output: fmt.Sprintf("call %d\n%s", i, out)}
		tenc.Encode(agent.TraceEntry{Time: next(5 * time.Millisecond), Kind: "tool_call", Role: "worker", Step: 1, Tool: "run_command", CallID: id,
			Args: json.RawMessage(fmt.Sprintf(`{"command":"go vet ./pkg%d"}`, i)), Result: &res, Decision: "allow", Duration: 4 * time.Millisecond})
		aenc.Encode(tools.Record{Time: at, CallID: id, Role: "worker", Tool: "run_command",
			Effects:  []tools.Effect{{Kind: tools.EffectExec, Command: policy.Command{Line: fmt.Sprintf("go vet ./pkg%d", i)}}},
			Decision: policy.Decision{Verdict: policy.Allow, Rule: `commands.allow: "go vet *"`}, Outcome: tools.OutcomeOK})
		if i%50 == 49 {
			tenc.Encode(agent.TraceEntry{Time: next(time.Millisecond), Kind: "summary", Role: "summarizer", TokensBefore: 2800, TokensAfter: 1000, Detail: "summary"})
		}
	}
	tenc.Encode(agent.TraceEntry{Time: next(time.Millisecond), Kind: "phase", Phase: "check", Step: 2})
	tenc.Encode(agent.TraceEntry{Time: next(time.Second), Kind: "critic_verdict", Role: "critic", Findings: &critic.Findings{Verdict: critic.VerdictPass, Summary: "every check passed"}})
	rep := agent.Report{RunID: "big", RunDir: dir, Goal: "a long run", Status: "completed", Reason: agent.StopCompleted, Started: start, Finished: next(time.Millisecond),
		Plan:  &planner.Plan{Steps: []planner.Step{{Title: "everything", Files: []string{"a.go"}}}},
		Files: []string{"a.go"}, Metrics: agent.Metrics{Steps: 1, StepsDone: 1, ModelCalls: n}}
	b, _ := json.Marshal(rep)
	for name, data := range map[string][]byte{agent.ReportJSON: b, agent.TraceFile: trace.Bytes(), "audit.jsonl": audit.Bytes()} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A 500-call run's page is written quickly and carries every call.
func TestLargeRun(t *testing.T) {
	dir := bigRun(t, 500)
	start := time.Now()
	path, err := viewer.WriteFile(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	fi, _ := os.Stat(path)
	t.Logf("500 calls: page of %d KB written in %s", fi.Size()>>10, took)
	if took > 5*time.Second {
		t.Errorf("writing the page took %s", took)
	}
	d, outputs, err := viewer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Models) != 500 || len(d.Tools) != 500 || len(outputs) != 500 || len(d.Summaries) != 10 {
		t.Errorf("%d models, %d tools, %d outputs, %d summaries", len(d.Models), len(d.Tools), len(outputs), len(d.Summaries))
	}
}

// A torn last line of audit.jsonl is skipped; damage before it names the
// file and line.
func TestDamagedAudit(t *testing.T) {
	dir := bigRun(t, 3)
	p := filepath.Join(dir, "audit.jsonl")
	b, _ := os.ReadFile(p)
	os.WriteFile(p, append(b, `{"call_id":"x`...), 0o644)
	if _, _, err := viewer.Load(dir); err != nil {
		t.Errorf("torn last line: %v", err)
	}
	os.WriteFile(p, append([]byte("{oops\n"), b...), 0o644)
	if _, _, err := viewer.Load(dir); err == nil || !strings.Contains(err.Error(), "audit.jsonl:1") {
		t.Errorf("damaged first line: %v", err)
	}
	if _, _, err := viewer.Load(t.TempDir()); err == nil {
		t.Error("a folder without a run loaded")
	}
}
