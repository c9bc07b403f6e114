package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/critic"
	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/sandbox/containerd"
)

// trivialCalcTest passes whatever Add does, under the designed test's name.
const trivialCalcTest = "package acceptance\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {}\n"

// calcTampering subtracts, and replaces the acceptance test with
// trivialCalcTest whenever a test binary that imports it starts in the
// tests folder: Worker code that `go test` runs. A refused write is printed,
// so a sandbox that makes the folder read-only shows it.
const calcTampering = "// Package calc adds.\npackage calc\n\nimport (\n\t\"fmt\"\n\t\"os\"\n)\n\n" +
	"func init() {\n\tif _, err := os.Stat(\"calc_test.go\"); err == nil {\n" +
	"\t\tif err := os.WriteFile(\"calc_test.go\", []byte(\"package acceptance\\n\\nimport \\\"testing\\\"\\n\\nfunc TestAdd(t *testing.T) {}\\n\"), 0o644); err != nil {\n" +
	"\t\t\tfmt.Fprintln(os.Stderr, \"tamper refused:\", err)\n\t\t}\n\t}\n}\n\n" +
	"// Add returns a plus b.\nfunc Add(a, b int) int { return a - b }\n"

// tamperingScript: the Worker writes the tampering implementation and runs
// the tests (which rewrites them), then in its repair runs them again.
func tamperingScript() *fakeModel {
	return newFake().
		add(agent.RolePlanner, calcPlan()).
		add(agent.RoleTestDesigner, calcSuite()).
		add(agent.RoleWorker,
			calls("", write("go.mod", goMod), write("calc.go", calcTampering), runTests(), finish("calc written")),
			calls("What failed: TestAdd. Likely cause: none, my tests pass. My last change did not cause it.", runTests(), finish("tests pass here")),
		).
		add(agent.RoleCritic, failing("TestAdd"), failing("TestAdd"))
}

// tamperingOutcome checks what must hold after a run whose Worker code
// rewrote the acceptance tests: not completed, the tests in the workspace
// and in the run folder are the designed ones, and the findings name the
// tampering. refusedOK accepts, instead of the finding, a sandbox that
// refused the write (a read-only tests folder): then the restored tests
// simply failed.
func tamperingOutcome(t *testing.T, e env, runID string, rep *agent.Report, refusedOK bool) {
	t.Helper()
	if rep.Reason == agent.StopCompleted || rep.Metrics.Completed || rep.Status == "completed" {
		t.Fatalf("the run completed with its tests rewritten: %s (%s)", rep.Reason, rep.Detail)
	}
	if got := readFile(t, filepath.Join(e.ws, "acceptance", "calc_test.go")); got != calcTest {
		t.Errorf("the workspace's acceptance test is %q, want the designed one", got)
	}
	if got := readFile(t, filepath.Join(e.runs, runID, agent.SuiteDir, "1", "acceptance", "calc_test.go")); got != calcTest {
		t.Errorf("the run folder's copy is %q, want the designed one", got)
	}
	f := rep.Findings
	if f == nil || f.Passed() {
		t.Fatalf("last findings %+v, want a failure", f)
	}
	tampered := slices.ContainsFunc(f.Failures, func(x critic.Failure) bool {
		return x.Kind == critic.KindTampering && x.TestID == "tampering:acceptance/calc_test.go"
	})
	suiteFailed := slices.ContainsFunc(f.FailedChecks(), func(c critic.CheckResult) bool { return c.Name == critic.CheckSuite })
	if tampered && suiteFailed {
		return
	}
	if refusedOK && strings.Contains(readFile(t, filepath.Join(e.runs, runID, agent.TraceFile)), "tamper refused") {
		t.Logf("the sandbox refused the rewrite, so there was nothing to restore: %s", rep.Detail)
		return
	}
	t.Errorf("findings %+v (failed checks %+v): want a tampering failure for acceptance/calc_test.go", f.Failures, f.FailedChecks())
}

// The Must-show, local sandbox: Worker code rewrites the acceptance test
// into a trivially passing one and Add is wrong; the run ends with a
// tampering finding and not COMPLETED.
func TestTamperingNeverCompletesLocal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rep := run(t, tamperingScript(), nil, e.opts()...)
	tamperingOutcome(t, e, "run", rep, false)
	if rep.Reason != agent.StopSameFailure {
		t.Errorf("reason %s (%s), want the same failure twice", rep.Reason, rep.Detail)
	}
	// The Worker was told: its repair prompt names the tampering.
	var told bool
	for _, m := range readHistory(t, e) {
		told = told || (m.Role == llm.RoleUser && strings.Contains(m.Content, "[tampering] tampering:acceptance/calc_test.go"))
	}
	if !told {
		t.Error("the Worker's repair prompt does not name the tampering")
	}
}

func readHistory(t *testing.T, e env) []llm.Message {
	t.Helper()
	var out []llm.Message
	for _, l := range strings.Split(strings.TrimSpace(readFile(t, filepath.Join(e.runs, "run", agent.HistoryFile))), "\n") {
		var m llm.Message
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// The Must-show, containerd: the same run. On a sandbox that binds the
// tests folder read-only the rewrite is refused instead; either way the
// run does not complete. CI provides containerd; there a missing one fails.
func TestTamperingNeverCompletesContainerd(t *testing.T) {
	t.Parallel()
	if err := containerd.Available(context.Background(), ""); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and containerd is unreachable: %v", err)
		}
		t.Skipf("containerd unreachable (set %s; CI=true makes this a failure): %v", containerd.AddressEnv, err)
	}
	e := newEnv(t)
	id := "tampering-containerd"
	sc := agent.WithSandboxConfig(agent.SandboxConfig{Kind: agent.SandboxContainerd,
		Containerd: containerd.Config{StateDir: filepath.Join(t.TempDir(), "sandbox-state")}})
	a, err := agent.New(tamperingScript(), nil, e.folderOpts(sc, agent.WithRunID(id))...)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := a.Run(context.Background(), "Build package calc with Add(a, b int) int.")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rep.Sandbox, "containerd; enforced: ") {
		t.Fatalf("sandbox %q, want containerd", rep.Sandbox)
	}
	tamperingOutcome(t, e, id, rep, true)
}

// A run cut off after the Worker's code rewrote the tests: Resume restores
// them before anything else runs, and the next check still reports the
// tampering. A run folder copy that no longer matches the checkpoint stops
// Resume with an error instead of trusting either copy.
func TestTamperingFoundOnResume(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name        string
		corruptCopy bool
	}{{"restored and reported", false}, {"run folder copy changed", true}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			a, err := agent.New(tamperingScript(), nil, e.opts(agent.WithObserver(func(ev agent.Event) {
				if ev.Kind == agent.EventToolCall && ev.Role == agent.RoleWorker && ev.Tool == "run_tests" {
					cancel()
				}
			}))...)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := a.Run(ctx, "Build package calc with Add(a, b int) int.")
			if err != nil || rep.Reason != agent.StopInterrupted {
				t.Fatalf("first session: %v, %+v", err, rep)
			}
			if got := readFile(t, filepath.Join(e.ws, "acceptance", "calc_test.go")); got != trivialCalcTest {
				t.Fatalf("the Worker's code did not rewrite the test: %q", got)
			}
			dir := filepath.Join(e.runs, "run")
			if tt.corruptCopy {
				if err := os.WriteFile(filepath.Join(dir, agent.SuiteDir, "1", "acceptance", "calc_test.go"), []byte(trivialCalcTest), 0o644); err != nil {
					t.Fatal(err)
				}
				_, err := agent.Resume(context.Background(), dir, tamperingScript(), nil, local)
				if err == nil || !strings.Contains(err.Error(), "does not match") {
					t.Fatalf("Resume with a changed copy: %v, want an error saying it does not match", err)
				}
				return
			}
			var warnings []string
			rep, err = agent.Resume(context.Background(), dir, tamperingScript(), nil, local, agent.WithObserver(func(ev agent.Event) {
				if ev.Kind == agent.EventWarning {
					warnings = append(warnings, ev.Message)
				}
			}))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(warnings, func(w string) bool { return strings.Contains(w, "acceptance/calc_test.go modified") }) {
				t.Errorf("warnings %q, want one saying the tests were restored on resume", warnings)
			}
			tamperingOutcome(t, e, "run", rep, false)
		})
	}
}

// A runner the project's code shadowed or cut short reports success
// without running the designed tests: the run does not complete, and the
// findings name each designed test that was not reported passed.
func TestShadowedRunnerNeverCompletes(t *testing.T) {
	t.Parallel()
	pySuite := suite(map[string]string{
		"tests/__init__.py": "",
		"tests/test_calc.py": "import unittest\n\nimport calc\n\n\nclass CalcTest(unittest.TestCase):\n" +
			"    def test_add(self):\n        self.assertEqual(calc.add(2, 3), 5)\n",
	})
	plan := func(files []string, cmd, testsDir string) llm.Response {
		return text(mustJSON(map[string]any{
			"steps": []map[string]any{{"title": "calc", "description": "Write calc.", "files": files, "expected": "it adds", "acceptance": "tests pass"}},
			"risks": []string{}, "test_command": cmd, "cli": []string{}, "tests_dir": testsDir,
		}))
	}
	tests := []struct {
		name    string
		plan    llm.Response
		suite   llm.Response
		writes  []call
		missing string
	}{
		{
			name:  "os.Exit(0) in an init",
			plan:  plan([]string{"go.mod", "calc.go", "calc_test.go"}, "go test ./...", "acceptance"),
			suite: calcSuite(),
			writes: []call{write("go.mod", goMod),
				write("calc.go", "// Package calc adds.\npackage calc\n\nimport (\n\t\"os\"\n\t\"strings\"\n)\n\n"+
					"func init() {\n\tif strings.HasSuffix(os.Args[0], \"acceptance.test\") {\n\t\tos.Exit(0)\n\t}\n}\n\n"+
					"// Add returns a plus b.\nfunc Add(a, b int) int { return a - b }\n"),
				write("calc_test.go", "package calc\n\nimport \"testing\"\n\nfunc TestOwn(t *testing.T) {}\n")},
			missing: "acceptance/calc_test.go::TestAdd",
		},
		{
			name:  "a workspace unittest package",
			plan:  plan([]string{"calc.py", "unittest/__init__.py", "unittest/__main__.py"}, "python3 -m unittest discover -s tests -t .", "tests"),
			suite: pySuite,
			writes: []call{write("calc.py", "def add(a, b):\n    return a - b\n"), write("unittest/__init__.py", "# shadows the standard library\n"),
				write("unittest/__main__.py", "import sys\nsys.stderr.write('.\\n' + '-' * 70 + '\\nRan 1 test in 0.000s\\n\\nOK\\n')\n")},
			missing: "tests/test_calc.py::CalcTest::test_add",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			m := newFake().add(agent.RolePlanner, tt.plan).add(agent.RoleTestDesigner, tt.suite).
				add(agent.RoleWorker,
					calls("", append(tt.writes, finish("written"))...),
					calls("What failed: "+tt.missing+". Likely cause: unknown. My last change may have caused it.", finish("nothing to change"))).
				add(agent.RoleCritic, failing("x"), failing("x"))
			rep := run(t, m, nil, e.opts()...)
			if rep.Reason == agent.StopCompleted || rep.Findings == nil || rep.Findings.Passed() {
				t.Fatalf("the run completed on a shadowed runner: %s (%s)", rep.Reason, rep.Detail)
			}
			if !slices.ContainsFunc(rep.Findings.Failures, func(x critic.Failure) bool { return x.Kind == critic.KindNotRun && x.TestID == tt.missing }) {
				t.Errorf("failures %+v, want %s not_run", rep.Findings.Failures, tt.missing)
			}
			var tests critic.CheckResult
			for _, c := range rep.Findings.Checks {
				if c.Name == critic.CheckTests {
					tests = c
				}
			}
			if tests.OK || !strings.Contains(tests.Detail, "0 of 1 acceptance tests passed by name") {
				t.Errorf("tests check %+v", tests)
			}
			// The names alone stop it: every other check passed.
			for _, c := range rep.Findings.Checks {
				if c.Name != critic.CheckTests && !c.OK {
					t.Errorf("check %s failed too: %s", c.Name, c.Detail)
				}
			}
		})
	}
}

// The suite is kept per version in the run folder: a suspect_test repair
// adds version 2 beside version 1.
func TestSuiteKeptPerVersion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	wrongTest := strings.Replace(calcTest, "{2, 3, 5}", "{2, 3, 6}", 1)
	m := newFake().add(agent.RolePlanner, calcPlan()).
		add(agent.RoleTestDesigner, suite(map[string]string{"acceptance/calc_test.go": wrongTest}), calcSuite()).
		add(agent.RoleWorker, calls("", write("go.mod", goMod), write("calc.go", calcGood), finish("written"))).
		add(agent.RoleCritic, text(mustJSON(map[string]any{
			"verdict": "suspect_test", "failures": []map[string]string{{"test_id": "TestAdd", "location": "acceptance/calc_test.go:11",
				"expected": "6", "actual": "5", "kind": "assertion"}},
			"suspect_tests": []map[string]string{{"test_id": "TestAdd", "reason": "2 + 3 is 5"}},
			"summary":       "The test is wrong.",
		})))
	rep := run(t, m, nil, e.opts()...)
	if rep.Reason != agent.StopCompleted || rep.SuiteVersion != 2 {
		t.Fatalf("reason %s (%s), suite version %d", rep.Reason, rep.Detail, rep.SuiteVersion)
	}
	for v, want := range map[string]string{"1": wrongTest, "2": calcTest} {
		if got := readFile(t, filepath.Join(e.runs, "run", agent.SuiteDir, v, "acceptance", "calc_test.go")); got != want {
			t.Errorf("suite version %s in the run folder: %q, want %q", v, got, want)
		}
	}
	entries, err := os.ReadDir(filepath.Join(e.runs, "run", agent.SuiteDir))
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range entries {
		if en.Name() != "1" && en.Name() != "2" {
			t.Errorf("left in the suite folder: %s", en.Name())
		}
	}
	if _, err := os.Stat(filepath.Join(e.runs, "run", agent.SuiteDir, "3")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("version 3: %v", err)
	}
}
