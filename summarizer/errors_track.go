package summarizer

import (
	"regexp"
	"slices"
	"strings"
)

// maxLinesPerFailure bounds how many error lines one failing output adds to
// the tracked set; the failing output itself is always sent verbatim.
const maxLinesPerFailure = 20

// errorLine matches lines worth keeping verbatim from a failing output:
// error and failure markers of common toolchains (Go "--- FAIL: TestX",
// pytest "FAILED t.py::test_x" and "E   AssertionError", panics, tracebacks)
// and compiler-style "file.ext:line:" locations.
var errorLine = regexp.MustCompile(`(?i)(\berror\b|\berrors?:|\bfail(ed|ure|ing)?\b|\bpanic\b|exception|traceback|assert|` +
	`undefined|cannot |not found|[\w./-]+\.\w+:\d+(:\d+)?:)`)

// ExtractErrors picks the verbatim error lines and failing test names out of
// a tool output. When no line looks like an error, the first non-empty line
// stands for the whole output.
func ExtractErrors(output string) []string {
	var out []string
	first := ""
	for line := range strings.Lines(output) {
		line = strings.TrimRight(line, " \t\r\n")
		if strings.TrimSpace(line) == "" {
			continue
		}
		if first == "" {
			first = line
		}
		// A bare "FAIL" or "ERROR" says nothing an error list needs.
		if errorLine.MatchString(line) && len(strings.Fields(line)) > 1 && !slices.Contains(out, line) {
			out = append(out, line)
			if len(out) == maxLinesPerFailure {
				break
			}
		}
	}
	if len(out) == 0 && first != "" {
		out = append(out, first)
	}
	return out
}

// errorSet is the window's own record of unresolved error texts, kept
// verbatim because a summary model may paraphrase or drop them.
type errorSet struct {
	open     []string
	resolved []string // recent resolved texts, to filter a summary's stale list
	names    []string // texts given to Resolve: they resolve any error containing them
	limit    int
}

const maxResolvedKept = 200

func (s *errorSet) add(texts ...string) bool {
	changed := false
	for _, t := range texts {
		t = strings.TrimSpace(t)
		if t == "" || slices.Contains(s.open, t) {
			continue
		}
		s.resolved = slices.DeleteFunc(s.resolved, func(r string) bool { return r == t })
		s.names = slices.DeleteFunc(s.names, func(r string) bool { return strings.Contains(t, r) })
		s.open = append(s.open, t)
		changed = true
	}
	if over := len(s.open) - s.limit; s.limit > 0 && over > 0 {
		s.open = slices.Delete(s.open, 0, over) // the oldest go first
	}
	return changed
}

// resolve drops every open text equal to or containing text (so a test name
// resolves the lines that mention it) and remembers it as resolved.
func (s *errorSet) resolve(text string) int {
	text = strings.TrimSpace(text)
	if text == "" {
		return 0
	}
	n := 0
	s.open = slices.DeleteFunc(s.open, func(e string) bool {
		if e == text || strings.Contains(e, text) {
			s.remember(e)
			n++
			return true
		}
		return false
	})
	if !slices.Contains(s.names, text) {
		s.names = append(s.names, text)
		if over := len(s.names) - maxResolvedKept; over > 0 {
			s.names = slices.Delete(s.names, 0, over)
		}
	}
	return n
}

func (s *errorSet) resolveAll() int {
	n := len(s.open)
	for _, e := range s.open {
		s.remember(e)
	}
	s.open = nil
	return n
}

func (s *errorSet) remember(t string) {
	if slices.Contains(s.resolved, t) {
		return
	}
	s.resolved = append(s.resolved, t)
	if over := len(s.resolved) - maxResolvedKept; over > 0 {
		s.resolved = slices.Delete(s.resolved, 0, over)
	}
}

// isResolved reports whether a text (from a summary reply) is an error the
// agent resolved: the same text, or one containing a name given to Resolve.
func (s *errorSet) isResolved(t string) bool {
	t = strings.TrimSpace(t)
	if slices.Contains(s.resolved, t) {
		return true
	}
	for _, r := range s.names {
		if strings.Contains(t, r) {
			return true
		}
	}
	return false
}
