package agent_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/critic"
	"github.com/trioagent/trio/llm"
)

// calcWithKey passes every test but ships a hard-coded credential: only a
// reviewer can catch it.
const calcWithKey = calcGood + "\n// apiKey authenticates the service.\nconst apiKey = \"sk-live-0123456789\"\n"

func review(score int, findings ...map[string]string) llm.Response {
	if findings == nil {
		findings = []map[string]string{}
	}
	return text(mustJSON(map[string]any{"score": score, "findings": findings, "summary": "reviewed the change"}))
}

var keyFinding = map[string]string{"severity": "high", "category": "security", "location": "calc.go:7",
	"problem": "hard-coded credential const apiKey = \"sk-live-…\"", "fix": "remove the constant; read the key from the environment"}

// reviewedRun is the calc run whose tests pass on the first check while
// calc.go holds a key; with a blocking reviewer the Worker removes it in
// one review round.
func reviewedRun() *fakeModel {
	return newFake().
		add(agent.RolePlanner, calcPlan()).
		add(agent.RoleTestDesigner, calcSuite()).
		add(agent.RoleWorker,
			calls("", write("go.mod", goMod), write("calc.go", calcWithKey), finish("calc written")),
			calls("What failed: the reviewer found a hard-coded credential in calc.go:7. Likely cause: I left apiKey in. My last change caused it.",
				write("calc.go", calcGood), finish("key removed")),
		).
		add(agent.RoleReviewer, review(4, keyFinding), review(9))
}

func TestReviewBlockingSendsWorkerBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := reviewedRun()
	rep := run(t, m, nil, e.opts(agent.WithReview(agent.ReviewConfig{Enabled: true, BlockAt: critic.SeverityHigh}))...)
	if rep.Reason != agent.StopCompleted {
		t.Fatalf("reason %s (%s), want completed", rep.Reason, rep.Detail)
	}
	if got := readFile(t, filepath.Join(e.ws, "calc.go")); got != calcGood {
		t.Errorf("calc.go = %q, want the key removed", got)
	}
	met := rep.Metrics
	if met.ReviewRounds != 1 || met.RepairRounds != 0 || met.Checks != 2 || !met.FirstPass {
		t.Errorf("metrics %+v: want 1 review round, 0 repair rounds, 2 checks, first pass (the tests were green)", met)
	}
	if u := met.Roles[agent.RoleReviewer]; u.Calls != 2 || u.PromptTokens != 200 {
		t.Errorf("reviewer usage %+v, want 2 calls and 200 prompt tokens under its own role", u)
	}
	if u := met.Roles[agent.RoleCritic]; u.Calls != 0 {
		t.Errorf("critic usage %+v: no check failed, so the critic model was never needed", u)
	}
	// The review round's prompt carried the finding; the reviewer read the
	// changed file and not the acceptance tests.
	reqs := m.requestsOf(agent.RoleReviewer)
	first := reqs[0].Messages[len(reqs[0].Messages)-1].Content
	if !strings.Contains(first, "## calc.go (added)") || !strings.Contains(first, "sk-live-0123456789") || strings.Contains(first, "acceptance/calc_test.go (") {
		t.Errorf("review request does not show the change as expected:\n%s", first)
	}
	if reqs[0].Output == nil || reqs[0].Output.Name != "review" {
		t.Errorf("review request has output schema %+v, want \"review\"", reqs[0].Output)
	}
	w := m.requestsOf(agent.RoleWorker)
	var prompt string
	for _, msg := range w[1].Messages {
		if strings.Contains(msg.Content, "Findings:") {
			prompt = msg.Content
		}
	}
	if !strings.Contains(prompt, "hard-coded credential") || !strings.Contains(prompt, "[review] review:security at calc.go:7") {
		t.Errorf("repair prompt lacks the review finding:\n%s", prompt)
	}
	if !strings.Contains(prompt, "the reviewer found a problem the tests do not cover") {
		t.Errorf("repair prompt lacks the review-specific advice (prompts/repair/review.md):\n%s", prompt)
	}
	if p := rep.Findings.PassedTests; len(p) != 1 || p[0].Name != "calc/acceptance.TestAdd" {
		t.Errorf("passed tests %+v, want the acceptance test by name", p)
	}
	if md := readFile(t, filepath.Join(e.runs, "run", agent.ReportMD)); !strings.Contains(md, "- passed (1): calc/acceptance.TestAdd (") {
		t.Errorf("report.md does not list the passed test with its time:\n%s", md)
	}
	if rep.Findings == nil || rep.Findings.Review == nil || rep.Findings.Review.Score != 9 {
		t.Errorf("last findings %+v, want the second review (score 9)", rep.Findings)
	}
}

func TestReviewAdvisoryCompletesWithFinding(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rep := run(t, reviewedRun(), nil, e.opts(agent.WithReview(agent.ReviewConfig{Enabled: true}))...)
	if rep.Reason != agent.StopCompleted || rep.Metrics.ReviewRounds != 0 || rep.Metrics.Checks != 1 {
		t.Fatalf("reason %s, %d review rounds, %d checks; want completed after one check and no review round", rep.Reason, rep.Metrics.ReviewRounds, rep.Metrics.Checks)
	}
	if got := readFile(t, filepath.Join(e.ws, "calc.go")); got != calcWithKey {
		t.Errorf("calc.go changed though the review was advisory")
	}
	md := readFile(t, filepath.Join(e.runs, "run", agent.ReportMD))
	if !strings.Contains(md, "reviewer (advisory)") || !strings.Contains(md, "[high, security] calc.go:7") {
		t.Errorf("report.md lacks the advisory finding:\n%s", md)
	}
	if rep.Findings.Review == nil || rep.Findings.Review.Blocking || len(rep.Findings.Review.Findings) != 1 {
		t.Errorf("review %+v, want one advisory finding", rep.Findings.Review)
	}
}

func TestReviewBlockedStopsWhenRoundsSpent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := newFake().
		add(agent.RolePlanner, calcPlan()).
		add(agent.RoleTestDesigner, calcSuite()).
		add(agent.RoleWorker,
			calls("", write("go.mod", goMod), write("calc.go", calcWithKey), finish("calc written")),
			calls("What failed: the reviewer flagged calc.go:7. Likely cause: apiKey. My last change caused it.", finish("left as is")),
		).
		add(agent.RoleReviewer, review(4, keyFinding), review(4, keyFinding))
	rep := run(t, m, nil, e.opts(agent.WithReview(agent.ReviewConfig{Enabled: true, BlockAt: critic.SeverityMedium}))...)
	if rep.Reason != agent.StopReviewBlocked || rep.Metrics.ReviewRounds != 1 {
		t.Fatalf("reason %s (%s), %d review rounds; want review_blocked after 1 round", rep.Reason, rep.Detail, rep.Metrics.ReviewRounds)
	}
	// A review never makes a failing check pass: the checks stayed green,
	// the verdict is the reviewer's fail.
	if rep.Findings.Passed() || rep.Findings.FailedChecks()[0].Name != critic.CheckReview {
		t.Errorf("findings %+v, want a failed review check", rep.Findings)
	}
}

func TestWithReviewRejectsUnknownSeverity(t *testing.T) {
	t.Parallel()
	_, err := agent.New(newFake(), nil, agent.WithReview(agent.ReviewConfig{Enabled: true, BlockAt: "severe"}))
	if err == nil || !strings.Contains(err.Error(), `"severe"`) {
		t.Fatalf("err = %v, want one naming the bad severity", err)
	}
}
