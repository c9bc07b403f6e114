package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trioagent/trio/agent"
)

const userGreetTest = `import unittest

from greet import greet


class GreetTest(unittest.TestCase):
    def test_greet(self):
        self.assertEqual(greet("Ada"), %q)
`

const greetPlanReply = `    - output: {"steps": [{"title": "greet module", "description": "greet.py with greet(name)", "files": ["greet.py"], "expected": "greet works", "acceptance": "the tests pass"}], "risks": [], "test_command": "python3 -m unittest discover -s tests -v", "cli": [], "tests_dir": "tests"}
`

// tamperScript: the Worker first tries to overwrite the supplied test with
// write_file (denied: the tests folder is read-only to it), then writes
// code that rewrites the test whenever it is imported; the Critic finds
// the tampering, and the repair removes it.
const tamperScript = `roles:
  planner:
` + greetPlanReply + `  worker:
    - content: "Writing greet.py."
      tool_calls:
        - name: write_file
          arguments: {"path": "tests/test_greet.py", "content": "import unittest\n"}
        - name: write_file
          arguments:
            path: greet.py
            content: |
              import os


              def greet(name):
                  return "Hello, %s!" % name


              _test = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tests", "test_greet.py")
              with open(_test, "w") as f:
                  f.write("import unittest\n\n\nclass GreetTest(unittest.TestCase):\n    def test_greet(self):\n        pass\n")
    - tool_calls:
        - name: finish_step
          arguments: {"note": "greet.py written"}
    - content: "What failed: the acceptance suite check, tests/test_greet.py was rewritten while the tests ran. Cause: greet.py rewrites the test file on import. My last change caused it. Fix: remove that code."
      tool_calls:
        - name: write_file
          arguments:
            path: greet.py
            content: |
              def greet(name):
                  return "Hello, %s!" % name
    - tool_calls:
        - name: finish_step
          arguments: {"note": "greet.py no longer touches the tests"}
  critic:
    - output: {"verdict": "fail", "failures": [{"test_id": "tampering:tests/test_greet.py", "location": "tests/test_greet.py", "expected": "the supplied test unchanged", "actual": "rewritten while the tests ran", "kind": "tampering"}], "suspect_tests": [], "summary": "greet.py rewrites tests/test_greet.py when imported."}
`

// suspectScript: the supplied test wants a greeting the goal does not ask
// for; the Critic suspects it, and the run stops for the person.
const suspectScript = `roles:
  planner:
` + greetPlanReply + `  worker:
    - content: "Writing greet.py."
      tool_calls:
        - name: write_file
          arguments:
            path: greet.py
            content: |
              def greet(name):
                  return "Hello, %s!" % name
    - tool_calls:
        - name: finish_step
          arguments: {"note": "greet.py written"}
  critic:
    - output: {"verdict": "suspect_test", "failures": [{"test_id": "tests/test_greet.py::GreetTest::test_greet", "location": "tests/test_greet.py:9", "expected": "Hello Ada", "actual": "Hello, Ada!", "kind": "assertion"}], "suspect_tests": [{"test_id": "tests/test_greet.py::GreetTest::test_greet", "reason": "the goal asks for 'Hello, Ada!' but the test expects 'Hello Ada'"}], "summary": "The code follows the goal; the test contradicts it."}
`

// userRun runs trio run --tests with script and returns the result, the
// tests folder and the run folder.
func userRun(t *testing.T, script, want string) (result, string, string) {
	t.Helper()
	dir := t.TempDir()
	tests := filepath.Join(dir, "mytests")
	os.MkdirAll(tests, 0o755)
	os.WriteFile(filepath.Join(tests, "test_greet.py"), []byte(strings.ReplaceAll(userGreetTest, "%q", `"`+want+`"`)), 0o644)
	os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(script), 0o644)
	os.WriteFile(filepath.Join(dir, "goal.md"), []byte("A Python module greet.py: greet(name) returns \"Hello, NAME!\".\n"), 0o644)
	r := trio(t, dir, cleanEnv(envScript+"="+filepath.Join(dir, "script.yaml")),
		"run", "--goal-file", "goal.md", "--tests", tests, "--sandbox", "local", "--workspace", "ws", "--runs-dir", "runs", "--quiet")
	runs, _ := filepath.Glob(filepath.Join(dir, "runs", "*"))
	if len(runs) != 1 {
		t.Fatalf("%d run folders; stderr:\n%s", len(runs), r.stderr)
	}
	return r, tests, runs[0]
}

func TestRunTestsTamperingIsAFinding(t *testing.T) {
	t.Parallel()
	r, tests, run := userRun(t, tamperScript, "Hello, Ada!")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	want, _ := os.ReadFile(filepath.Join(tests, "test_greet.py"))
	if !strings.Contains(string(want), `"Hello, Ada!"`) {
		t.Fatalf("the person's test folder changed: %s", want)
	}
	ws := filepath.Join(filepath.Dir(filepath.Dir(run)), "ws")
	for _, p := range []string{filepath.Join(ws, "tests", "test_greet.py"), filepath.Join(run, agent.UserTestsDir, "test_greet.py"),
		filepath.Join(run, agent.SuiteDir, "1", "tests", "test_greet.py")} {
		if got, err := os.ReadFile(p); err != nil || string(got) != string(want) {
			t.Errorf("%s: %q, %v; want the supplied test unchanged", p, got, err)
		}
	}
	trace, _ := os.ReadFile(filepath.Join(run, agent.TraceFile))
	if !strings.Contains(string(trace), `"test_id":"tampering:tests/test_greet.py"`) {
		t.Error("no tampering finding for the supplied test in the trace")
	}
	rep, err := agent.LoadReport(run)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Metrics.RepairRounds != 1 || rep.Metrics.Denials != 1 || rep.Metrics.Roles[agent.RoleTestDesigner].Calls != 0 {
		t.Errorf("metrics %+v: want 1 repair, the denied write_file, no test designer", rep.Metrics)
	}
}

func TestRunTestsSuspectIsReported(t *testing.T) {
	t.Parallel()
	r, tests, run := userRun(t, suspectScript, "Hello Ada")
	if r.code != exitFailed {
		t.Fatalf("exit %d, want 1\n%s", r.code, r.stderr)
	}
	rep, err := agent.LoadReport(run)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Reason != agent.StopChecksFailed || !strings.Contains(rep.Detail, "acceptance test you supplied") || !strings.Contains(rep.Detail, "GreetTest::test_greet") {
		t.Errorf("report %s: %s", rep.Reason, rep.Detail)
	}
	if !strings.Contains(r.stderr, "acceptance test you supplied") {
		t.Errorf("stderr does not tell the person:\n%s", r.stderr)
	}
	got, _ := os.ReadFile(filepath.Join(tests, "test_greet.py"))
	ws, _ := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(run)), "ws", "tests", "test_greet.py"))
	if string(got) != string(ws) || !strings.Contains(string(ws), `"Hello Ada"`) {
		t.Errorf("the supplied test was rewritten: %q", ws)
	}
	if rep.Metrics.TestRepairs != 0 || rep.Metrics.Roles[agent.RoleTestDesigner].Calls != 0 {
		t.Errorf("metrics %+v: want no test repair", rep.Metrics)
	}
}

func TestRunTestsBadFolderExits3(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope")
	os.WriteFile(filepath.Join(dir, "s.yaml"), []byte(suspectScript), 0o644)
	r := trio(t, dir, cleanEnv(envScript+"="+filepath.Join(dir, "s.yaml")), "run", "--goal", "x", "--tests", missing, "--sandbox", "local")
	if r.code != exitConfig || !strings.Contains(r.stderr, missing) {
		t.Errorf("exit %d, want 3 naming %s:\n%s", r.code, missing, r.stderr)
	}
}
