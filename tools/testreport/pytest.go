package testreport

import (
	"regexp"
	"strconv"
	"strings"
)

var (
	pytestSummary  = regexp.MustCompile(`(?m)^=*\s*((?:\d+ \w+|no tests ran)(?:, \d+ \w+)*) in [\d.]+s(?: \([^)]*\))?\s*=*\s*$`)
	pytestCount    = regexp.MustCompile(`(\d+) (passed|failed|skipped|xfailed|xpassed|errors?|deselected|warnings?|rerun)`)
	pytestSection  = regexp.MustCompile(`^={3,} (.+?) ={3,}$`)
	pytestBlock    = regexp.MustCompile(`^_{3,} (.+?) _{3,}$`)
	pytestShort    = regexp.MustCompile(`^(FAILED|ERROR|XPASS|PASSED|SKIPPED|XFAIL)\s+(.+?)(?: - (.*))?$`)
	pytestRaiseLoc = regexp.MustCompile(`^(\S+?):(\d+): (\w[\w.]*)$`)
	pytestFrameLoc = regexp.MustCompile(`^(\S+?):(\d+): in \S+`)
	pythonFileLoc  = regexp.MustCompile(`File "([^"]+)", line (\d+)`)
	pytestVerbose  = regexp.MustCompile(`^(\S+::\S+) (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b`)
)

// pytestDetail is what one block of the FAILURES or ERRORS section says.
type pytestDetail struct {
	title   string
	file    string
	line    int
	excType string
	message []string
}

// ParsePytest parses pytest's terminal output in its default, -q, -v and
// -rA forms and any --tb style: the names of passing tests from -v's
// "node PASSED" lines and -rA's "PASSED node" summary lines, the counts from the final "N failed, M
// passed in Ts" line, one failure per FAILED or ERROR line of the short test
// summary, with the message and location from that test's traceback block
// (the raising line `path:NN: ErrorType`, or for a file that does not import
// the syntax error's `File "...", line N`). Collection errors count as
// errors; "no tests ran" is a report with no tests. xfailed tests count as
// skipped and xpassed ones as passed. Paths under pytest's rootdir are made
// relative to it.
func ParsePytest(stdout, stderr string) Report {
	r := Report{Framework: FrameworkPytest}
	all := lines(joinOutput(stdout, stderr))
	rootdir := ""
	var (
		section string
		details []*pytestDetail
		cur     *pytestDetail
		short   [][3]string // kind, node id, message
		verbose = map[string]string{}
		summary string
		names   passedNames
	)
	for _, l := range all {
		if strings.HasPrefix(l, "rootdir: ") {
			rootdir = strings.TrimPrefix(l, "rootdir: ")
			if i := strings.Index(rootdir, ", "); i >= 0 {
				rootdir = rootdir[:i]
			}
			continue
		}
		if m := pytestSummary.FindStringSubmatch(l); m != nil {
			summary = m[1]
			section = ""
			cur = nil
			continue
		}
		if m := pytestSection.FindStringSubmatch(l); m != nil {
			section = strings.ToLower(m[1])
			cur = nil
			continue
		}
		if m := pytestVerbose.FindStringSubmatch(l); m != nil && (section == "" || section == "test session starts") {
			verbose[m[1]] = m[2]
			if m[2] == "PASSED" || m[2] == "XPASS" {
				names.add(m[1])
			}
			continue
		}
		switch section {
		case "errors", "failures":
			if m := pytestBlock.FindStringSubmatch(l); m != nil && strings.Trim(m[1], "_ ") != "" {
				cur = &pytestDetail{title: m[1]}
				details = append(details, cur)
				continue
			}
			if cur != nil {
				cur.message = append(cur.message, l)
			}
		case "short test summary info":
			m := pytestShort.FindStringSubmatch(l)
			switch {
			case m == nil:
			case m[1] == "FAILED" || m[1] == "ERROR" || m[1] == "XPASS":
				short = append(short, [3]string{m[1], m[2], m[3]})
				if m[1] == "XPASS" {
					// "XPASS node reason"; a strict xpass shows as FAILED instead.
					id := m[2]
					if i := strings.IndexByte(id, ' '); i >= 0 && !strings.Contains(id[:i], "[") {
						id = id[:i]
					}
					names.add(id)
				}
			case m[1] == "PASSED":
				names.add(m[2]) // -rA or -rp
			}
		}
	}
	for _, d := range details {
		d.finish()
	}
	if rootdir == "" {
		rootdir = pytestRootFromPaths(details)
	}
	rel := func(p string) string {
		if rootdir != "" {
			if s, ok := strings.CutPrefix(p, rootdir+"/"); ok {
				return s
			}
		}
		return p
	}

	if summary != "" {
		r.recognized = true
		for _, m := range pytestCount.FindAllStringSubmatch(summary, -1) {
			n, _ := strconv.Atoi(m[1])
			switch m[2] {
			case "passed", "xpassed":
				r.Passed += n
			case "failed":
				r.Failed += n
			case "skipped", "xfailed":
				r.Skipped += n
			case "error", "errors":
				r.Errors += n
			}
		}
	} else {
		// No final line (the run was cut short): count what was printed.
		for _, st := range verbose {
			switch st {
			case "PASSED", "XPASS":
				r.Passed++
			case "SKIPPED", "XFAIL":
				r.Skipped++
			}
		}
		for _, s := range short {
			switch s[0] {
			case "FAILED":
				r.Failed++
			case "ERROR":
				r.Errors++
			}
		}
		if len(short) == 0 {
			for _, d := range details {
				if d.isError() {
					r.Errors++
				} else {
					r.Failed++
				}
			}
		}
	}

	used := make([]bool, len(details))
	for _, s := range short {
		if s[0] == "XPASS" {
			continue // strict xpass shows as FAILED; a plain XPASS is not a failure
		}
		f := Failure{Name: s[1], Message: s[2]}
		if i := matchPytestDetail(details, used, s[0], s[1]); i >= 0 {
			used[i] = true
			details[i].fill(&f)
		}
		if f.Kind == "" {
			f.Kind = kindOfText(f.Message)
			if f.Kind == "" && s[0] == "FAILED" {
				f.Kind = KindAssertion
			}
		}
		f.File = rel(f.File)
		r.Failures = append(r.Failures, f)
	}
	for i, d := range details {
		if used[i] {
			continue
		}
		f := Failure{Name: d.name()}
		d.fill(&f)
		f.File = rel(f.File)
		r.Failures = append(r.Failures, f)
	}
	r.Failures = capFailures(r.Failures)
	r.PassedTests = names.list
	r.Output = tail(joinOutput(stdout, stderr), tailLines, tailBytes)
	return r
}

func (d *pytestDetail) isError() bool {
	return strings.HasPrefix(d.title, "ERROR ")
}

// name is the test (or file) a block is about, from its title.
func (d *pytestDetail) name() string {
	t := d.title
	for _, p := range []string{"ERROR at setup of ", "ERROR at teardown of ", "ERROR collecting "} {
		if s, ok := strings.CutPrefix(t, p); ok {
			return s
		}
	}
	return t
}

// matchPytestDetail finds the unused block about node id, -1 if none.
func matchPytestDetail(details []*pytestDetail, used []bool, kind, nodeID string) int {
	path, rest, hasTest := strings.Cut(nodeID, "::")
	want := strings.ReplaceAll(rest, "::", ".")
	for i, d := range details {
		if used[i] || d.isError() != (kind == "ERROR") {
			continue
		}
		n := d.name()
		if (!hasTest && n == path) || (hasTest && (n == want || strings.HasSuffix(want, "."+n))) {
			return i
		}
	}
	return -1
}

// finish extracts location, exception type and message from a block's lines.
func (d *pytestDetail) finish() {
	body := trimBlank(d.message)
	var eLines []string
	lastFrameFile, lastFrameLine := "", 0
	for _, l := range body {
		if m := pytestRaiseLoc.FindStringSubmatch(l); m != nil {
			d.file = m[1]
			d.line, _ = strconv.Atoi(m[2])
			d.excType = m[3]
			continue
		}
		if m := pytestFrameLoc.FindStringSubmatch(l); m != nil && !pythonLibrary(m[1]) {
			lastFrameFile = m[1]
			lastFrameLine, _ = strconv.Atoi(m[2])
			continue
		}
		if s, ok := strings.CutPrefix(l, "E"); ok && (s == "" || s[0] == ' ') {
			eLines = append(eLines, s)
		}
	}
	eLines = dedent(eLines)
	if d.file == "" {
		d.file, d.line = lastFrameFile, lastFrameLine
	}
	if d.excType == "" && len(eLines) > 0 {
		d.excType = exceptionType(eLines[len(eLines)-1])
		if d.excType == "" {
			d.excType = exceptionType(eLines[0])
		}
		if d.excType == "" && strings.HasPrefix(eLines[0], "assert ") {
			d.excType = "AssertionError"
		}
	}
	if kindOfException(d.excType) == KindSyntax {
		for _, l := range eLines {
			if m := pythonFileLoc.FindStringSubmatch(l); m != nil {
				d.file = m[1]
				d.line, _ = strconv.Atoi(m[2])
				break
			}
		}
	}
	if len(eLines) == 0 {
		eLines = body
	}
	d.message = eLines
}

// fill copies what the block says into f, keeping a message f already has
// only when the block has none.
func (d *pytestDetail) fill(f *Failure) {
	f.File, f.Line = d.file, d.line
	if len(d.message) > 0 {
		f.Message = message(d.message)
	}
	f.Kind = kindOfException(d.excType)
	if d.excType == "Failed" && strings.Contains(f.Message, "Timeout") {
		f.Kind = KindTimeout
	}
	if f.Kind == "" {
		f.Kind = kindOfText(f.Message)
	}
}

var pyExcType = regexp.MustCompile(`^([A-Za-z_][\w.]*)(?::|$)`)

// exceptionType is the exception named at the start of a Python error line.
func exceptionType(l string) string {
	m := pyExcType.FindStringSubmatch(strings.TrimSpace(l))
	if m == nil {
		return ""
	}
	t := m[1]
	base := t[strings.LastIndexByte(t, '.')+1:]
	if strings.HasSuffix(base, "Error") || strings.HasSuffix(base, "Exception") || strings.HasSuffix(base, "Exit") ||
		strings.HasSuffix(base, "Interrupt") || base == "Failed" || base == "StopIteration" || strings.HasSuffix(base, "Warning") {
		return t
	}
	return ""
}

// pythonLibrary reports whether a traceback path is the interpreter's or an
// installed package's rather than the project's.
func pythonLibrary(p string) bool {
	return strings.HasPrefix(p, "<") || strings.Contains(p, "/lib/python") ||
		strings.Contains(p, "site-packages") || strings.Contains(p, "dist-packages")
}

// pytestRootFromPaths infers the rootdir -q leaves out: a block about a file
// ("ERROR collecting tests/x.py") whose traceback names it by absolute path.
func pytestRootFromPaths(details []*pytestDetail) string {
	for _, d := range details {
		n := d.name()
		if i := strings.Index(n, "::"); i >= 0 {
			n = n[:i]
		}
		if n == "" || strings.HasPrefix(n, "/") {
			continue
		}
		if root, ok := strings.CutSuffix(d.file, "/"+n); ok && strings.HasPrefix(d.file, "/") {
			return root
		}
		for _, l := range d.message {
			if m := pythonFileLoc.FindStringSubmatch(l); m != nil {
				if root, ok := strings.CutSuffix(m[1], "/"+n); ok && strings.HasPrefix(m[1], "/") {
					return root
				}
			}
		}
	}
	return ""
}
