package critic

import (
	"testing"

	"github.com/trioagent/trio/tools/testreport"
)

func TestWithRecords(t *testing.T) {
	t.Parallel()
	rep := &testreport.Report{
		PassedTests: []string{"m/acceptance.TestA", "m/acceptance.TestB"},
		Durations:   map[string]float64{"m/acceptance.TestA": 0.25},
		Failures:    []testreport.Failure{{Name: "TestC", Seconds: 1.5}},
	}
	f := Findings{Verdict: VerdictFail, Failures: []Failure{{TestID: "TestC"}, {TestID: "file:x.go"}}}.withRecords(rep)
	want := []PassedTest{{Name: "m/acceptance.TestA", Seconds: 0.25}, {Name: "m/acceptance.TestB"}}
	if len(f.PassedTests) != 2 || f.PassedTests[0] != want[0] || f.PassedTests[1] != want[1] {
		t.Errorf("passed %+v, want %+v", f.PassedTests, want)
	}
	if f.Failures[0].Seconds != 1.5 || f.Failures[1].Seconds != 0 {
		t.Errorf("failures %+v, want TestC's time only", f.Failures)
	}
	if f.Fingerprint() != (Findings{Verdict: VerdictFail, Failures: []Failure{{TestID: "TestC"}, {TestID: "file:x.go"}}}).Fingerprint() {
		t.Error("the records changed the fingerprint: reruns of one failure would not match")
	}
	if g := (Findings{}).withRecords(nil); g.PassedTests != nil {
		t.Errorf("no report: %+v", g)
	}
}
