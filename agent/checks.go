package agent

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/trioagent/trio/critic"
	"github.com/trioagent/trio/planner"
	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/tools"
)

// newCritic builds the Critic with the base policy's gate (it writes the
// acceptance tests, which the Worker may only read) and, on resume, the
// canonical suite from the run folder.
func (r *run) newCritic(view tools.View) (*critic.Critic, error) {
	var opts []critic.Option
	for _, role := range []string{RoleCritic, RoleTestDesigner} {
		if p, ok := r.cfg.prompts[role]; ok {
			opts = append(opts, critic.WithPrompt(role, p))
		}
	}
	base, err := r.baselineOptions()
	if err != nil {
		return nil, err
	}
	opts = append(opts, base...)
	if r.cfg.lint.Enabled {
		opts = append(opts, critic.WithLint(r.cfg.lint.Blocking))
	}
	if p, ok := r.cfg.prompts[RoleReviewer]; ok {
		opts = append(opts, critic.WithPrompt(critic.AgentReviewer, p))
	}
	// A run folder inside the workspace is not the project's.
	if rel, err := filepath.Rel(r.st.Workspace, absPath(filepath.Dir(r.dir))); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
		opts = append(opts, critic.WithAllowed(filepath.ToSlash(rel)+"/**"))
	}
	if len(r.st.SentinelKey) == 0 {
		r.st.SentinelKey = make([]byte, 32)
		rand.Read(r.st.SentinelKey)
	}
	opts = append(opts, critic.WithSentinelSeed(r.sentinelSeed))
	suite, err := r.suiteOptions()
	if err != nil {
		return nil, err
	}
	opts = append(opts, r.userTestOptions()...)
	return critic.New(r.model, r.criticGate, view, r.ws, append(opts, suite...)...), nil
}

// sentinelSeed is the seed of the next check's sentinels: the same for the
// same check in every session, so that a check replayed from calls.jsonl
// verifies its recorded result.
func (r *run) sentinelSeed() []byte {
	m := hmac.New(sha256.New, r.st.SentinelKey)
	fmt.Fprintf(m, "check %d", r.st.Checks+1)
	return m.Sum(nil)
}

func absPath(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}

// designTests writes the acceptance tests: the first suite, or a new
// version after a suspect_test verdict (then with the suspect tests'
// reasons), instead of bending correct code to wrong tests.
func (r *run) designTests(ctx context.Context, suspect *critic.Findings) error {
	plan := *r.st.Plan
	var (
		suite critic.TestSuite
		err   error
	)
	if suspect != nil {
		r.emit(Event{Kind: EventTestRepair, Role: RoleTestDesigner, Verdict: string(suspect.Verdict), Message: suspectText(*suspect)})
		suite, err = r.critic.RepairTests(ctx, r.goalWithInstructions(), plan, *suspect)
	} else {
		suite, err = r.critic.DesignTests(ctx, r.goalWithInstructions(), plan)
	}
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		if errors.Is(err, critic.ErrSuspectUserTest) {
			return r.suspectUserTest(err)
		}
		return stopf(StopModelError, "test design: %v", err)
	}
	// The copy in the run folder exists before the checkpoint names it.
	if err := r.saveSuite(suite, r.critic.SuiteFiles()); err != nil {
		return err
	}
	r.st.Suite = &suite
	r.st.SuiteChanges = nil
	r.st.SuiteVersion = suite.Version
	if suspect != nil {
		r.st.TestRepairs++
	}
	r.trace(TraceEntry{Kind: "suite", Role: RoleTestDesigner, Suite: &suite, SuiteVersion: suite.Version})
	r.emit(Event{Kind: EventTestsDesigned, Role: RoleTestDesigner, Message: fmt.Sprintf("suite version %d: %s", suite.Version, strings.Join(suite.Files, ", "))})
	if suspect != nil {
		return r.setPhase(phaseCheck)
	}
	if err := r.pinWorker(); err != nil {
		return err
	}
	return r.setPhase(phaseBuild)
}

// check runs every check, then decides: done, repair, test repair or stop.
func (r *run) check(ctx context.Context) error {
	st := r.st
	r.lastModelErr = nil
	// The checks start from a clean sandbox: nothing the Worker's code
	// left in /tmp, HOME or a cache runs inside them.
	if rs, ok := r.sb.Sandbox.(sandbox.Resetter); ok {
		if err := rs.Reset(ctx); err != nil {
			return stopf(StopSandboxError, "reset the sandbox before the checks: %v", err)
		}
	}
	f, err := r.critic.Check(tools.WithCallerRole(ctx, RoleCritic), *st.Plan)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		if r.lastModelErr != nil {
			return stopf(StopModelError, "checks: %v", err)
		}
		return stopf(StopSandboxError, "checks: %v", err)
	}
	st.Checks++
	st.Findings = &f
	st.SuiteChanges = nil // reported by this check
	if st.FirstPass == nil {
		pass := f.Passed()
		st.FirstPass = &pass
	}
	fp := f.Fingerprint()
	r.trace(TraceEntry{Kind: "critic_verdict", Role: RoleCritic, Findings: &f, Fingerprint: fp, SuiteVersion: st.SuiteVersion})
	r.emit(Event{Kind: EventCriticVerdict, Role: RoleCritic, Verdict: string(f.Verdict), Message: verdictLine(f)})
	if f.Passed() && r.cfg.review.Enabled {
		if f, err = r.review(ctx, f); err != nil {
			return err
		}
		if !f.Passed() {
			return r.setPhase(phaseRepair)
		}
	}
	if f.Passed() {
		st.Phase = phaseDone
		return r.checkpoint()
	}
	r.win.SetFailing(failingOutput(f))
	prevFP := st.Fingerprints
	st.Fingerprints = append(st.Fingerprints, fp)
	st.WorkspaceHashes = append(st.WorkspaceHashes, workspaceHash(st.Workspace))
	if n := len(prevFP); n > 0 && prevFP[n-1] == fp {
		return r.stuck(ctx, StopSameFailure, fmt.Sprintf("the same failure (fingerprint %s) twice in a row: %s", fp, verdictLine(f)))
	}
	if alternating(st.Fingerprints) {
		return stopf(StopOscillation, "the failures alternate between two fingerprints: %s", strings.Join(st.Fingerprints[len(st.Fingerprints)-4:], ", "))
	}
	if alternating(st.WorkspaceHashes) {
		return stopf(StopOscillation, "the workspace alternates between two states: %s", strings.Join(st.WorkspaceHashes[len(st.WorkspaceHashes)-4:], ", "))
	}
	st.FailCounts = append(st.FailCounts, len(f.Failures))
	if n := len(st.FailCounts); n >= 3 && st.FailCounts[n-3] < st.FailCounts[n-2] && st.FailCounts[n-2] < st.FailCounts[n-1] {
		return stopf(StopErrorsIncreasing, "the failures grew two rounds running (%d, %d, %d): %s",
			st.FailCounts[n-3], st.FailCounts[n-2], st.FailCounts[n-1], verdictLine(f))
	}
	if f.Verdict == critic.VerdictSuspectTest {
		if st.TestRepairs >= r.cfg.budgets.MaxRepairRounds {
			return stopf(StopBudgetRepairs, "%s spent and the Critic still suspects the tests", plural(st.TestRepairs, "test repair", "test repairs"))
		}
		return r.setPhase(phaseTestRepair)
	}
	if r.cfg.budgets.MaxRepairRounds == 0 {
		return stopf(StopChecksFailed, "%s", verdictLine(f))
	}
	if st.RepairRound >= r.cfg.budgets.MaxRepairRounds {
		return r.stuck(ctx, StopBudgetRepairs, fmt.Sprintf("%s spent; last verdict: %s", plural(st.RepairRound, "repair round", "repair rounds"), verdictLine(f)))
	}
	st.RepairRound++
	st.SegmentStarted = false
	return r.setPhase(phaseRepair)
}

// review has the reviewer judge a change whose checks all passed and
// returns the findings with the review attached. A blocking review turns
// them into a fail (and starts a review round: the caller moves to the
// repair phase) while rounds remain, and stops the run when none do.
func (r *run) review(ctx context.Context, f critic.Findings) (critic.Findings, error) {
	st := r.st
	rev, err := r.critic.Review(ctx, *st.Plan)
	if err != nil {
		if ctx.Err() != nil {
			return f, err
		}
		return f, stopf(StopModelError, "review: %v", err)
	}
	f = f.WithReview(rev, r.cfg.review.BlockAt)
	st.Findings = &f
	r.trace(TraceEntry{Kind: "review", Role: RoleReviewer, Findings: &f})
	r.emit(Event{Kind: EventCriticVerdict, Role: RoleReviewer, Verdict: string(f.Verdict), Message: oneLine(rev.Text(), 300)})
	if f.Passed() {
		return f, nil
	}
	if st.ReviewRounds >= r.cfg.review.MaxRounds {
		return f, stopf(StopReviewBlocked, "%s spent and the reviewer still finds: %s",
			plural(st.ReviewRounds, "review round", "review rounds"), oneLine(rev.Text(), 300))
	}
	st.ReviewRounds++
	st.SegmentStarted = false
	r.win.SetFailing(failingOutput(f))
	return f, nil
}

// stuck ends the run with reason, unless a re-plan is allowed and not
// yet spent (WithReplan): then the Planner, given the findings and the
// history summary, appends new steps, and the run builds them and checks
// again. A re-plan the model cannot give stops with reason too, saying so.
func (r *run) stuck(ctx context.Context, reason StopReason, detail string) error {
	st := r.st
	if !r.cfg.replan || st.Replanned {
		return stopf(reason, "%s", detail)
	}
	revised, err := planner.New(r.model).Revise(ctx, *st.Plan, planner.Revision{
		Why: string(reason) + ": " + detail, Findings: findingsText(*st.Findings), History: r.historyText(),
	})
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		if errors.Is(err, planner.ErrInvalidPlan) {
			return stopf(reason, "%s; the re-plan failed: %v", detail, err)
		}
		return stopf(StopModelError, "re-plan: %v", err)
	}
	added := len(revised.Steps) - len(st.Plan.Steps)
	st.Replanned = true
	st.Plan = &revised
	st.SegmentStarted = false
	if err := r.pinWorker(); err != nil {
		return err
	}
	r.trace(TraceEntry{Kind: "replan", Role: RolePlanner, Plan: &revised, Reason: reason, Detail: detail})
	r.emit(Event{Kind: EventPlanReady, Role: RolePlanner, Steps: len(revised.Steps),
		Message: fmt.Sprintf("revised plan after %s: %s added", reason, plural(added, "step", "steps"))})
	return r.setPhase(phaseBuild)
}

// historyText is what the Worker did, for a re-plan: the rolling summary
// when there is one, its repair analyses and its step notes.
func (r *run) historyText() string {
	var b strings.Builder
	if s, ok := r.win.Summary(); ok {
		fmt.Fprintf(&b, "Summary: %s\n", s.Progress)
		for _, d := range s.Decisions {
			fmt.Fprintf(&b, "- decision: %s\n", d)
		}
		for _, e := range s.UnresolvedErrors {
			fmt.Fprintf(&b, "- unresolved: %s\n", e)
		}
	}
	for i, a := range r.st.Analyses {
		fmt.Fprintf(&b, "Repair analysis %d: %s\n", i+1, oneLine(a, 800))
	}
	for _, n := range r.st.StepNotes {
		fmt.Fprintf(&b, "Step note: %s\n", oneLine(n, 300))
	}
	return b.String()
}

// alternating reports A, B, A, B at the end of xs with A ≠ B.
func alternating(xs []string) bool {
	n := len(xs)
	if n < 4 {
		return false
	}
	a, b := xs[n-4], xs[n-3]
	return a != b && xs[n-2] == a && xs[n-1] == b
}

func verdictLine(f critic.Findings) string {
	var parts []string
	for _, c := range f.FailedChecks() {
		parts = append(parts, c.Name)
	}
	s := string(f.Verdict)
	if len(parts) > 0 {
		s += " (failed checks: " + strings.Join(parts, ", ") + ")"
	}
	if len(f.Failures) > 0 {
		s += ", " + plural(len(f.Failures), "failure", "failures")
	}
	if f.Summary != "" {
		s += ": " + oneLine(f.Summary, 200)
	}
	return s
}

// maxPassedShown bounds the passed tests findingsText names.
const maxPassedShown = 20

// findingsText is the Critic's findings as the Worker reads them.
func findingsText(f critic.Findings) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Verdict: %s\n", f.Verdict)
	if f.Summary != "" {
		fmt.Fprintf(&b, "Summary: %s\n", f.Summary)
	}
	for i, x := range f.Failures {
		fmt.Fprintf(&b, "%d. [%s] %s", i+1, x.Kind, x.TestID)
		if x.Location != "" {
			fmt.Fprintf(&b, " at %s", x.Location)
		}
		if x.Seconds > 0 {
			fmt.Fprintf(&b, " (%.2fs)", x.Seconds)
		}
		fmt.Fprintf(&b, "\n   expected: %s\n   actual: %s\n", x.Expected, x.Actual)
	}
	for _, s := range f.SuspectTests {
		fmt.Fprintf(&b, "- suspect test %s: %s\n", s.TestID, s.Reason)
	}
	if n := len(f.PassedTests); n > 0 {
		var names []string
		for _, p := range f.PassedTests[:min(n, maxPassedShown)] {
			names = append(names, fmt.Sprintf("%s (%.2fs)", p.Name, p.Seconds))
		}
		more := ""
		if n > maxPassedShown {
			more = fmt.Sprintf(", … %d more", n-maxPassedShown)
		}
		fmt.Fprintf(&b, "- passed (%d): %s%s\n", n, strings.Join(names, ", "), more)
	}
	if f.Review != nil {
		mode := "advisory"
		if f.Review.Blocking {
			mode = "blocking"
		}
		fmt.Fprintf(&b, "- reviewer (%s): %s\n", mode, indent(f.Review.Text(), "  ")[2:])
	}
	for _, c := range f.Checks {
		mark := "ok"
		if !c.OK {
			mark = "FAILED"
		}
		fmt.Fprintf(&b, "- check %s: %s", c.Name, mark)
		if !c.OK && c.Detail != "" {
			fmt.Fprintf(&b, "\n%s", indent(c.Detail, "    "))
		}
		b.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

func suspectText(f critic.Findings) string {
	var parts []string
	for _, s := range f.SuspectTests {
		parts = append(parts, s.TestID+": "+s.Reason)
	}
	return strings.Join(parts, "; ")
}

func indent(s, pre string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = pre + lines[i]
	}
	return strings.Join(lines, "\n")
}

// failingOutput is the latest failing output the Worker's window must keep
// whatever it folds: the failed checks' details.
func failingOutput(f critic.Findings) string {
	var b strings.Builder
	for _, c := range f.FailedChecks() {
		fmt.Fprintf(&b, "check %s failed:\n%s\n", c.Name, c.Detail)
	}
	return strings.TrimSpace(b.String())
}
