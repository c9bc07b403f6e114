package critic

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestChangesAgainstBaseline(t *testing.T) {
	t.Parallel()
	c, dir := newCritic(t, map[string]string{"keep.go": "package k\n", "edit.go": "package e\n", "gone.go": "package g\n"}, &fakeModel{})
	sums, err := FileSums(os.DirFS(dir), 100)
	if err != nil {
		t.Fatal(err)
	}
	WithBaselineSums(sums)(c)
	writeFiles(t, dir, map[string]string{"edit.go": "package e // changed\n", "new.go": "package n\n",
		"acceptance/a_test.go": "package a\n", "__pycache__/x.pyc": "x", "scratch.tmp": "t"})
	if err := os.Remove(filepath.Join(dir, "gone.go")); err != nil {
		t.Fatal(err)
	}
	got, err := c.Changes(greetPlan())
	if err != nil {
		t.Fatal(err)
	}
	want := []ChangedFile{{"edit.go", "modified"}, {"gone.go", "deleted"}, {"new.go", "added"}}
	if len(got) != len(want) {
		t.Fatalf("changes %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("change %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestReviewInvalidTwiceIsAnError(t *testing.T) {
	t.Parallel()
	m := &fakeModel{replies: map[string][]string{AgentReviewer: {
		`{"score": 11, "findings": [], "summary": "s"}`,
		`{"score": 5, "findings": [{"severity": "severe", "category": "security", "location": "a.go", "problem": "p", "fix": "f"}], "summary": "s"}`,
	}}}
	c, _ := newCritic(t, map[string]string{"a.go": "package a\n"}, m)
	_, err := c.Review(context.Background(), greetPlan())
	if err == nil || !strings.Contains(err.Error(), "findings[0].severity") || !strings.Contains(err.Error(), `"severe"`) {
		t.Fatalf("err = %v, want the second reply's problem", err)
	}
	if n := m.calls(AgentReviewer); n != 2 {
		t.Errorf("%d reviewer calls, want 2 (one re-ask)", n)
	}
	if !strings.Contains(m.reqs[1].Messages[len(m.reqs[1].Messages)-1].Content, "score: 11 is not between 0 and 10") {
		t.Errorf("re-ask does not name the first problem: %+v", m.reqs[1].Messages)
	}
}

func TestWithReview(t *testing.T) {
	t.Parallel()
	rev := Review{Score: 3, Findings: []ReviewFinding{
		{Severity: SeverityMedium, Category: "quality", Location: "a.go:3", Problem: "dup"},
		{Severity: SeverityCritical, Category: "security", Location: "a.go:9", Problem: "shell injection", Fix: "pass argv"},
	}}
	pass := Findings{Verdict: VerdictPass, Checks: []CheckResult{{Name: CheckTests, OK: true}}}
	fail := Findings{Verdict: VerdictFail, Checks: []CheckResult{{Name: CheckTests, OK: false}}, Failures: []Failure{{TestID: "TestX", Kind: KindAssertion}}}
	for _, c := range []struct {
		name      string
		in        Findings
		blockAt   Severity
		pass      bool
		failures  int
		blocking  bool
		reviewChk bool
	}{
		{"advisory", pass, "", true, 0, false, false},
		{"an unknown threshold blocks nothing", pass, Severity("none"), true, 0, false, false},
		{"critical blocks at high", pass, SeverityHigh, false, 1, true, true},
		{"medium and critical block at low", pass, SeverityLow, false, 2, true, true},
		{"a failing round stays failing", fail, SeverityHigh, false, 1, false, false},
	} {
		got := c.in.WithReview(rev, c.blockAt)
		if got.Passed() != c.pass || len(got.Failures) != c.failures || got.Review == nil || got.Review.Blocking != c.blocking {
			t.Errorf("%s: verdict %s, %d failures, review %+v", c.name, got.Verdict, len(got.Failures), got.Review)
		}
		if has := len(got.FailedChecks()) > 0 && got.FailedChecks()[len(got.FailedChecks())-1].Name == CheckReview; has != c.reviewChk {
			t.Errorf("%s: review check %v, want %v", c.name, has, c.reviewChk)
		}
	}
	minor := Review{Findings: rev.Findings[:1]}
	if got := pass.WithReview(minor, SeverityHigh); !got.Passed() || got.Review.Blocking {
		t.Errorf("a medium finding blocked at high: %+v", got)
	}
	if pass.Review != nil || len(pass.Checks) != 1 {
		t.Error("WithReview changed its receiver's slices")
	}
}
