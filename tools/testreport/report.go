package testreport

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Framework names, as Parse, Detect and FrameworkOf use them.
const (
	FrameworkGo       = "go"
	FrameworkPytest   = "pytest"
	FrameworkUnittest = "unittest"
	FrameworkNode     = "node"
	// FrameworkGeneric names output no specific parser recognised: TAP, node's
	// spec reporter or a plain "N passed, M failed" line.
	FrameworkGeneric = "generic"
)

// Failure kinds, set where the output makes them inferable.
const (
	KindAssertion = "assertion" // a check in the test did not hold
	KindRuntime   = "runtime"   // a panic, exception or crash
	KindSyntax    = "syntax"    // the test or code under test does not parse
	KindTimeout   = "timeout"   // the run or a test ran out of time
	KindBuild     = "build"     // the tests could not be built or loaded
)

// Report is the structured result of one test run.
type Report struct {
	Framework string    `json:"framework"`
	Passed    int       `json:"passed"`
	Failed    int       `json:"failed"`
	Skipped   int       `json:"skipped"`
	Errors    int       `json:"errors"`
	Failures  []Failure `json:"failures,omitempty"`
	// PassedTests names every test that passed, in the runner's own form
	// (see the package doc), in the order the output showed them, each
	// once and at most maxPassedNames; empty when the output does not name
	// passing tests (plain `go test`, pytest without -rA or -v, unittest
	// without -v, a plain "N passed" line). For Go only top-level tests are
	// listed: a parent passes only when all its subtests do. The Critic
	// needs these names to know that each acceptance test it designed ran
	// and passed; counts alone are what a shadowed runner can fake.
	PassedTests []string `json:"passed_tests,omitempty"`
	// Durations are the seconds each passed test took, by its name in
	// PassedTests, where the runner reports them (go test -json); a
	// failure's own time is Failure.Seconds.
	Durations map[string]float64 `json:"durations,omitempty"`
	// Nonces are the distinct nonces (NoncePattern) the output held, in
	// order, at most maxNonces: what the Critic's sentinel tests print,
	// so that a check can tell that they ran (see package
	// critic/sentinel).
	Nonces []string `json:"nonces,omitempty"`
	// Output is a short tail of the raw output (for `go test -json`, of the
	// text the events carried), for a reader when the failures say too little.
	Output string `json:"output,omitempty"`

	// recognized says the parser found its runner's own totals, so a run
	// with no tests is known to be one rather than unreadable output.
	recognized bool
}

// maxPassedNames bounds Report.PassedTests: far more than any acceptance
// suite, few enough that a huge run cannot flood a checkpoint.
const maxPassedNames = 10000

// passedNames collects the names of passing tests in order, each once.
type passedNames struct {
	list []string
	seen map[string]bool
}

func (p *passedNames) add(name string) {
	name = strings.TrimSpace(name)
	if name == "" || p.seen[name] || len(p.list) >= maxPassedNames {
		return
	}
	if p.seen == nil {
		p.seen = map[string]bool{}
	}
	p.seen[name] = true
	p.list = append(p.list, name)
}

// Failure is one failed test or one error that stopped tests from running.
// File is as the runner printed it (often relative to the package or project
// directory, sometimes absolute: see Report.Relative); Line is 0 when unknown.
type Failure struct {
	Name    string `json:"name"`
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Message string `json:"message,omitempty"`
	Kind    string `json:"kind,omitempty"`
	// Seconds is how long the test ran before it failed, where the runner
	// says (go test -json); 0 when unknown.
	Seconds float64 `json:"seconds,omitempty"`
}

// setDuration records a passed test's time, bounded like PassedTests.
func (r *Report) setDuration(name string, seconds float64) {
	if r.Durations == nil {
		r.Durations = map[string]float64{}
	}
	if len(r.Durations) < maxPassedNames {
		r.Durations[name] = seconds
	}
}

// OK reports whether at least one test ran and none failed or errored.
func (r Report) OK() bool {
	return r.Failed == 0 && r.Errors == 0 && r.Passed > 0
}

// Total is the number of tests the run accounted for, errors included.
func (r Report) Total() int {
	return r.Passed + r.Failed + r.Skipped + r.Errors
}

// Summary is one line, e.g. "go: 12 passed, 1 failed, 0 skipped"; errors are
// named only when there were some.
func (r Report) Summary() string {
	fw := r.Framework
	if fw == "" {
		fw = FrameworkGeneric
	}
	s := fmt.Sprintf("%s: %d passed, %d failed, %d skipped", fw, r.Passed, r.Failed, r.Skipped)
	switch {
	case r.Errors == 1:
		s += ", 1 error"
	case r.Errors > 1:
		s += fmt.Sprintf(", %d errors", r.Errors)
	}
	if r.Total() == 0 {
		s += " (no tests ran)"
	}
	return s
}

// Relative returns a copy of r whose failure files are relative to root when
// they lie under it (for example root "/workspace" for a run in the sandbox).
func (r Report) Relative(root string) Report {
	root = strings.TrimSuffix(root, "/")
	if root == "" || len(r.Failures) == 0 {
		return r
	}
	fs := make([]Failure, len(r.Failures))
	copy(fs, r.Failures)
	for i := range fs {
		if rel, ok := strings.CutPrefix(fs[i].File, root+"/"); ok {
			fs[i].File = rel
		}
	}
	r.Failures = fs
	return r
}

// Parse turns one run's output into a Report. framework is one of the
// Framework constants, as Detect and FrameworkOf return them ("go-json",
// "py.test", "npm" and "tap" are read as aliases), or "" to guess from the
// output with Sniff; any other name gets the generic parser. Parse never
// fails: output it cannot read is a Report with no tests.
func Parse(framework string, stdout, stderr string) Report {
	return parse(framework, stdout, stderr)
}

// ParseExit is Parse with the run's exit status. When the output shows no
// test outcome but the status is non-zero, the Report carries one error whose
// message is the tail of the output, so a failed run never passes. A run the
// runner itself reports as having no tests (pytest's exit status 5) stays a
// report with no tests, which is not OK either. A zero status never turns
// failures the output shows into a pass.
func ParseExit(framework string, stdout, stderr string, exitCode int) Report {
	r := parse(framework, stdout, stderr)
	knownEmpty := r.recognized && r.Total() == 0
	if exitCode != 0 && r.Failed == 0 && r.Errors == 0 && !knownEmpty {
		r.Errors = 1
		msg := tail(joinOutput(stdout, stderr), tailLines, tailBytes)
		if msg == "" {
			msg = fmt.Sprintf("test command exited with status %d and printed nothing", exitCode)
		}
		r.Failures = append(r.Failures, Failure{
			Name:    "exit status " + fmt.Sprint(exitCode),
			Message: msg,
			Kind:    kindOfText(msg),
		})
	}
	return r
}

// NoncePrefix starts every sentinel nonce; NoncePattern matches a whole
// one.
const (
	NoncePrefix  = "trio-nonce-"
	NoncePattern = NoncePrefix + "[0-9a-f]{32}"
)

var nonceRE = regexp.MustCompile(NoncePattern)

// maxNonces bounds Report.Nonces. Output that floods it pushes real nonces
// out, which a check reads as a forgery: it fails closed.
const maxNonces = 64

// nonces lists the distinct nonces of the streams, in order.
func nonces(streams ...string) []string {
	var out []string
	for _, s := range streams {
		if !strings.Contains(s, NoncePrefix) {
			continue
		}
		for _, n := range nonceRE.FindAllString(s, -1) {
			if len(out) == maxNonces {
				return out
			}
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

func parse(framework string, stdout, stderr string) Report {
	r := parseAs(framework, stdout, stderr)
	r.Nonces = nonces(stdout, stderr)
	return r
}

func parseAs(framework string, stdout, stderr string) Report {
	fw := strings.ToLower(strings.TrimSpace(framework))
	if fw == "" {
		fw = Sniff(stdout, stderr)
	}
	var r Report
	switch fw {
	case FrameworkGo, "go-json", "gotest":
		r = ParseGoJSON(stdout, stderr)
	case FrameworkPytest, "py.test":
		r = ParsePytest(stdout, stderr)
	case FrameworkUnittest:
		r = ParseUnittest(stdout, stderr)
	default:
		r = ParseGeneric(stdout, stderr)
		if fw == FrameworkNode || fw == "npm" || fw == "tap" {
			r.Framework = FrameworkNode
		}
	}
	return r
}

// Sniff guesses the framework from the output itself; it returns
// FrameworkGeneric when nothing specific shows.
func Sniff(stdout, stderr string) string {
	head := func(s string) string {
		if len(s) > 64<<10 {
			return s[:64<<10]
		}
		return s
	}
	out, errOut := head(stdout), head(stderr)
	switch {
	case strings.Contains(out, `"Action":"`) || strings.Contains(out, "\n--- FAIL: ") ||
		strings.HasPrefix(out, "--- FAIL: ") || goPkgLine.MatchString(out):
		return FrameworkGo
	case strings.Contains(out, "test session starts") || pytestSummary.MatchString(out+"\n"+errOut):
		return FrameworkPytest
	case unittestRan.MatchString(errOut) || unittestRan.MatchString(out):
		return FrameworkUnittest
	}
	return FrameworkGeneric
}
