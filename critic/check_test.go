package critic

import (
	"testing"

	"github.com/trioagent/trio/tools"
	"github.com/trioagent/trio/tools/testreport"
)

// The report comes from Result.Tests, whatever the text around it says;
// without one the streams are parsed.
func TestParseReport(t *testing.T) {
	t.Parallel()
	rep := testreport.Report{Framework: "pytest", Passed: 2, Failed: 1,
		Failures: []testreport.Failure{{Name: "test_x", File: "tests/test_x.py", Line: 3, Message: "assert 1 == 2"}}}
	tests := []struct {
		name string
		res  tools.Result
		want testreport.Report
	}{
		{"field, with a hint after the JSON", tools.Result{Tests: &rep, ExitCode: 1,
			Output: "pytest: 2 passed, 1 failed\n$ python3 -m pytest\nexit code 1; {\"passed\":9}\npytest is not installed here"}, rep},
		{"field, no JSON in the output", tools.Result{Tests: &rep, Output: "whatever"}, rep},
		{"no field: the streams", tools.Result{ExitCode: 1, Stdout: "FAILED tests/test_y.py::test_y - assert 0\n1 failed, 4 passed in 0.01s\n"},
			testreport.Report{Passed: 4, Failed: 1}},
	}
	for _, tt := range tests {
		got := parseReport(tt.res)
		if got.Passed != tt.want.Passed || got.Failed != tt.want.Failed || len(got.Failures) != len(tt.want.Failures) && tt.res.Tests != nil {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
