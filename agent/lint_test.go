package agent_test

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/critic"
	"github.com/trioagent/trio/llm"
)

// lintFailure is the critic model's reading of a round the linter failed.
func lintFailure(testID, loc, actual string) llm.Response {
	return text(mustJSON(map[string]any{
		"verdict": "fail",
		"failures": []map[string]string{{"test_id": testID, "location": loc,
			"expected": "no finding", "actual": actual, "kind": "lint"}},
		"suspect_tests": []any{}, "summary": "Fix the linter's finding.",
	}))
}

func TestLintFindingsRepaired(t *testing.T) {
	t.Parallel()
	pyPlan := text(mustJSON(map[string]any{
		"steps": []map[string]any{{"title": "calc", "description": "Write calc.py with add.", "files": []string{"calc.py"},
			"expected": "add adds", "acceptance": "tests pass"}},
		"risks": []string{}, "test_command": "python3 -m unittest discover -s tests -t .", "cli": []string{}, "tests_dir": "tests",
	}))
	pySuite := suite(map[string]string{
		"tests/__init__.py": "",
		"tests/test_calc.py": "import unittest\n\nimport calc\n\n\nclass CalcTest(unittest.TestCase):\n" +
			"    def test_add(self):\n        self.assertEqual(calc.add(2, 3), 5)\n",
	})
	const (
		goUnused = "// Package calc adds.\npackage calc\n\n// Add returns a plus b.\nfunc Add(a, b int) int {\n\tsum := a + b\n\treturn a + b\n}\n"
		pyBroken = "def add(a, b):\n    return (a + b\n"
		pyGood   = "def add(a, b):\n    return a + b\n"
	)
	cases := []struct {
		name, linter, file     string
		line                   int
		message                string
		plan, suite            llm.Response
		broken, fixed          call
		fixedContent, critique string
	}{
		{name: "go vet: unused variable", linter: "go_vet", file: "calc.go", line: 6, message: "declared and not used: sum",
			plan: calcPlan(), suite: calcSuite(), broken: write("calc.go", goUnused), fixed: write("calc.go", calcGood), fixedContent: calcGood},
		{name: "py_compile: syntax error", linter: "py_compile", file: "calc.py", line: 2, message: "SyntaxError",
			plan: pyPlan, suite: pySuite, broken: write("calc.py", pyBroken), fixed: write("calc.py", pyGood), fixedContent: pyGood},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			first := []call{c.broken, finish("written")}
			if c.linter == "go_vet" {
				first = append([]call{write("go.mod", goMod)}, first...)
			}
			m := newFake().
				add(agent.RolePlanner, c.plan).
				add(agent.RoleTestDesigner, c.suite).
				add(agent.RoleWorker,
					calls("", first...),
					calls("What failed: "+c.linter+" at "+c.file+". Likely cause: my code. My last change caused it.", c.fixed, finish("fixed")),
				).
				add(agent.RoleCritic, lintFailure("lint:"+c.linter, c.file, c.message))
			rep := run(t, m, nil, e.opts(agent.WithLint(agent.LintConfig{Enabled: true}))...)
			if rep.Reason != agent.StopCompleted || rep.Metrics.RepairRounds != 1 {
				t.Fatalf("reason %s (%s), %d repair rounds; want completed after one repair", rep.Reason, rep.Detail, rep.Metrics.RepairRounds)
			}
			if got := readFile(t, filepath.Join(e.ws, c.file)); got != c.fixedContent {
				t.Errorf("%s = %q, want the repaired file", c.file, got)
			}
			// The first round's findings: a structured lint failure at
			// file:line, in the repair prompt the Worker read.
			w := m.requestsOf(agent.RoleWorker)
			var prompt string
			for _, msg := range w[1].Messages {
				if strings.Contains(msg.Content, "Findings:") {
					prompt = msg.Content
				}
			}
			loc := c.file + ":" + strconv.Itoa(c.line)
			if !strings.Contains(prompt, "check lint: FAILED") || !strings.Contains(prompt, "blocking "+loc+": "+c.linter+": ") || !strings.Contains(prompt, c.message) {
				t.Errorf("repair prompt lacks the lint finding at %s:\n%s", loc, prompt)
			}
			if !strings.Contains(prompt, "a linter (go vet, gofmt, py_compile") {
				t.Errorf("repair prompt lacks the lint advice (prompts/repair/lint.md):\n%s", prompt)
			}
			// The last check ran the linters too, and they were clean.
			var lint *critic.CheckResult
			for i, ch := range rep.Findings.Checks {
				if ch.Name == critic.CheckLint {
					lint = &rep.Findings.Checks[i]
				}
			}
			if lint == nil || !lint.OK || !strings.Contains(lint.Detail, c.linter+" clean") {
				t.Errorf("last lint check %+v, want %s clean", lint, c.linter)
			}
		})
	}
}

// An advisory linter's finding is listed but does not fail the round;
// named in Blocking, the same finding does.
func TestLintAdvisoryAndBlockingByConfig(t *testing.T) {
	t.Parallel()
	const unformatted = "// Package calc adds.\npackage calc\n\n// Add returns a plus b.\nfunc  Add(a, b int) int { return a + b }\n"
	script := func() *fakeModel {
		return newFake().add(agent.RolePlanner, calcPlan()).add(agent.RoleTestDesigner, calcSuite()).
			add(agent.RoleWorker, calls("", write("go.mod", goMod), write("calc.go", unformatted), finish("written")))
	}
	e := newEnv(t)
	rep := run(t, script(), nil, e.opts(agent.WithLint(agent.LintConfig{Enabled: true}))...)
	if rep.Reason != agent.StopCompleted {
		t.Fatalf("advisory gofmt: reason %s (%s), want completed", rep.Reason, rep.Detail)
	}
	if d := rep.Findings.Checks[2].Detail; rep.Findings.Checks[2].Name != critic.CheckLint || !strings.Contains(d, "advisory calc.go: gofmt: not formatted") {
		t.Errorf("checks %+v, want the advisory gofmt finding in the lint check", rep.Findings.Checks)
	}

	e = newEnv(t)
	m := script().add(agent.RoleCritic, lintFailure("lint:gofmt", "calc.go", "not formatted"))
	a, err := agent.New(m, nil, e.opts(agent.WithLint(agent.LintConfig{Enabled: true, Blocking: []string{"gofmt"}}), agent.WithBudgets(agent.Budgets{MaxRepairRounds: -1}))...)
	if err != nil {
		t.Fatal(err)
	}
	rep, err = a.Run(t.Context(), "Build package calc with Add(a, b int) int.")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Reason != agent.StopChecksFailed || !strings.Contains(rep.Detail, "failed checks: lint") {
		t.Errorf("blocking gofmt: reason %s (%s), want checks_failed on lint", rep.Reason, rep.Detail)
	}
	if _, err := agent.New(newFake(), nil, agent.WithLint(agent.LintConfig{Enabled: true, Blocking: []string{"eslint"}})); err == nil || !strings.Contains(err.Error(), `"eslint" is not a known linter`) {
		t.Errorf("unknown linter: err = %v", err)
	}
}
