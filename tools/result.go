package tools

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/trioagent/trio/tools/testreport"
)

// Bounds of the text a model receives for one call (see Result.ForModel).
const (
	// MaxModelOutput bounds Result.Output as the model sees it.
	MaxModelOutput = 256 << 10
	// MaxModelStream bounds each of stdout and stderr as the model sees it;
	// the tail is kept because that is where errors are.
	MaxModelStream = 32 << 10
)

// resultJSON is Result on the wire: the duration is integer milliseconds.
type resultJSON struct {
	OK         bool   `json:"ok"`
	Output     string `json:"output,omitempty"`
	Stdout     string `json:"stdout,omitempty"`
	Stderr     string `json:"stderr,omitempty"`
	ExitCode   int    `json:"exit_code"`
	DurationMS int64  `json:"duration_ms"`
	Truncated  bool   `json:"truncated,omitempty"`
	Denied     bool   `json:"denied,omitempty"`
	// Tests keeps run_tests' report across checkpoints and traces.
	Tests *testreport.Report `json:"tests,omitempty"`
}

// MarshalJSON writes the result with its duration as integer milliseconds
// under "duration_ms".
func (r Result) MarshalJSON() ([]byte, error) {
	return json.Marshal(resultJSON{
		OK: r.OK, Output: r.Output, Stdout: r.Stdout, Stderr: r.Stderr,
		ExitCode: r.ExitCode, DurationMS: r.Duration.Milliseconds(),
		Truncated: r.Truncated, Denied: r.Denied, Tests: r.Tests,
	})
}

// UnmarshalJSON reads what MarshalJSON writes, so checkpoints round-trip.
func (r *Result) UnmarshalJSON(data []byte) error {
	var w resultJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*r = Result{
		OK: w.OK, Output: w.Output, Stdout: w.Stdout, Stderr: w.Stderr,
		ExitCode: w.ExitCode, Duration: time.Duration(w.DurationMS) * time.Millisecond,
		Truncated: w.Truncated, Denied: w.Denied, Tests: w.Tests,
	}
	return nil
}

// modelJSON is the compact form a model reads. The duration is left out: it
// means nothing to the model and would make identical results differ.
type modelJSON struct {
	OK        bool   `json:"ok"`
	ExitCode  *int   `json:"exit_code,omitempty"`
	Output    string `json:"output,omitempty"`
	Stdout    string `json:"stdout,omitempty"`
	Stderr    string `json:"stderr,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
	Denied    bool   `json:"denied,omitempty"`
}

// ForModel is the compact JSON text a model receives for this result: ok,
// exit_code (when a command ran), output, the tails of stdout and stderr,
// truncated and denied. Output is bounded by MaxModelOutput (head and tail
// kept) and each stream by MaxModelStream (tail kept); a cut sets truncated.
func (r Result) ForModel() string {
	m := modelJSON{OK: r.OK, Truncated: r.Truncated, Denied: r.Denied}
	if r.ExitCode != 0 || r.Stdout != "" || r.Stderr != "" {
		code := r.ExitCode
		m.ExitCode = &code
	}
	var cut bool
	m.Output, cut = headTail(r.Output, MaxModelOutput)
	m.Truncated = m.Truncated || cut
	m.Stdout, cut = tail(r.Stdout, MaxModelStream)
	m.Truncated = m.Truncated || cut
	m.Stderr, cut = tail(r.Stderr, MaxModelStream)
	m.Truncated = m.Truncated || cut
	// No HTML escaping: "<", ">" and "&" (in code, diffs, shell lines) reach
	// the model as written, not as six-byte \u003c sequences.
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil { // cannot happen: only strings, ints and bools
		return fmt.Sprintf(`{"ok":false,"output":%q}`, err.Error())
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// tail keeps the last max bytes of s, cut on a rune boundary, with a marker
// saying how much was dropped.
func tail(s string, max int) (string, bool) {
	if len(s) <= max {
		return s, false
	}
	i := len(s) - max
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return fmt.Sprintf("[... %d bytes cut ...]\n", i) + s[i:], true
}

// headTail keeps the first and last halves of s when it is longer than max.
func headTail(s string, max int) (string, bool) {
	if len(s) <= max {
		return s, false
	}
	h := max / 2
	for h > 0 && !utf8.RuneStart(s[h]) {
		h--
	}
	t := len(s) - (max - h)
	for t < len(s) && !utf8.RuneStart(s[t]) {
		t++
	}
	var b strings.Builder
	b.Grow(max + 64)
	b.WriteString(s[:h])
	fmt.Fprintf(&b, "\n[... %d bytes cut ...]\n", t-h)
	b.WriteString(s[t:])
	return b.String(), true
}

// errorResult is a failed result the model can act on.
func errorResult(format string, args ...any) Result {
	return Result{OK: false, Output: fmt.Sprintf(format, args...)}
}
