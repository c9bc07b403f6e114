package testreport

import (
	"regexp"
	"strconv"
	"strings"
)

var (
	unittestRan    = regexp.MustCompile(`(?m)^Ran (\d+) tests? in [\d.]+s`)
	unittestStatus = regexp.MustCompile(`^(OK|FAILED|NO TESTS RAN)(?: \((.*)\))?\s*$`)
	unittestHeader = regexp.MustCompile(`^(FAIL|ERROR|UNEXPECTED SUCCESS): (\S+)(?: \(([^)]*)\))?(.*)$`)
	unittestStat   = regexp.MustCompile(`(failures|errors|skipped|expected failures|unexpected successes)=(\d+)`)
	// unittestTest is -v's description of a test, "test_x (mod.Class.test_x)"
	// (before Python 3.11 "test_x (mod.Class)"), and what follows it on the line.
	unittestTest = regexp.MustCompile(`^(\w+) \(([\w.]+)\)(.*)$`)
)

// ParseUnittest parses the output of `python -m unittest` (quiet or -v; it
// writes to stderr): the "Ran N tests" count, the final "OK" or "FAILED
// (failures=1, errors=2, skipped=1)" line, and one failure per FAIL: or
// ERROR: block with the innermost project frame `File "...", line NN` of its
// traceback as the location and the exception at its end as the message. A
// test module that fails to import is an error of kind "build". Expected
// failures count as skipped; unexpected successes as failed, as unittest
// itself judges them.
func ParseUnittest(stdout, stderr string) Report {
	r := Report{Framework: FrameworkUnittest}
	all := lines(joinOutput(stdout, stderr))
	ran, haveRan := 0, false
	counts := map[string]int{}
	var blocks [][]string
	var cur []string
	inBlock := false
	var names passedNames
	pending := "" // a test whose result is on a later line
	for i, l := range all {
		if !inBlock {
			pending = unittestVerbose(l, pending, &names)
		}
		if m := unittestRan.FindStringSubmatch(l); m != nil {
			ran, _ = strconv.Atoi(m[1])
			haveRan = true
			continue
		}
		if haveRan {
			if m := unittestStatus.FindStringSubmatch(l); m != nil {
				for _, s := range unittestStat.FindAllStringSubmatch(m[2], -1) {
					counts[s[1]], _ = strconv.Atoi(s[2])
				}
			}
		}
		isRule := func(ch string) bool { return len(l) >= 40 && strings.Trim(l, ch) == "" }
		switch {
		case isRule("="):
			if inBlock && len(cur) > 0 {
				blocks = append(blocks, cur)
			}
			cur, inBlock = nil, i+1 < len(all) && unittestHeader.MatchString(all[i+1])
		case isRule("-"):
			// The rule under a header stays in the block as its separator;
			// the rule before "Ran N tests" ends the last block.
			if inBlock && i+1 < len(all) && unittestRan.MatchString(all[i+1]) {
				blocks = append(blocks, cur)
				cur, inBlock = nil, false
			} else if inBlock {
				cur = append(cur, l)
			}
		default:
			if inBlock {
				cur = append(cur, l)
			}
		}
	}
	if inBlock && len(cur) > 0 {
		blocks = append(blocks, cur)
	}
	for _, b := range blocks {
		if f, ok := unittestFailure(b); ok {
			r.Failures = append(r.Failures, f)
		}
	}
	if haveRan {
		r.recognized = true
		r.Failed = counts["failures"] + counts["unexpected successes"]
		r.Errors = counts["errors"]
		r.Skipped = counts["skipped"] + counts["expected failures"]
		r.Passed = max(0, ran-r.Failed-r.Errors-r.Skipped)
	} else {
		// Cut short before the summary: count the blocks.
		for _, f := range r.Failures {
			if f.Kind == KindAssertion {
				r.Failed++
			} else {
				r.Errors++
			}
		}
	}
	r.Failures = capFailures(r.Failures)
	r.PassedTests = names.list
	r.Output = tail(joinOutput(stdout, stderr), tailLines, tailBytes)
	return r
}

// unittestVerbose reads one line of -v's progress: "name (qualified) ...
// ok" names a passing test. The result can come on a later line, after a
// docstring's first line or after what the test wrote to stderr; pending
// carries the test until then and is returned for the next line. Subtest
// lines ("name (qualified) (i=2) ... FAIL") name no test of their own.
func unittestVerbose(l, pending string, names *passedNames) string {
	if m := unittestTest.FindStringSubmatch(l); m != nil {
		name := unittestName(m[1], m[2])
		rest := strings.TrimRight(m[3], " ")
		switch {
		case rest == "" || rest == " ...":
			return name // a docstring line or the test's own output comes first
		case strings.HasPrefix(rest, " ... "):
			switch status := strings.TrimSpace(rest[len(" ... "):]); {
			case status == "ok":
				names.add(name)
				return ""
			case unittestResult(status):
				return ""
			}
			return name // the test's output, then its result
		}
		return "" // a subtest: "name (qualified) (i=2) ... FAIL"
	}
	if pending == "" {
		return ""
	}
	t := strings.TrimSpace(l)
	if i := strings.LastIndex(t, " ... "); i >= 0 {
		t = strings.TrimSpace(t[i+len(" ... "):])
	}
	switch {
	case t == "ok":
		names.add(pending)
		return ""
	case unittestResult(t):
		return ""
	}
	return pending
}

// unittestResult reports whether s is one of -v's results other than ok.
func unittestResult(s string) bool {
	return s == "FAIL" || s == "ERROR" || s == "expected failure" || s == "unexpected success" ||
		strings.HasPrefix(s, "skipped")
}

// unittestName is the qualified name of a test described as name
// (qualified): module.Class.test, whichever Python printed it.
func unittestName(name, q string) string {
	if q == name || strings.HasSuffix(q, "."+name) {
		return q
	}
	return q + "." + name
}

// unittestFailure reads one "FAIL: test (module.Class.test)" block.
func unittestFailure(b []string) (Failure, bool) {
	m := unittestHeader.FindStringSubmatch(b[0])
	if m == nil {
		return Failure{}, false
	}
	name := m[2]
	if q := m[3]; q != "" {
		switch {
		case q == name || strings.HasSuffix(q, "."+name):
			name = q
		case !strings.Contains(q, " "):
			name = q + "." + name // Python before 3.11 printed only module.Class
		}
	}
	if strings.Contains(m[3], "unittest.loader.") {
		name = m[2] // the test module that did not import
	}
	name = strings.TrimSpace(name + m[4])
	body := trimBlank(b[1:])
	if len(body) > 0 && strings.Trim(body[0], "-") == "" {
		body = trimBlank(body[1:])
	}
	f := Failure{Name: name}
	for _, l := range body {
		if fm := pythonFileLoc.FindStringSubmatch(l); fm != nil && strings.HasPrefix(strings.TrimSpace(l), "File ") && !pythonLibrary(fm[1]) {
			f.File = fm[1]
			f.Line, _ = strconv.Atoi(fm[2])
		}
	}
	// The exception is the unindented text after the last frame.
	start := len(body)
	for start > 0 {
		l := body[start-1]
		if strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t") || strings.HasPrefix(l, "Traceback (most recent call last)") {
			break
		}
		start--
	}
	exc := trimBlank(body[start:])
	if len(exc) == 0 {
		exc = body
	}
	f.Message = message(exc)
	typ := ""
	if len(exc) > 0 {
		typ = exceptionType(exc[0])
	}
	switch {
	case m[1] == "UNEXPECTED SUCCESS":
		f.Kind = KindAssertion
		if f.Message == "" {
			f.Message = "unexpected success"
		}
	case strings.Contains(b[0], "unittest.loader._FailedTest") || strings.Contains(b[0], "unittest.loader.ModuleImportFailure"):
		f.Kind = KindBuild
		if kindOfException(typ) == KindSyntax {
			f.Kind = KindSyntax
			for _, l := range exc {
				if fm := pythonFileLoc.FindStringSubmatch(l); fm != nil {
					f.File = fm[1]
					f.Line, _ = strconv.Atoi(fm[2])
				}
			}
		}
	case typ != "":
		f.Kind = kindOfException(typ)
	case m[1] == "FAIL":
		f.Kind = KindAssertion
	default:
		f.Kind = KindRuntime
	}
	return f, true
}
