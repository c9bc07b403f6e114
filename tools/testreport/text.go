package testreport

import (
	"regexp"
	"strings"
)

// Limits on what a Report carries, so a huge log cannot flood a prompt.
const (
	tailLines    = 30
	tailBytes    = 4 << 10
	messageLines = 40
	messageBytes = 4 << 10
	maxFailures  = 50
)

// joinOutput puts stdout and stderr together, stdout first.
func joinOutput(stdout, stderr string) string {
	stdout = strings.TrimRight(stdout, "\n")
	stderr = strings.TrimRight(stderr, "\n")
	switch {
	case stdout == "":
		return stderr
	case stderr == "":
		return stdout
	}
	return stdout + "\n" + stderr
}

// tail keeps the last n lines of s, at most max bytes, starting at a line
// start where possible and always at a UTF-8 boundary.
func tail(s string, n, max int) string {
	s = strings.TrimRight(s, " \t\r\n")
	start, whole := len(s), false
	for i := 0; i < n; i++ {
		j := strings.LastIndexByte(s[:start], '\n')
		if j < 0 {
			whole = true
			break
		}
		start = j
	}
	if whole {
		start = 0
	} else {
		start++
	}
	if len(s)-start > max {
		start = len(s) - max
		if j := strings.IndexByte(s[start:], '\n'); j >= 0 && start+j+1 < len(s) {
			start += j + 1
		}
	}
	for start < len(s) && !isRuneStart(s[start]) {
		start++
	}
	return s[start:]
}

// head keeps the first n lines of s, at most max bytes.
func head(s string, n, max int) string {
	s = strings.TrimSpace(s)
	if len(s) > max {
		s = s[:max]
		for len(s) > 0 && !isRuneStart(s[len(s)-1]) {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	idx := 0
	for i := 0; i < n; i++ {
		j := strings.IndexByte(s[idx:], '\n')
		if j < 0 {
			return s
		}
		idx += j + 1
	}
	return strings.TrimRight(s[:idx], "\n") + "\n…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// message joins lines into a failure message within the size limits.
func message(lines []string) string {
	return head(strings.Join(lines, "\n"), messageLines, messageBytes)
}

// dedent removes the indentation common to all non-blank lines.
func dedent(lines []string) []string {
	min := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " \t"))
		if min < 0 || n < min {
			min = n
		}
	}
	if min <= 0 {
		return lines
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		if len(l) >= min {
			out[i] = l[min:]
		} else {
			out[i] = strings.TrimLeft(l, " \t")
		}
	}
	return out
}

// lines splits s into lines without their line endings.
func lines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

var (
	reTimeout = regexp.MustCompile(`(?i)\btimed? ?out\b|\btimeout\b`)
	reSyntax  = regexp.MustCompile(`\b(SyntaxError|IndentationError|TabError)\b|syntax error|\bexpected ['"]?[\w;:)(\]\[{}]+['"]?, found\b|Unexpected token`)
	reBuild   = regexp.MustCompile(`\b(ImportError|ModuleNotFoundError)\b|\[build failed\]|\[setup failed\]|cannot find module|Cannot find module|undefined: |ERR_MODULE_NOT_FOUND`)
	reRuntime = regexp.MustCompile(`(?m)^panic: |\bfatal error: |\b[A-Z]\w*(Error|Exception)\b|Traceback \(most recent call last\)`)
)

// kindOfText infers a failure kind from free text; "" when nothing shows.
func kindOfText(s string) string {
	switch {
	case reTimeout.MatchString(s):
		return KindTimeout
	case reSyntax.MatchString(s):
		return KindSyntax
	case reBuild.MatchString(s):
		return KindBuild
	case strings.Contains(s, "AssertionError") || strings.Contains(s, "ERR_ASSERTION"):
		return KindAssertion
	case reRuntime.MatchString(s):
		return KindRuntime
	}
	return ""
}

// kindOfException maps a Python or JavaScript exception type to a kind.
func kindOfException(typ string) string {
	t := typ
	if i := strings.LastIndexByte(t, '.'); i >= 0 {
		t = t[i+1:]
	}
	switch t {
	case "AssertionError", "AssertionFailedError", "Failed":
		return KindAssertion
	case "SyntaxError", "IndentationError", "TabError":
		return KindSyntax
	case "ImportError", "ModuleNotFoundError":
		return KindBuild
	case "Timeout", "TimeoutError", "TimeoutExpired":
		return KindTimeout
	case "":
		return ""
	}
	return KindRuntime
}
