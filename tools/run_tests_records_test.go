package tools_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/trioagent/trio/tools"
)

// A parsed report covers unittest's stderr: the result keeps a short,
// folded tail of it instead of repeating every line next to the report.
func TestRunTestsStderrCoveredByReport(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("import sys\nimport unittest\n\n\nclass T(unittest.TestCase):\n")
	for i := range 60 {
		fmt.Fprintf(&b, "    def test_case_with_a_long_name_%02d(self):\n        self.assertTrue(True)\n\n", i)
	}
	b.WriteString("    def test_noisy(self):\n        for _ in range(500):\n            sys.stderr.write('retrying connection\\n')\n        self.assertEqual(1, 2)\n")
	ws := newWorkspace(t, map[string]string{"test_x.py": b.String()})
	res, _ := run(t, ws, tools.RunTestsName, obj{"command": "python3 -m unittest -v"})
	if res.Tests == nil || res.Tests.Passed != 60 || res.Tests.Failed != 1 {
		t.Fatalf("report %+v, want 60 passed and 1 failed", res.Tests)
	}
	if len(res.Stderr) > 700 || !strings.Contains(res.Stderr, "bytes of stderr left out: the report above covers them") {
		t.Errorf("stderr kept %d bytes, want a short tail with a note:\n%s", len(res.Stderr), res.Stderr)
	}
	if !strings.Contains(res.Tests.Failures[0].Message, "1 != 2") {
		t.Errorf("failure %+v lost its message", res.Tests.Failures[0])
	}
}

func TestRunTestsFoldsRepeatedLines(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{"test_x.py": "import sys\nimport unittest\n\n\nclass T(unittest.TestCase):\n" +
		"    def test_spin(self):\n        for _ in range(213):\n            print('waiting')\n"})
	res, _ := run(t, ws, tools.RunTestsName, obj{"command": "python3 -m unittest -v"})
	if !strings.Contains(res.Stdout, "waiting\n… same line 212 more times") || strings.Count(res.Stdout, "waiting") != 1 {
		t.Errorf("stdout not folded:\n%s", res.Stdout)
	}
}

// go test -json gives every test's time: the passed tests' by name, a
// failure's on the failure.
func TestRunTestsDurations(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{
		"go.mod":  "module example.com/calc\n\ngo 1.22\n",
		"calc.go": calcGo,
		"calc_test.go": "package calc\n\nimport (\n\t\"testing\"\n\t\"time\"\n)\n\n" +
			"func TestSlow(t *testing.T) { time.Sleep(120 * time.Millisecond) }\n\n" +
			"func TestFast(t *testing.T) {}\n\n" +
			"func TestBad(t *testing.T) { time.Sleep(60 * time.Millisecond); t.Fatal(\"bad\") }\n",
	})
	res, _ := run(t, ws, tools.RunTestsName, obj{})
	d := res.Tests.Durations
	if d["example.com/calc.TestSlow"] < 0.1 || d["example.com/calc.TestFast"] > 0.05 || len(d) != 2 {
		t.Errorf("durations %v, want TestSlow ≥ 0.1s and TestFast near 0", d)
	}
	if f := res.Tests.Failures; len(f) != 1 || f[0].Seconds < 0.05 {
		t.Errorf("failures %+v, want TestBad with its time", f)
	}
	if strings.Contains(res.Output, "durations") {
		t.Errorf("the model's report carries the durations map: %s", res.Output)
	}
}
