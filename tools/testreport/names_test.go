package testreport

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// Every parser names the tests that passed, as far as its output shows
// them: real runs first.
func TestPassedTestsFixtures(t *testing.T) {
	t.Parallel()
	goNames := []string{"example.com/fixture/calc.TestAdd", "example.com/fixture/calc.TestAddTable",
		"example.com/fixture/failing.TestSubOK", "example.com/fixture/panicking.TestFirst"}
	pytestNames := []string{"tests/test_calc.py::test_add", "tests/test_calc.py::TestCalc::test_method_ok", "tests/test_calc.py::test_param[1-1-2]"}
	nodeFail := []string{"adds", "inner ok"}
	tests := map[string][]string{
		"go_json":      goNames,
		"go_json_pass": {"example.com/fixture/calc.TestAdd", "example.com/fixture/calc.TestAddTable"},
		"go_json_more": {"example.com/more/slow.TestQuick"},
		"go_text":      nil, // plain go test prints no passing test
		"go_text_v":    goNames,
		// Without -v or -rA pytest prints no passing names.
		"pytest_fail":         nil,
		"pytest_fail_q":       nil,
		"pytest_fail_ra":      pytestNames,
		"pytest_fail_tbshort": nil,
		"pytest_fail_v":       {"tests/test_calc.py::test_add", "tests/test_calc.py::TestCalc::test_method_ok", "tests/test_calc.py::test_param[1-1-2]"},
		"pytest_pass_q":       nil,
		"pytest_collect":      nil,
		"pytest_collect_q":    nil,
		"pytest_empty":        nil,
		"pytest_empty_q":      nil,
		"unittest_fail_v":     {"test_calc.CalcTest.test_add", "test_calc.OtherTest.test_ok"},
		"unittest_fail":       nil, // dots only
		"unittest_pass_v":     {"test_calc.CalcTest.test_add", "test_calc.CalcTest.test_zero"},
		"unittest_empty":      nil,
		"node_fail_tap":       nodeFail,
		"node_fail_spec":      nodeFail,
		"node_pass_tap":       {"adds", "subtracts"},
		"npm_fail":            nodeFail,
	}
	for _, fr := range fixtureRuns("python3") {
		want, ok := tests[fr.name]
		if !ok {
			t.Errorf("fixture %s has no expected names", fr.name)
			continue
		}
		stdout, stderr, code := fixture(t, fr.name)
		if got := ParseExit(FrameworkOf(fr.argv), stdout, stderr, code).PassedTests; !slices.Equal(got, want) {
			t.Errorf("%s: passed tests %q, want %q", fr.name, got, want)
		}
	}
}

// Forms the fixtures do not show: unittest's docstring line, a test's own
// stderr between its name and its result, Python before 3.11, subtests;
// pytest's xpass; the check marks of other spec reporters; duplicates.
func TestPassedTestsSynthetic(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, framework, out string // out goes to stdout; every parser here reads both streams
		want                 []string
	}{
		{"unittest docstring", FrameworkUnittest, "test_a (t.T.test_a)\nChecks a. ... ok\ntest_b (t.T.test_b) ... ok\n\n" + rule('-') + "\nRan 2 tests in 0.001s\n\nOK\n",
			[]string{"t.T.test_a", "t.T.test_b"}},
		{"unittest output before the result", FrameworkUnittest, "test_a (t.T.test_a) ... warning: noisy\nok\ntest_b (t.T.test_b) ... noisy\nFAIL\n",
			[]string{"t.T.test_a"}},
		{"unittest before 3.11", FrameworkUnittest, "test_a (t.T) ... ok\ntest_b (t.T) ... skipped 'no'\n", []string{"t.T.test_a"}},
		{"unittest subtest", FrameworkUnittest, "test_s (t.T.test_s) ... \n  test_s (t.T.test_s) (i=1) ... FAIL\ntest_t (t.T.test_t) ... ok\n", []string{"t.T.test_t"}},
		{"unittest shadowed", FrameworkUnittest, "\n" + rule('-') + "\nRan 5 tests in 0.000s\n\nOK\n", nil},
		{"pytest xpass and duplicates", FrameworkPytest,
			"t.py::test_a PASSED [ 50%]\nt.py::test_b XPASS [100%]\n" + "=== short test summary info ===\nPASSED t.py::test_a\nXPASS t.py::test_b known\n=== 2 passed in 0.01s ===\n",
			[]string{"t.py::test_a", "t.py::test_b"}},
		{"pytest skipped everything", FrameworkPytest,
			"t.py ss [100%]\n=========================== short test summary info ============================\nSKIPPED [2] t.py: skipped by conftest\n============================== 2 skipped in 0.01s ==============================\n", nil},
		{"spec check marks", FrameworkNode, "  ✓ adds (3 ms)\n  ✔ subtracts (0.2ms)\n  √ divides\n  ✖ fails (1ms)\n", []string{"adds", "subtracts", "divides"}},
		{"tap nested", FrameworkNode, "# Subtest: math\n    ok 1 - inner\n    ok 2 - skipped # SKIP\nok 1 - math\n", []string{"inner", "math"}},
		{"plain counts name nothing", FrameworkGeneric, "Tests: 3 passed, 3 total\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Parse(tt.framework, tt.out, "").PassedTests; !slices.Equal(got, tt.want) {
				t.Errorf("passed tests %q, want %q", got, tt.want)
			}
		})
	}
}

func rule(c byte) string { return strings.Repeat(string(c), 70) }

// The list is bounded, so a run of a huge suite cannot flood a checkpoint.
func TestPassedTestsBounded(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := range maxPassedNames + 10 {
		fmt.Fprintf(&b, "ok %d - t%d\n", i+1, i)
	}
	if n := len(ParseGeneric(b.String(), "").PassedTests); n != maxPassedNames {
		t.Errorf("%d names kept, want %d", n, maxPassedNames)
	}
}

func TestWithTestNames(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want []string }{
		{[]string{"go", "test", "./..."}, []string{"go", "test", "-json", "./..."}},
		{[]string{"python3", "-m", "pytest", "-q"}, []string{"python3", "-m", "pytest", "-q", "-rA"}},
		{[]string{"python3", "-m", "pytest", "-q", "-rs", "tests"}, []string{"python3", "-m", "pytest", "-q", "-rs", "tests", "-rA"}},
		{[]string{"python3", "-m", "pytest", "-rA"}, []string{"python3", "-m", "pytest", "-rA"}},
		{[]string{"python3", "-m", "pytest", "-r", "fEp"}, []string{"python3", "-m", "pytest", "-r", "fEp"}},
		{[]string{"python3", "-m", "pytest", "-rA", "-rf"}, []string{"python3", "-m", "pytest", "-rA", "-rf", "-rA"}},
		{[]string{"pytest", "tests", "--", "-x"}, []string{"pytest", "tests", "-rA", "--", "-x"}},
		{[]string{"env", "A=1", "pytest"}, []string{"env", "A=1", "pytest", "-rA"}},
		{[]string{"python3", "-m", "unittest", "discover", "-s", "tests"}, []string{"python3", "-m", "unittest", "discover", "-s", "tests", "-v"}},
		{[]string{"python3", "-m", "unittest", "discover", "-v"}, []string{"python3", "-m", "unittest", "discover", "-v"}},
		{[]string{"python3", "-m", "unittest", "-v", "-q"}, []string{"python3", "-m", "unittest", "-v", "-q", "-v"}},
		{[]string{"python3", "-m", "unittest"}, []string{"python3", "-m", "unittest", "-v"}},
		{[]string{"python3", "manage.py", "test"}, []string{"python3", "manage.py", "test"}},
		{[]string{"npm", "test"}, []string{"npm", "test"}},
		{[]string{"node", "--test"}, []string{"node", "--test"}},
	}
	for _, tc := range tests {
		in := slices.Clone(tc.in)
		if got := WithTestNames(in); !slices.Equal(got, tc.want) {
			t.Errorf("WithTestNames(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if !slices.Equal(in, tc.in) {
			t.Errorf("WithTestNames changed its argument to %q", in)
		}
	}
}
