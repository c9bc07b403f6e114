package testreport

import (
	"regexp"
	"strconv"
	"strings"
)

// goEvent is one line of `go test -json` (cmd/test2json's TestEvent, plus the
// build events the go command adds since Go 1.24).
type goEvent struct {
	Action      string
	Package     string
	Test        string
	Output      string
	ImportPath  string
	FailedBuild string
	// Elapsed is a test's (or package's) seconds, on its pass, fail or
	// skip event.
	Elapsed float64
}

type goTest struct {
	name    string
	state   string // run, pass, fail or skip
	out     []string
	elapsed float64
}

type goPackage struct {
	path        string
	tests       []*goTest
	byName      map[string]*goTest
	out         []string
	state       string // "", pass, fail or skip
	failedBuild string
}

// goRun collects the events of one `go test -json` stream.
type goRun struct {
	pkgs       []*goPackage
	byPath     map[string]*goPackage
	builds     map[string][]string
	buildOrder []string
	buildFail  map[string]bool
	stray      []string
	events     int
	tail       lineRing
}

var (
	goPkgLine   = regexp.MustCompile(`(?m)^(ok  |FAIL|\?   )\t\S+`)
	goLocation  = regexp.MustCompile(`^\s*([^\s:]+\.go):(\d+): `)
	goCompile   = regexp.MustCompile(`^([^\s:][^:]*\.go):(\d+)(?::(\d+))?: (.*)$`)
	goFrameFile = regexp.MustCompile(`^\t(\S+\.go):(\d+)(?: \+0x[0-9a-f]+)?$`)
	goGoroutine = regexp.MustCompile(`^goroutine \d+ \[`)
	goResult    = regexp.MustCompile(`^(\s*)--- (PASS|FAIL|SKIP): (\S+) \([\d.]+s\)`)
)

// ParseGoJSON parses the event stream of `go test -json`: each test's pass,
// fail or skip, a failing test's output as its message with the first
// `file.go:NN:` it printed (or, for a panic, the innermost frame in the
// tested module) as its location, and a package that did not build as one
// error per compiler or vet message. Output that is not a JSON stream (plain
// `go test` or `go test -v`) is parsed as text instead.
//
// Subtests count as tests; a parent with subtests counts only when it failed
// on its own, so one failing table case is one failure.
func ParseGoJSON(stdout, stderr string) Report {
	g := goRun{byPath: map[string]*goPackage{}, builds: map[string][]string{}, buildFail: map[string]bool{}}
	g.tail.max = tailLines
	for rest := stdout; rest != ""; {
		var line string
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			line, rest = rest, ""
		}
		g.line(line)
	}
	if g.events == 0 {
		return parseGoText(stdout, stderr)
	}
	return g.report(stderr)
}

func (g *goRun) line(line string) {
	if !hasJSONPrefix(line) {
		if strings.TrimSpace(line) != "" {
			g.addStray(line)
			g.tail.add(line)
		}
		return
	}
	ev, ok := decodeGoEvent(line)
	if !ok || ev.Action == "" {
		g.addStray(line)
		g.tail.add(line)
		return
	}
	g.events++
	switch ev.Action {
	case "build-output":
		if _, ok := g.builds[ev.ImportPath]; !ok {
			g.buildOrder = append(g.buildOrder, ev.ImportPath)
		}
		out := strings.TrimRight(ev.Output, "\n")
		g.builds[ev.ImportPath] = append(g.builds[ev.ImportPath], out)
		g.tail.add(out)
		return
	case "build-fail":
		if _, ok := g.builds[ev.ImportPath]; !ok {
			g.buildOrder = append(g.buildOrder, ev.ImportPath)
			g.builds[ev.ImportPath] = nil
		}
		g.buildFail[ev.ImportPath] = true
		return
	}
	if ev.Package == "" {
		return
	}
	p := g.pkg(ev.Package)
	if ev.Test == "" {
		switch ev.Action {
		case "output":
			out := strings.TrimRight(ev.Output, "\n")
			p.out = append(p.out, out)
			g.tail.add(out)
		case "pass", "fail", "skip":
			p.state = ev.Action
			if ev.FailedBuild != "" {
				p.failedBuild = ev.FailedBuild
			}
		}
		return
	}
	t := p.byName[ev.Test]
	if t == nil {
		t = &goTest{name: ev.Test, state: "run"}
		p.byName[ev.Test] = t
		p.tests = append(p.tests, t)
	}
	switch ev.Action {
	case "output":
		out := strings.TrimRight(ev.Output, "\n")
		g.tail.add(out)
		if t.state == "pass" || t.state == "skip" {
			return
		}
		t.out = append(t.out, out)
	case "pass", "skip":
		t.state = ev.Action
		t.elapsed = ev.Elapsed
		t.out = nil // a passing test's output is not needed; keep memory flat
	case "fail":
		t.state = "fail"
		t.elapsed = ev.Elapsed
	}
}

// addStray keeps a bounded number of the lines that were not events.
func (g *goRun) addStray(line string) {
	if len(g.stray) < messageLines {
		g.stray = append(g.stray, line)
	}
}

func (g *goRun) pkg(path string) *goPackage {
	p := g.byPath[path]
	if p == nil {
		p = &goPackage{path: path, byName: map[string]*goTest{}}
		g.byPath[path] = p
		g.pkgs = append(g.pkgs, p)
	}
	return p
}

func (g *goRun) report(stderr string) Report {
	r := Report{Framework: FrameworkGo, recognized: len(g.pkgs) > 0}
	var names passedNames
	reported := map[string]bool{}
	addBuild := func(importPath string, lines []string) {
		if reported[importPath] {
			return
		}
		reported[importPath] = true
		fs := goBuildFailures(importPath, lines)
		r.Errors += len(fs)
		r.Failures = append(r.Failures, fs...)
	}
	// Before Go 1.24 the compiler's messages went to stderr, not the stream.
	stderrBuild := goBuildBlocks(lines(stderr))
	for _, p := range g.pkgs {
		if p.failedBuild != "" || (p.state == "fail" && goBuildFailed(p.out)) {
			ip := p.failedBuild
			if ip == "" {
				ip = p.path
			}
			bl, ok := g.builds[ip]
			if !ok || len(bl) == 0 {
				bl = stderrBuild[goPlainPath(ip)]
				if len(bl) == 0 {
					bl = stderrBuild[p.path]
				}
			}
			if len(bl) == 0 {
				bl = goPackageMessage(p.out)
			}
			addBuild(ip, bl)
			continue
		}
		// A package with no result was cut off (the run was killed): a test
		// still running then did not finish either.
		passed, failed, skipped, fs := tallyGo(p.path, p.tests, p.state == "fail" || p.state == "")
		goPassed(p.path, p.tests, &names)
		for _, t := range p.tests {
			if t.state == "pass" && !strings.Contains(t.name, "/") {
				r.setDuration(goName(p.path, t.name), t.elapsed)
			}
		}
		r.Passed += passed
		r.Failed += failed
		r.Skipped += skipped
		r.Failures = append(r.Failures, fs...)
		if p.state == "fail" && failed == 0 {
			msg := goPackageMessage(p.out)
			if len(msg) == 0 {
				msg = []string{"the test binary failed without a failing test (os.Exit, TestMain or init)"}
			}
			text := message(msg)
			kind := kindOfText(text)
			if kind == "" {
				kind = KindRuntime
			}
			f := Failure{Name: p.path, Message: text, Kind: kind}
			f.File, f.Line = goPanicLocation(p.path, msg)
			r.Errors++
			r.Failures = append(r.Failures, f)
		}
	}
	for _, ip := range g.buildOrder {
		if g.buildFail[ip] {
			addBuild(ip, g.builds[ip])
		}
	}
	if len(g.stray) > 0 && r.Total() == 0 {
		// The go command failed before running anything ("go: ..." lines).
		r.Errors++
		r.Failures = append(r.Failures, Failure{Name: "go test", Message: message(g.stray), Kind: kindOfText(strings.Join(g.stray, "\n"))})
	}
	r.Failures = capFailures(r.Failures)
	r.PassedTests = names.list
	r.Output = tail(joinOutput(strings.Join(g.tail.lines(), "\n"), stderr), tailLines, tailBytes)
	return r
}

// goPassed adds a package's passing top-level tests as "pkg.TestName";
// subtests are left out because their parent passes only when they do.
func goPassed(pkg string, tests []*goTest, names *passedNames) {
	for _, t := range tests {
		if t.state != "pass" || strings.Contains(t.name, "/") {
			continue
		}
		names.add(goName(pkg, t.name))
	}
}

// goName is a test's name as PassedTests gives it: "pkg.TestName".
func goName(pkg, test string) string {
	if pkg == "" {
		return test
	}
	return pkg + "." + test
}

// tallyGo counts a package's tests. pkgFailed says the package failed, so a
// test that started and never finished failed with it (a timeout, a crash or
// os.Exit).
func tallyGo(pkg string, tests []*goTest, pkgFailed bool) (passed, failed, skipped int, fs []Failure) {
	hasChild := map[string]bool{}
	childFailed := map[string]bool{}
	for _, t := range tests {
		bad := t.state == "fail" || (t.state == "run" && pkgFailed)
		for n := t.name; ; {
			i := strings.LastIndexByte(n, '/')
			if i < 0 {
				break
			}
			n = n[:i]
			hasChild[n] = true
			if bad {
				childFailed[n] = true
			}
		}
	}
	for _, t := range tests {
		if hasChild[t.name] {
			own := (t.state == "fail" || (t.state == "run" && pkgFailed)) && !childFailed[t.name]
			if !own {
				continue
			}
		}
		switch t.state {
		case "pass":
			passed++
		case "skip":
			skipped++
		case "fail":
			failed++
			fs = append(fs, goFailure(pkg, t, false))
		case "run":
			if pkgFailed {
				failed++
				fs = append(fs, goFailure(pkg, t, true))
			}
		}
	}
	return passed, failed, skipped, fs
}

// goFailure builds a failing test's Failure from its output. unfinished says
// the test never reported a result.
func goFailure(pkg string, t *goTest, unfinished bool) Failure {
	var body []string
	for _, l := range t.out {
		s := strings.TrimSpace(l)
		if strings.HasPrefix(s, "=== ") || goResult.MatchString(l) {
			continue
		}
		body = append(body, l)
	}
	f := Failure{Name: t.name, Kind: KindAssertion, Seconds: t.elapsed}
	if pkg != "" {
		f.Name = pkg + "." + t.name
	}
	panicked := false
	for _, l := range body {
		if strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ") {
			panicked = true
			break
		}
	}
	if panicked {
		f.Kind = KindRuntime
		f.File, f.Line = goPanicLocation(pkg, body)
		// The goroutine dump is noise to a reader; File and Line keep its point.
		for i, l := range body {
			if goGoroutine.MatchString(l) {
				body = body[:i]
				break
			}
		}
	} else {
		for _, l := range body {
			if m := goLocation.FindStringSubmatch(l); m != nil {
				f.File = m[1]
				f.Line, _ = strconv.Atoi(m[2])
				break
			}
		}
	}
	body = dedent(trimBlank(body))
	text := strings.Join(body, "\n")
	switch {
	case strings.Contains(text, "panic: test timed out"):
		f.Kind = KindTimeout
	case unfinished && !panicked:
		f.Kind = KindRuntime
		body = append(body, "the test did not finish: the test binary exited (os.Exit, a crash or a timeout)")
	}
	f.Message = message(body)
	return f
}

// goPanicLocation finds the innermost stack frame of the tested module: the
// first frame whose function shares the package path's first element, or
// failing that the first frame in a _test.go file.
func goPanicLocation(pkg string, out []string) (string, int) {
	first := pkg
	if i := strings.IndexByte(first, '/'); i >= 0 {
		first = first[:i]
	}
	var testFile string
	var testLine int
	for i := 1; i < len(out); i++ {
		m := goFrameFile.FindStringSubmatch(out[i])
		if m == nil {
			continue
		}
		fn := strings.TrimSpace(out[i-1])
		line, _ := strconv.Atoi(m[2])
		if first != "" && !strings.HasPrefix(fn, "created by ") && !strings.HasPrefix(fn, "main.") &&
			(strings.HasPrefix(fn, first+"/") || strings.HasPrefix(fn, first+".")) {
			return m[1], line
		}
		if testFile == "" && strings.HasSuffix(m[1], "_test.go") {
			testFile, testLine = m[1], line
		}
	}
	return testFile, testLine
}

// goBuildFailed reports whether a package's own output says it did not build.
func goBuildFailed(out []string) bool {
	for _, l := range out {
		if strings.Contains(l, "[build failed]") || strings.Contains(l, "[setup failed]") {
			return true
		}
	}
	return false
}

// goPackageMessage is a package's own output without the result lines.
func goPackageMessage(out []string) []string {
	var msg []string
	for _, l := range out {
		s := strings.TrimSpace(l)
		if s == "FAIL" || s == "PASS" || strings.HasPrefix(s, "FAIL\t") || strings.HasPrefix(s, "ok  \t") ||
			strings.HasPrefix(s, "=== ") || s == "" {
			continue
		}
		msg = append(msg, l)
	}
	return msg
}

// goPlainPath strips the " [pkg.test]" suffix the go command adds to the
// import path of a package built for its tests.
func goPlainPath(ip string) string {
	if i := strings.Index(ip, " ["); i >= 0 {
		return ip[:i]
	}
	return ip
}

// goBuildFailures turns a failed build's output into one Failure per message.
func goBuildFailures(importPath string, out []string) []Failure {
	name := goPlainPath(importPath)
	for _, l := range out {
		// "# pkg" names the package that failed, which for a missing import
		// is not the import path the event carries.
		if h, ok := strings.CutPrefix(l, "# "); ok {
			if h = goPlainPath(strings.Trim(strings.TrimSpace(h), "[]")); h != "" {
				name = h
			}
			break
		}
	}
	var fs []Failure
	var cur *Failure
	flush := func() {
		if cur != nil {
			fs = append(fs, *cur)
			cur = nil
		}
	}
	var loose []string
	for _, l := range out {
		if strings.HasPrefix(l, "# ") || strings.TrimSpace(l) == "" {
			continue
		}
		if m := goCompile.FindStringSubmatch(l); m != nil {
			flush()
			line, _ := strconv.Atoi(m[2])
			kind := KindBuild
			if reSyntax.MatchString(m[4]) {
				kind = KindSyntax
			}
			cur = &Failure{Name: name, File: m[1], Line: line, Message: m[4], Kind: kind}
			continue
		}
		if cur != nil && (strings.HasPrefix(l, "\t") || strings.HasPrefix(l, " ")) {
			cur.Message += "\n" + strings.TrimSpace(l)
			continue
		}
		loose = append(loose, l)
	}
	flush()
	if len(fs) == 0 {
		msg := "the package did not build"
		if len(loose) > 0 {
			msg = message(loose)
		}
		fs = append(fs, Failure{Name: name, Message: msg, Kind: KindBuild})
	}
	return fs
}

// goBuildBlocks splits text build output ("# pkg" headers followed by
// messages) by package.
func goBuildBlocks(ls []string) map[string][]string {
	blocks := map[string][]string{}
	cur := ""
	for _, l := range ls {
		if p, ok := strings.CutPrefix(l, "# "); ok {
			cur = goPlainPath(strings.TrimSpace(strings.Trim(p, "[]")))
			continue
		}
		if cur != "" {
			blocks[cur] = append(blocks[cur], l)
		}
	}
	return blocks
}

func trimBlank(ls []string) []string {
	for len(ls) > 0 && strings.TrimSpace(ls[0]) == "" {
		ls = ls[1:]
	}
	for len(ls) > 0 && strings.TrimSpace(ls[len(ls)-1]) == "" {
		ls = ls[:len(ls)-1]
	}
	return ls
}

func capFailures(fs []Failure) []Failure {
	if len(fs) > maxFailures {
		return fs[:maxFailures]
	}
	return fs
}

// lineRing keeps the last max lines added.
type lineRing struct {
	buf  []string
	next int
	max  int
	full bool
}

func (r *lineRing) add(s string) {
	if r.max == 0 {
		return
	}
	for _, l := range strings.Split(s, "\n") {
		if len(r.buf) < r.max {
			r.buf = append(r.buf, l)
			continue
		}
		r.buf[r.next] = l
		r.next = (r.next + 1) % r.max
		r.full = true
	}
}

func (r *lineRing) lines() []string {
	if !r.full {
		return r.buf
	}
	return append(append([]string(nil), r.buf[r.next:]...), r.buf[:r.next]...)
}
