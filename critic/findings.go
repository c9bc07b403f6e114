package critic

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Verdict is the Critic's judgement of one round.
type Verdict string

// Verdicts. SuspectTest means a test itself is wrong (it cannot run, or it
// contradicts the goal or another test): the next step repairs the test,
// not the code.
const (
	VerdictPass        Verdict = "pass"
	VerdictFail        Verdict = "fail"
	VerdictSuspectTest Verdict = "suspect_test"
)

// Kind classifies a failure.
type Kind string

// Failure kinds.
const (
	KindSyntax      Kind = "syntax"       // the code or a test does not compile / parse
	KindRuntime     Kind = "runtime"      // a crash, panic, uncaught exception, denied command
	KindAssertion   Kind = "assertion"    // a test ran and its expectation failed
	KindTimeout     Kind = "timeout"      // the command ran out of time
	KindResource    Kind = "resource"     // out of memory, too many processes, output limit
	KindMissingFile Kind = "missing_file" // a planned file is missing or empty
	KindStrayFile   Kind = "stray_file"   // a cache, temp file or file outside the plan
	KindCLI         Kind = "cli"          // the declared program does not answer --help
	// KindNotRun: an acceptance test the Critic designed was not reported
	// as passed by name (not run, skipped, or the runner was shadowed).
	KindNotRun Kind = "not_run"
	// KindTampering: the workspace's copy of the acceptance suite differed
	// from the canonical one (a file changed, deleted, added or replaced);
	// it was restored, and the round fails whatever the tests say.
	KindTampering Kind = "tampering"
	// KindForged: the test runner's report departed from what an honest
	// run of the check's sentinel tests prints (a must-fail test passed or
	// vanished, a nonce missing, exit 0 after a failure): the runner, the
	// framework or the report was subverted, and the round fails.
	KindForged Kind = "forged"
)

var kinds = []Kind{KindSyntax, KindRuntime, KindAssertion, KindTimeout, KindResource, KindMissingFile, KindStrayFile, KindCLI, KindNotRun, KindTampering, KindForged, KindLint}

// Findings is what the Critic reports after one round of checks.
type Findings struct {
	Verdict      Verdict       `json:"verdict"`
	Failures     []Failure     `json:"failures,omitempty"`
	SuspectTests []SuspectTest `json:"suspect_tests,omitempty"`
	// Summary is a short explanation for the Worker (and the report).
	Summary string `json:"summary,omitempty"`
	// Checks are the deterministic checks' results, whatever the verdict.
	Checks []CheckResult `json:"checks"`
	// ModelUsed is false when the findings were decided without a model
	// call (every check passed) or built from the checks after the model's
	// replies were invalid twice.
	ModelUsed bool `json:"model_used"`
	// PassedTests are the tests the runner reported passed, by name, with
	// their times where the runner gave them (go test -json).
	PassedTests []PassedTest `json:"passed_tests,omitempty"`
	// Review is the reviewer's judgement, made only when every check
	// passed (see Findings.WithReview).
	Review *Review `json:"review,omitempty"`
}

// Failure is one thing that is wrong.
type Failure struct {
	// TestID names the failing test (e.g. "TestRender/headings"), or for
	// other checks "file:<path>", "stray:<path>", "cli", "test_command",
	// "tampering:<path>"; a designed test that did not pass by name is
	// "<file>::<name>" (see TestSuite.Tests).
	TestID string `json:"test_id"`
	// Location is file:line where known.
	Location string `json:"location"`
	Expected string `json:"expected"`
	Actual   string `json:"actual"`
	Kind     Kind   `json:"kind"`
	// Seconds is how long the failing test ran, where the runner said.
	Seconds float64 `json:"seconds,omitempty"`
}

// PassedTest is one test that passed, with its time (0 when unknown).
type PassedTest struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds,omitempty"`
}

// SuspectTest is a test the Critic believes is wrong.
type SuspectTest struct {
	TestID string `json:"test_id"`
	Reason string `json:"reason"`
}

// CheckResult is one deterministic check. Detail is deterministic for the
// same workspace state, apart from numbers Fingerprint ignores.
type CheckResult struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Names of the deterministic checks, in the order they are reported.
const (
	// CheckSuite compares the workspace's tests folder with the canonical
	// acceptance suite before and after the other checks, and restores it.
	CheckSuite = "acceptance_suite"
	CheckTests = "tests"
	CheckFiles = "files"
	CheckCLI   = "cli"
	CheckStray = "stray_files"
)

// Passed reports whether the verdict is pass.
func (f Findings) Passed() bool { return f.Verdict == VerdictPass }

// FailedChecks returns the checks that did not pass.
func (f Findings) FailedChecks() []CheckResult {
	var out []CheckResult
	for _, c := range f.Checks {
		if !c.OK {
			out = append(out, c)
		}
	}
	return out
}

// Fingerprint is a stable hash of what failed, so that the same failure in
// two rounds can be recognised: the verdict plus, when deterministic checks
// failed, each failing check's name and normalised detail (failing test ids
// with their messages, missing and stray paths); otherwise the sorted
// failures' test ids, kinds and normalised actual values and the suspect
// test ids. Durations, hexadecimal addresses, timestamps, goroutine numbers
// and temporary build paths are removed first, so reruns of the same failure
// match and different failures do not. A pass has an empty fingerprint.
func (f Findings) Fingerprint() string {
	if f.Verdict == VerdictPass {
		return ""
	}
	var lines []string
	for _, c := range f.FailedChecks() {
		lines = append(lines, "check|"+c.Name+"|"+Normalize(c.Detail))
	}
	if len(lines) == 0 {
		for _, x := range f.Failures {
			lines = append(lines, "failure|"+strings.TrimSpace(x.TestID)+"|"+string(x.Kind)+"|"+Normalize(x.Actual))
		}
	}
	for _, s := range f.SuspectTests {
		lines = append(lines, "suspect|"+strings.TrimSpace(s.TestID))
	}
	slices.Sort(lines)
	lines = slices.Compact(lines)
	h := sha256.New()
	fmt.Fprintf(h, "verdict|%s\n", f.Verdict)
	for _, l := range lines {
		h.Write([]byte(l))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// normalizers strip what varies between runs of the same failure.
var normalizers = []struct {
	re   *regexp.Regexp
	with string
}{
	// Timestamps: 2026/11/30 16:16:24, 2026-11-30T16:16:24.123Z.
	{regexp.MustCompile(`\d{4}[-/]\d{2}[-/]\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?`), "<time>"},
	// Hexadecimal addresses and pointers.
	{regexp.MustCompile(`0x[0-9a-fA-F]+`), "<addr>"},
	// Durations: 0.003s, (0.00s), 12ms, 1.5µs, 3m2.1s, "in 0.12s".
	{regexp.MustCompile(`\b(\d+h)?(\d+m)?\d+(\.\d+)?(ns|us|µs|ms|s|m|h)\b`), "<dur>"},
	{regexp.MustCompile(`\b\d+(\.\d+)? ?(seconds?|secs?)\b`), "<dur>"},
	// Goroutine numbers and temporary build or test folders.
	{regexp.MustCompile(`goroutine \d+`), "goroutine <n>"},
	{regexp.MustCompile(`go-build\d+`), "go-build<n>"},
	{regexp.MustCompile(`(/tmp|/var/folders)/[^\s:'"]+`), "<tmp>"},
	{regexp.MustCompile(`\bpid[ =:]\d+`), "pid <n>"},
	{regexp.MustCompile(`[ \t]+`), " "},
}

// Normalize removes run-to-run noise (durations, addresses, timestamps,
// goroutine ids, temporary paths, repeated blanks) from a message.
func Normalize(s string) string {
	s = strings.TrimSpace(s)
	for _, n := range normalizers {
		s = n.re.ReplaceAllString(s, n.with)
	}
	return s
}
