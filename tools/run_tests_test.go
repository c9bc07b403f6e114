package tools_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/trioagent/trio/tools"
	"github.com/trioagent/trio/tools/testreport"
)

const calcGo = "package calc\n\nfunc Add(a, b int) int { return a + b }\n"

func TestRunTestsGo(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{
		"go.mod":  "module example.com/calc\n\ngo 1.22\n",
		"calc.go": calcGo,
		"calc_test.go": "package calc\n\nimport \"testing\"\n\n" +
			"func TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"bad\")\n\t}\n}\n\n" +
			"func TestWrong(t *testing.T) {\n\tif Add(2, 2) != 5 {\n\t\tt.Errorf(\"Add(2, 2) = %d, want 5\", Add(2, 2))\n\t}\n}\n",
	})
	// Detected: go test ./... with -json added.
	res, eff := run(t, ws, tools.RunTestsName, obj{})
	if len(eff) != 1 || eff[0].Kind != tools.EffectExec || eff[0].Command.Line != "go test -json ./..." {
		t.Fatalf("effects = %+v", eff)
	}
	if res.OK || !strings.Contains(res.Output, "go: 1 passed, 1 failed") {
		t.Fatalf("result = %+v", res)
	}
	js := res.Output[strings.Index(res.Output, "{"):]
	var rep struct {
		Passed, Failed int
		Failures       []struct {
			Name, File, Message string
			Line                int
		}
	}
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatalf("report JSON: %v in %q", err, js)
	}
	if rep.Passed != 1 || rep.Failed != 1 || len(rep.Failures) != 1 {
		t.Fatalf("report = %+v", rep)
	}
	f := rep.Failures[0]
	if !strings.Contains(f.Name, "TestWrong") || !strings.HasSuffix(f.File, "calc_test.go") || f.Line != 13 || !strings.Contains(f.Message, "want 5") {
		t.Errorf("failure = %+v", f)
	}
	if res.Stdout != "" {
		t.Errorf("raw -json stdout passed to the model: %d bytes", len(res.Stdout))
	}
	// Programs read the same report from Result.Tests; it survives a
	// checkpoint and stays out of what the model reads.
	if res.Tests == nil || res.Tests.Passed != 1 || res.Tests.Failed != 1 || len(res.Tests.Failures) != 1 ||
		res.Tests.Failures[0] != (testreport.Failure{Name: f.Name, File: f.File, Line: f.Line, Message: f.Message, Kind: res.Tests.Failures[0].Kind}) {
		t.Errorf("Result.Tests = %+v, want the report in Output", res.Tests)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var back tools.Result
	if err := json.Unmarshal(b, &back); err != nil || back.Tests == nil {
		t.Errorf("round trip: %v %+v", err, back.Tests)
	} else if got, want := mustJSON(t, *back.Tests), mustJSON(t, *res.Tests); got != want {
		t.Errorf("round trip: %s, want %s", got, want)
	}
	if strings.Contains(res.ForModel(), `"tests":`) {
		t.Errorf("the model reads the report twice: %s", res.ForModel())
	}
	// Programs get the passed names; the model's text leaves them out.
	if !slices.Equal(res.Tests.PassedTests, []string{"example.com/calc.TestAdd"}) {
		t.Errorf("passed tests %q, want example.com/calc.TestAdd", res.Tests.PassedTests)
	}
	if strings.Contains(res.Output, "passed_tests") {
		t.Errorf("the model's output lists the passed names: %s", res.Output)
	}

	// An explicit command that passes; -json is not added twice.
	res, eff = run(t, ws, tools.RunTestsName, obj{"command": "go test -json -run TestAdd ."})
	if !res.OK || eff[0].Command.Line != "go test -json -run TestAdd ." || !strings.Contains(res.Output, "1 passed, 0 failed") {
		t.Errorf("passing run = %+v %+v", res, eff)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Other tools carry no report.
func TestResultTestsOnlyFromRunTests(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, nil)
	if res, _ := run(t, ws, tools.RunCommandName, obj{"command": "echo ok"}); !res.OK || res.Tests != nil {
		t.Errorf("run_command: %+v", res)
	}
}

func TestRunTestsNothingDetected(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{"notes.txt": "x"})
	res, _ := run(t, ws, tools.RunTestsName, obj{})
	if !strings.Contains(res.Output, `argument "command": required here`) {
		t.Errorf("result = %+v", res)
	}
}

// A unittest command without -v gets it, so that the report names the
// tests that passed; the command shown and judged is the one that ran.
func TestRunTestsUnittestNames(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{
		"calc.py":            "def add(a, b):\n    return a + b\n",
		"tests/__init__.py":  "",
		"tests/test_calc.py": "import unittest\n\nimport calc\n\n\nclass CalcTest(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(calc.add(2, 3), 5)\n\n    def test_zero(self):\n        \"\"\"Zero is neutral.\"\"\"\n        self.assertEqual(calc.add(0, 0), 0)\n",
	})
	res, eff := run(t, ws, tools.RunTestsName, obj{"command": "python3 -m unittest discover -s tests -t ."})
	if len(eff) != 1 || eff[0].Command.Line != "python3 -m unittest discover -s tests -t . -v" {
		t.Fatalf("effects = %+v", eff)
	}
	if !res.OK || res.Tests == nil {
		t.Fatalf("result = %+v", res)
	}
	want := []string{"tests.test_calc.CalcTest.test_add", "tests.test_calc.CalcTest.test_zero"}
	if !slices.Equal(res.Tests.PassedTests, want) {
		t.Errorf("passed tests %q, want %q", res.Tests.PassedTests, want)
	}
}
