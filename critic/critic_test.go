package critic

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/planner"
	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/tools"
)

// fakeModel replays replies per agent role and records every request.
type fakeModel struct {
	mu      sync.Mutex
	replies map[string][]string
	reqs    []llm.Request
}

func (m *fakeModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reqs = append(m.reqs, req)
	q := m.replies[req.Agent]
	if len(q) == 0 {
		return llm.Response{}, fmt.Errorf("fake model: no reply left for %s", req.Agent)
	}
	m.replies[req.Agent] = q[1:]
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: q[0]}, Usage: llm.Usage{PromptTokens: 50, CompletionTokens: 5}}, nil
}

func (m *fakeModel) calls(agent string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, r := range m.reqs {
		if r.Agent == agent {
			n++
		}
	}
	return n
}

const testPolicy = `
version: 1
mode: unattended
paths:
  deny: [".git/**"]
commands:
  allow: ["go *", "python3 -m unittest *", "python3 -m pytest *"]
`

// newCritic builds a Critic over a real workspace in a temp dir holding
// files, with the local sandbox and the built-in run_tests / run_command.
func newCritic(t *testing.T, files map[string]string, m llm.Model, opts ...Option) (*Critic, string) {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, files)
	limits := sandbox.Limits{Timeout: 3 * time.Minute, Output: 1 << 20}
	sb, err := sandbox.NewLocal(dir, limits)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	ws, err := tools.OpenWorkspace(dir, sb, limits)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	reg, err := tools.NewRegistry(tools.Builtins(ws)...)
	if err != nil {
		t.Fatal(err)
	}
	view, err := reg.View(tools.RunTestsName, tools.RunCommandName)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse("test-policy.yaml", []byte(testPolicy))
	if err != nil {
		t.Fatal(err)
	}
	gate := tools.NewGate(pol, tools.WithScope(policy.Scope{Workspace: ws.Dir}))
	return New(m, gate, view, ws, opts...), dir
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// greetProject is a small Go project with a library, a CLI and acceptance
// tests; greeting is what Greet returns for "Ada".
func greetProject(greeting string) map[string]string {
	return map[string]string{
		"go.mod":   "module example.com/greet\n\ngo 1.24\n",
		"greet.go": "package greet\n\n// Greet greets name.\nfunc Greet(name string) string { return \"" + greeting + "\" }\n",
		"cmd/greet/main.go": `package main

import (
	"flag"
	"fmt"

	"example.com/greet"
)

func main() {
	name := flag.String("name", "world", "who to greet")
	flag.Parse()
	fmt.Println(greet.Greet(*name))
}
`,
		"acceptance/greet_test.go": `package acceptance

import (
	"testing"

	"example.com/greet"
)

func TestGreetBasic(t *testing.T) {
	if got := greet.Greet("Ada"); got != "Hello, Ada!" {
		t.Errorf("Greet(Ada) = %q, want %q", got, "Hello, Ada!")
	}
}
`,
	}
}

func greetPlan() planner.Plan {
	return planner.Plan{
		Goal: "a greeting library and CLI",
		Steps: []planner.Step{
			{ID: 1, Title: "module", Description: "go.mod", Files: []string{"go.mod"}, Expected: "x", Acceptance: "y"},
			{ID: 2, Title: "lib", Description: "Greet", Files: []string{"greet.go"}, Expected: "x", Acceptance: "y"},
			{ID: 3, Title: "cli", Description: "main", Files: []string{"cmd/greet/main.go"}, Expected: "x", Acceptance: "y"},
		},
		TestCommand: "go test ./...",
		CLI:         []string{"go", "run", "./cmd/greet"},
		TestsDir:    "acceptance",
	}
}

func checkNamed(f Findings, name string) CheckResult {
	for _, c := range f.Checks {
		if c.Name == name {
			return c
		}
	}
	return CheckResult{Name: "absent"}
}

func TestCheckPassNeedsNoModel(t *testing.T) {
	t.Parallel()
	m := &fakeModel{replies: map[string][]string{}}
	c, _ := newCritic(t, greetProject("Hello, Ada!"), m)
	f, err := c.Check(context.Background(), greetPlan())
	if err != nil {
		t.Fatal(err)
	}
	if f.Verdict != VerdictPass || f.ModelUsed || len(m.reqs) != 0 {
		t.Fatalf("verdict %s, model used %v, %d model calls; checks %+v", f.Verdict, f.ModelUsed, len(m.reqs), f.Checks)
	}
	if len(f.Checks) != 5 || f.Checks[0].Name != CheckSuite {
		t.Errorf("checks = %+v, want 5, the suite's first", f.Checks)
	}
	for _, ch := range f.Checks {
		if !ch.OK {
			t.Errorf("check %s failed: %s", ch.Name, ch.Detail)
		}
	}
	if d := checkNamed(f, CheckTests).Detail; !strings.Contains(d, "1 passed") {
		t.Errorf("tests detail = %q", d)
	}
	if f.Fingerprint() != "" {
		t.Errorf("a pass has fingerprint %q", f.Fingerprint())
	}
}

const modelFindings = `{"verdict": "fail", "failures": [{"test_id": "TestGreetBasic", "location": "acceptance/greet_test.go:10",
 "expected": "Hello, Ada!", "actual": "Hi Ada", "kind": "assertion"}], "suspect_tests": [], "summary": "Greet returns the wrong text."}`

const modelPass = `{"verdict": "pass", "failures": [], "suspect_tests": [], "summary": "Looks fine to me."}`

func TestCheckFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		replies  []string
		calls    int
		verdict  Verdict
		model    bool
		failID   string // a failure that must be present
		summary  string // substring
		reasking bool
	}{
		{name: "model findings", replies: []string{modelFindings}, calls: 1, verdict: VerdictFail, model: true,
			failID: "TestGreetBasic", summary: "wrong text"},
		{name: "model says pass", replies: []string{modelPass}, calls: 1, verdict: VerdictFail, model: true,
			failID: "TestGreetBasic", summary: "said pass, but these checks failed: tests"},
		{name: "suspect test", replies: []string{`{"verdict": "suspect_test", "failures": [], "suspect_tests": [{"test_id": "TestGreetBasic",
 "reason": "the goal says Hi Ada"}], "summary": "The test contradicts the goal."}`}, calls: 1, verdict: VerdictSuspectTest, model: true,
			summary: "contradicts"},
		{name: "invalid then valid", replies: []string{`{"verdict": "maybe", "failures": [], "suspect_tests": [], "summary": ""}`, modelFindings}, calls: 2, verdict: VerdictFail,
			model: true, failID: "TestGreetBasic", reasking: true},
		{name: "invalid twice", replies: []string{`not json`, `{"verdict": "fail", "failures": [], "suspect_tests": [], "summary": ""}`},
			calls: 2, verdict: VerdictFail, failID: "TestGreetBasic", summary: "invalid twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := &fakeModel{replies: map[string][]string{AgentCritic: tt.replies}}
			var observed int
			c, _ := newCritic(t, greetProject("Hi Ada"), m, WithObserver(func(req llm.Request, resp llm.Response, err error) {
				observed++
				if req.Agent != AgentCritic || req.Output == nil {
					t.Errorf("request agent %q output %v", req.Agent, req.Output)
				}
			}))
			f, err := c.Check(context.Background(), greetPlan())
			if err != nil {
				t.Fatal(err)
			}
			if m.calls(AgentCritic) != tt.calls || observed != tt.calls {
				t.Errorf("critic model calls = %d (observed %d), want %d", m.calls(AgentCritic), observed, tt.calls)
			}
			if f.Verdict != tt.verdict || f.ModelUsed != tt.model {
				t.Errorf("verdict %s model %v, want %s %v", f.Verdict, f.ModelUsed, tt.verdict, tt.model)
			}
			found := false
			for _, x := range f.Failures {
				found = found || strings.HasSuffix(x.TestID, tt.failID)
				if !f.ModelUsed && x.Location != "acceptance/greet_test.go:11" {
					t.Errorf("location %q not resolved to the workspace path", x.Location)
				}
			}
			if !found && tt.failID != "" {
				t.Errorf("failures %+v lack %s", f.Failures, tt.failID)
			}
			if !strings.Contains(f.Summary, tt.summary) {
				t.Errorf("summary %q lacks %q", f.Summary, tt.summary)
			}
			if tt.verdict == VerdictSuspectTest && (len(f.SuspectTests) != 1 || len(f.Failures) != 0) {
				t.Errorf("suspects %+v failures %+v", f.SuspectTests, f.Failures)
			}
			tc := checkNamed(f, CheckTests)
			if tc.OK || !strings.Contains(tc.Detail, "TestGreetBasic") || !strings.Contains(tc.Detail, "Hi Ada") {
				t.Errorf("tests check = %+v", tc)
			}
			if !checkNamed(f, CheckCLI).OK || !checkNamed(f, CheckFiles).OK || !checkNamed(f, CheckStray).OK {
				t.Errorf("other checks should pass: %+v", f.Checks)
			}
			first := m.reqs[0].Messages[1].Content
			for _, want := range []string{"a greeting library and CLI", "## tests: FAILED", "Hi Ada", "acceptance/greet_test.go"} {
				if !strings.Contains(first, want) {
					t.Errorf("critic prompt lacks %q", want)
				}
			}
			if tt.reasking {
				last := m.reqs[1].Messages[len(m.reqs[1].Messages)-1].Content
				if !strings.Contains(last, "verdict") {
					t.Errorf("re-ask lacks the problem: %s", last)
				}
			}
		})
	}
}

func TestFingerprintAcrossRuns(t *testing.T) {
	t.Parallel()
	m := &fakeModel{replies: map[string][]string{AgentCritic: {modelFindings, modelFindings, modelFindings}}}
	c, dir := newCritic(t, greetProject("Hi Ada"), m)
	ctx := context.Background()
	plan := greetPlan()
	f1, err := c.Check(ctx, plan)
	if err != nil {
		t.Fatal(err)
	}
	// Change the source without changing the failure: go test must rebuild
	// and rerun, with new durations.
	writeFiles(t, dir, map[string]string{"greet.go": "package greet\n\n// Greet greets.\nfunc Greet(name string) string {\n\treturn \"Hi Ada\"\n}\n"})
	f2, err := c.Check(ctx, plan)
	if err != nil {
		t.Fatal(err)
	}
	if f1.Fingerprint() == "" || f1.Fingerprint() != f2.Fingerprint() {
		t.Errorf("same failure, fingerprints %q and %q\n%s\n---\n%s", f1.Fingerprint(), f2.Fingerprint(),
			checkNamed(f1, CheckTests).Detail, checkNamed(f2, CheckTests).Detail)
	}
	// A different failure: the wrong greeting is now a different one.
	writeFiles(t, dir, map[string]string{"greet.go": "package greet\n\nfunc Greet(name string) string { return \"Yo\" }\n"})
	f3, err := c.Check(ctx, plan)
	if err != nil {
		t.Fatal(err)
	}
	if f3.Fingerprint() == f1.Fingerprint() {
		t.Errorf("different failures share fingerprint %q", f3.Fingerprint())
	}
}

func TestCheckFilesCLIAndStray(t *testing.T) {
	t.Parallel()
	files := greetProject("Hello, Ada!")
	files["notes.txt"] = "scratch"
	files["__pycache__/x.cpython-312.pyc"] = "x"
	files["greet.go~"] = "backup"
	files["README.md"] = "# greet"
	files["go.sum"] = ""
	files["runs/r1/state.json"] = "{}"
	files["empty.txt"] = ""
	files["keep/old.txt"] = "from before the run"
	m := &fakeModel{replies: map[string][]string{AgentCritic: {"{}", "{}"}}} // invalid twice: findings from the checks
	c, _ := newCritic(t, files, m, WithAllowed("runs/**"), WithBaseline("keep/old.txt"))
	plan := greetPlan()
	plan.Steps[1].Files = append(plan.Steps[1].Files, "empty.txt", "missing.go", "cmd")
	plan.CLI = []string{"go", "run", "./cmd/nothere"}
	f, err := c.Check(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	if f.Verdict != VerdictFail || f.ModelUsed {
		t.Fatalf("verdict %s model %v", f.Verdict, f.ModelUsed)
	}
	if !checkNamed(f, CheckTests).OK {
		t.Errorf("tests should pass: %+v", checkNamed(f, CheckTests))
	}
	fc := checkNamed(f, CheckFiles)
	for _, want := range []string{"empty.txt is empty", "missing.go is missing", "cmd is a folder"} {
		if fc.OK || !strings.Contains(fc.Detail, want) {
			t.Errorf("files check %q lacks %q", fc.Detail, want)
		}
	}
	if cc := checkNamed(f, CheckCLI); cc.OK || !strings.Contains(cc.Detail, "exit code") {
		t.Errorf("cli check = %+v", cc)
	}
	sc := checkNamed(f, CheckStray)
	if sc.OK {
		t.Errorf("stray check passed")
	}
	for _, want := range []string{"notes.txt", "__pycache__/", "greet.go~"} {
		if !strings.Contains(sc.Detail, want) {
			t.Errorf("stray detail %q lacks %q", sc.Detail, want)
		}
	}
	for _, not := range []string{"README", "go.sum", "runs", "keep", "acceptance", "x.cpython"} {
		if strings.Contains(sc.Detail, not) {
			t.Errorf("stray detail %q names %q", sc.Detail, not)
		}
	}
	kinds := map[Kind]int{}
	for _, x := range f.Failures {
		kinds[x.Kind]++
	}
	if kinds[KindMissingFile] != 3 || kinds[KindStrayFile] != 3 || kinds[KindCLI] != 1 {
		t.Errorf("failure kinds = %v", kinds)
	}
}

func TestCheckCancelled(t *testing.T) {
	t.Parallel()
	c, _ := newCritic(t, greetProject("Hello, Ada!"), &fakeModel{replies: map[string][]string{}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Check(ctx, greetPlan()); err == nil || !errors.Is(err, context.Canceled) {
		t.Errorf("Check on a cancelled context = %v, want context.Canceled", err)
	}
}

func TestCheckDeniedTestCommand(t *testing.T) {
	t.Parallel()
	m := &fakeModel{replies: map[string][]string{AgentCritic: {modelPass}}}
	c, _ := newCritic(t, greetProject("Hello, Ada!"), m)
	plan := greetPlan()
	plan.TestCommand = "make test" // not allowed by the policy
	plan.CLI = nil
	f, err := c.Check(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	tc := checkNamed(f, CheckTests)
	if f.Verdict != VerdictFail || tc.OK || !strings.Contains(tc.Detail, "did not run") {
		t.Errorf("verdict %s, tests check %+v", f.Verdict, tc)
	}
	if len(f.Failures) == 0 || f.Failures[0].TestID != "test_command" {
		t.Errorf("failures = %+v", f.Failures)
	}
}

func TestCheckRemovesItsOwnCaches(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"calc.py":                 "def add(a, b):\n    return a + b\n",
		"acceptance/__init__.py":  "",
		"acceptance/test_calc.py": "import unittest\nimport calc\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(calc.add(2, 3), 5)\n",
		"old/__pycache__/w.pyc":   "left by the worker",
	}
	m := &fakeModel{replies: map[string][]string{AgentCritic: {modelPass}}}
	c, dir := newCritic(t, files, m)
	plan := planner.Plan{
		Goal:        "add numbers",
		Steps:       []planner.Step{{ID: 1, Title: "calc", Description: "add", Files: []string{"calc.py", "old/x.py"}, Expected: "x", Acceptance: "y"}},
		TestCommand: "python3 -m unittest discover -s acceptance -t .",
		TestsDir:    "acceptance",
	}
	f, err := c.Check(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	if tc := checkNamed(f, CheckTests); !tc.OK {
		t.Fatalf("tests check = %+v", tc)
	}
	if sc := checkNamed(f, CheckStray); sc.OK || !strings.Contains(sc.Detail, "old/__pycache__/") || strings.Contains(sc.Detail, "acceptance") {
		t.Errorf("stray check = %+v, want only the worker's cache", sc)
	}
	for _, p := range []string{"__pycache__", "acceptance/__pycache__"} {
		if _, err := os.Stat(filepath.Join(dir, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind by the critic's own test run (%v)", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "old", "__pycache__")); err != nil {
		t.Errorf("the worker's cache was removed by the critic: %v", err)
	}
}
