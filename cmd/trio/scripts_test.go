package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A script with too few replies for a role stops the run as
// out_of_replies naming the role, through the loopback provider, not as a
// model error; the run can be resumed once replies are added.
func TestScriptOutOfReplies(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	head := `roles:
  planner:
    - output:
        steps: [{title: greet, description: Write greet.py., files: [greet.py], expected: greet greets, acceptance: tests pass}]
        risks: []
        test_command: python3 -m unittest discover -s tests -v
        cli: []
        tests_dir: tests
  test_designer:
    - output:
        notes: one case
        files:
          - path: tests/test_greet.py
            content: |
              import unittest

              from greet import greet


              class GreetTest(unittest.TestCase):
                  def test_name(self):
                      self.assertEqual(greet("Ada"), "Hello, Ada!")
  worker:
    - tool_calls:
        - name: write_file
          arguments: {path: greet.py, content: "def greet(name):\n    return 'Hello, ' + name + '!'\n"}
`
	script := filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(script, []byte(head), 0o644); err != nil {
		t.Fatal(err)
	}
	env := cleanEnv(envScript + "=" + script)
	r := trio(t, dir, env, "run", "--goal", "greet.py with greet(name)", "--sandbox", "local", "--quiet", "--runs-dir", "runs")
	if r.code != exitFailed || !strings.Contains(r.stderr, "(out_of_replies)") || !strings.Contains(r.stderr, "no reply left for role worker") ||
		!strings.Contains(r.stderr, "turn 2 asked for more") || strings.Contains(r.stderr, "model_error") || !strings.Contains(r.stderr, "trio resume") {
		t.Fatalf("exit %d, want 1 with out_of_replies naming the worker and how to resume:\n%s", r.code, r.stderr)
	}
	// Add the missing reply and resume: the run completes.
	more := head + `    - tool_calls:
        - name: finish_step
          arguments: {note: done}
`
	if err := os.WriteFile(script, []byte(more), 0o644); err != nil {
		t.Fatal(err)
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "runs", "*"))
	if len(runs) != 1 {
		t.Fatalf("runs: %v", runs)
	}
	r = trio(t, dir, env, "resume", runs[0], "--quiet")
	if r.code != exitOK {
		t.Errorf("resume after adding the reply: exit %d\n%s", r.code, r.stderr)
	}
}

// Every refused plan is shown, on stderr, in inspect and in report.md,
// not only the last one.
func TestEveryPlanRejectionShown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "script.yaml")
	src := `roles:
  planner:
    - output: {steps: [], risks: [], test_command: "", cli: [], tests_dir: ""}
    - content: "no plan from me"
`
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	r := trio(t, dir, cleanEnv(envScript+"="+script), "run", "--goal", "anything", "--sandbox", "local", "--runs-dir", "runs")
	if r.code != exitFailed || !strings.Contains(r.stderr, "(plan_invalid)") {
		t.Fatalf("exit %d, want 1 plan_invalid:\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"plan 1 rejected: Your plan cannot be used: - steps", "plan 2 rejected:"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "runs", "*"))
	if len(runs) != 1 {
		t.Fatalf("runs: %v", runs)
	}
	in := trio(t, dir, nil, "inspect", runs[0])
	if !strings.Contains(in.stdout, "Plan rejections (2)\n  1. Your plan cannot be used: - steps") || !strings.Contains(in.stdout, "\n  2. planner: the model's plan was invalid twice") {
		t.Errorf("inspect:\n%s", in.stdout)
	}
	// The model each role's replies came from.
	if !strings.Contains(in.stdout, "planner") || !strings.Contains(in.stdout, "Model, tokens and cost per role") {
		t.Errorf("inspect lacks the models per role:\n%s", in.stdout)
	}
	md, _ := os.ReadFile(filepath.Join(runs[0], "report.md"))
	if strings.Count(string(md), "\n1. Your plan cannot be used") != 1 || !strings.Contains(string(md), "\n2. planner: the model's plan was invalid twice") {
		t.Errorf("report.md:\n%s", md)
	}
}
