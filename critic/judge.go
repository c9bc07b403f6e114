package critic

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/planner"
	"github.com/trioagent/trio/policy"
)

// maxTestSource bounds the acceptance test source shown to the critic
// model, so it can judge whether a failing test is itself wrong.
const maxTestSource = 32 << 10

// findingsReply is the model-facing Findings: every field required.
type findingsReply struct {
	Verdict      string         `json:"verdict" jsonschema:"enum=pass,enum=fail,enum=suspect_test" jsonschema_description:"pass only if every check passed; suspect_test if a test itself is wrong; otherwise fail."`
	Failures     []failureReply `json:"failures" jsonschema_description:"Each distinct failure, most fundamental first."`
	SuspectTests []suspectReply `json:"suspect_tests" jsonschema_description:"Tests that cannot run, contradict the goal or contradict another test."`
	Summary      string         `json:"summary" jsonschema_description:"Two or three sentences for the Worker: what is wrong and where to start."`
}

type failureReply struct {
	TestID   string `json:"test_id" jsonschema_description:"The failing test's name, or file:<path>, stray:<path>, cli, test_command, tampering:<path>."`
	Location string `json:"location" jsonschema_description:"file:line where the failure shows, or empty."`
	Expected string `json:"expected"`
	Actual   string `json:"actual"`
	Kind     string `json:"kind" jsonschema:"enum=syntax,enum=runtime,enum=assertion,enum=timeout,enum=resource,enum=missing_file,enum=stray_file,enum=cli,enum=not_run,enum=tampering,enum=forged,enum=lint"`
}

type suspectReply struct {
	TestID string `json:"test_id"`
	Reason string `json:"reason"`
}

// validate lists every problem of a reply by field path.
func (r findingsReply) validate() []string {
	var probs []string
	add := func(field, format string, args ...any) {
		probs = append(probs, field+": "+fmt.Sprintf(format, args...))
	}
	switch Verdict(r.Verdict) {
	case VerdictPass:
	case VerdictFail:
		if len(r.Failures) == 0 {
			add("failures", "a fail verdict needs at least one failure")
		}
	case VerdictSuspectTest:
		if len(r.SuspectTests) == 0 {
			add("suspect_tests", "a suspect_test verdict needs at least one suspect test")
		}
	default:
		add("verdict", "%q is not one of pass, fail, suspect_test", r.Verdict)
	}
	for i, f := range r.Failures {
		if strings.TrimSpace(f.TestID) == "" {
			add(fmt.Sprintf("failures[%d].test_id", i), "is empty")
		}
		if !slices.Contains(kinds, Kind(f.Kind)) {
			add(fmt.Sprintf("failures[%d].kind", i), "%q is not a known kind", f.Kind)
		}
	}
	for i, s := range r.SuspectTests {
		if strings.TrimSpace(s.TestID) == "" {
			add(fmt.Sprintf("suspect_tests[%d].test_id", i), "is empty")
		}
		if strings.TrimSpace(s.Reason) == "" {
			add(fmt.Sprintf("suspect_tests[%d].reason", i), "is empty")
		}
	}
	return probs
}

// judge asks the critic model to turn failed checks into Findings.
func (c *Critic) judge(ctx context.Context, plan planner.Plan, runs []checkRun) (Findings, error) {
	msgs := []llm.Message{
		{Role: llm.RoleSystem, Content: c.promptCritic},
		{Role: llm.RoleUser, Content: c.judgeMessage(plan, runs)},
	}
	var last string
	for attempt := 1; attempt <= 2; attempt++ {
		resp, err := c.complete(ctx, AgentCritic, msgs, c.findingsSchema)
		if err != nil {
			return Findings{}, err
		}
		content, err := replyText(resp)
		if err == nil {
			var r findingsReply
			r, err = llm.DecodeOutput[findingsReply](content)
			if err == nil {
				if probs := r.validate(); len(probs) > 0 {
					err = fmt.Errorf("%s", strings.Join(probs, "\n"))
				} else {
					return merge(r, runs), nil
				}
			}
		}
		last = err.Error()
		msgs = reask(msgs, resp, "- "+strings.ReplaceAll(last, "\n", "\n- "))
	}
	f := fromChecks(runs)
	f.Summary = "The critic model's reply was invalid twice (" + clip(strings.ReplaceAll(last, "\n", "; "), maxMessage) +
		"); these findings come from the checks alone. " + f.Summary
	return f, nil
}

// merge turns a valid model reply into Findings, keeping every failed check
// visible: the model cannot pass a failed check nor drop a whole kind of
// failure.
func merge(r findingsReply, runs []checkRun) Findings {
	f := Findings{Verdict: Verdict(r.Verdict), Summary: strings.TrimSpace(r.Summary), ModelUsed: true}
	for _, x := range r.Failures {
		f.Failures = append(f.Failures, Failure{
			TestID: strings.TrimSpace(x.TestID), Location: strings.TrimSpace(x.Location),
			Expected: x.Expected, Actual: x.Actual, Kind: Kind(x.Kind),
		})
	}
	for _, s := range r.SuspectTests {
		f.SuspectTests = append(f.SuspectTests, SuspectTest{TestID: strings.TrimSpace(s.TestID), Reason: strings.TrimSpace(s.Reason)})
	}
	var failed []string
	for _, run := range runs {
		f.Checks = append(f.Checks, run.result)
		if run.result.OK {
			continue
		}
		failed = append(failed, run.result.Name)
		if !coveredBy(f, run.result.Name) {
			f.Failures = append(f.Failures, run.failures...)
			continue
		}
		// Every change to the tests and every designed test that did not
		// pass is named, whatever the model said: they are facts, not
		// readings of the output.
		for _, x := range run.failures {
			if (x.Kind == KindTampering || x.Kind == KindNotRun || x.Kind == KindForged) &&
				!slices.ContainsFunc(f.Failures, func(y Failure) bool { return y.TestID == x.TestID && y.Kind == x.Kind }) {
				f.Failures = append(f.Failures, x)
			}
		}
	}
	if f.Verdict == VerdictSuspectTest && slices.ContainsFunc(f.Failures, func(x Failure) bool { return x.Kind == KindForged }) {
		// A subverted runner says nothing about the tests either.
		f.Verdict = VerdictFail
		f.SuspectTests = nil
		f.Summary = "The critic model suspected a test, but the test runner's report was forged; treated as fail. " + f.Summary
	}
	if f.Verdict == VerdictSuspectTest && slices.Contains(failed, CheckSuite) {
		// Tests the project's code rewrote say nothing about the suite.
		f.Verdict = VerdictFail
		f.SuspectTests = nil
		f.Summary = "The critic model suspected a test, but the project's code changed the tests; treated as fail. " + f.Summary
	}
	if f.Verdict == VerdictSuspectTest && !slices.Contains(failed, CheckTests) {
		f.Verdict = VerdictFail
		f.SuspectTests = nil
		f.Summary = "The critic model suspected a test, but no test failed; treated as fail. " + f.Summary
		for _, run := range runs {
			if !run.result.OK && !coveredBy(f, run.result.Name) {
				f.Failures = append(f.Failures, run.failures...)
			}
		}
	}
	if f.Verdict == VerdictPass && len(failed) > 0 {
		f.Verdict = VerdictFail
		f.Summary = fmt.Sprintf("The critic model said pass, but these checks failed: %s; treated as fail. %s",
			strings.Join(failed, ", "), f.Summary)
	}
	return f
}

// coveredBy reports whether the model's findings already account for a
// failed check.
func coveredBy(f Findings, check string) bool {
	for _, x := range f.Failures {
		switch check {
		case CheckTests:
			if slices.Contains([]Kind{KindSyntax, KindRuntime, KindAssertion, KindTimeout, KindResource, KindNotRun}, x.Kind) {
				return true
			}
		case CheckFiles:
			if x.Kind == KindMissingFile {
				return true
			}
		case CheckCLI:
			if x.Kind == KindCLI {
				return true
			}
		case CheckStray:
			if x.Kind == KindStrayFile {
				return true
			}
		case CheckSuite:
			if x.Kind == KindTampering {
				return true
			}
		case CheckLint:
			if x.Kind == KindLint {
				return true
			}
		}
	}
	return check == CheckTests && len(f.SuspectTests) > 0
}

// fromChecks builds Findings from the deterministic checks alone.
func fromChecks(runs []checkRun) Findings {
	f := Findings{Verdict: VerdictPass}
	var failed []string
	for _, run := range runs {
		f.Checks = append(f.Checks, run.result)
		if !run.result.OK {
			failed = append(failed, run.result.Name)
			f.Failures = append(f.Failures, run.failures...)
		}
	}
	if len(failed) > 0 {
		f.Verdict = VerdictFail
		f.Summary = "Failed checks: " + strings.Join(failed, ", ") + "."
	} else {
		f.Summary = "every check passed"
	}
	return f
}

func (c *Critic) judgeMessage(plan planner.Plan, runs []checkRun) string {
	var b strings.Builder
	b.WriteString("# Goal\n\n")
	b.WriteString(strings.TrimSpace(plan.Goal))
	b.WriteString("\n\n")
	writePlan(&b, plan)
	suite := c.Suite()
	if suite.Version > 0 {
		fmt.Fprintf(&b, "\nAcceptance test suite version %d in %s/.\n", suite.Version, suite.Dir)
	}
	b.WriteString("\n# Check results\n")
	for _, r := range runs {
		status := "FAILED"
		if r.result.OK {
			status = "passed"
		}
		fmt.Fprintf(&b, "\n## %s: %s\n\n%s\n", r.result.Name, status, r.result.Detail)
		if !r.result.OK && r.raw != "" && r.raw != r.result.Detail {
			b.WriteString("\nRaw output:\n```\n")
			b.WriteString(strings.TrimSpace(r.raw))
			b.WriteString("\n```\n")
		}
	}
	if src := c.testSource(plan); src != "" {
		b.WriteString("\n# Acceptance tests (written from the goal and plan, before the code)\n\n")
		b.WriteString(src)
	}
	return b.String()
}

// testSource renders the acceptance test files, bounded.
func (c *Critic) testSource(plan planner.Plan) string {
	files, err := c.currentSuite(plan.TestsFolder())
	if err != nil || len(files) == 0 {
		return ""
	}
	var b strings.Builder
	for _, f := range files {
		if b.Len()+len(f.Content) > maxTestSource {
			fmt.Fprintf(&b, "(%s and later files left out: too long)\n", f.Path)
			break
		}
		fmt.Fprintf(&b, "## %s\n```\n%s\n```\n", f.Path, strings.TrimRight(f.Content, "\n"))
	}
	return b.String()
}

// writePlan renders a plan for a model.
func writePlan(b *strings.Builder, plan planner.Plan) {
	b.WriteString("# Plan\n")
	for _, s := range plan.Steps {
		fmt.Fprintf(b, "\n## Step %d: %s\n\n%s\n", s.ID, s.Title, strings.TrimSpace(s.Description))
		if len(s.Files) > 0 {
			fmt.Fprintf(b, "Files: %s\n", strings.Join(s.Files, ", "))
		}
		if s.Expected != "" {
			fmt.Fprintf(b, "Expected: %s\n", s.Expected)
		}
		if s.Acceptance != "" {
			fmt.Fprintf(b, "Acceptance: %s\n", s.Acceptance)
		}
	}
	fmt.Fprintf(b, "\nTest command: %s\n", plan.TestCommand)
	if len(plan.CLI) > 0 {
		fmt.Fprintf(b, "Command-line program: %s (must answer --help)\n", policy.QuoteArgv(plan.CLI))
	}
	fmt.Fprintf(b, "Acceptance tests folder: %s/\n", plan.TestsFolder())
	if len(plan.Risks) > 0 {
		b.WriteString("Risks:\n")
		for _, r := range plan.Risks {
			fmt.Fprintf(b, "- %s\n", r)
		}
	}
}
