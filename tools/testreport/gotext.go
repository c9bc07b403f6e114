package testreport

import (
	"maps"
	"regexp"
	"slices"
	"strings"
)

var goPkgResult = regexp.MustCompile(`^(ok  |FAIL|\?   )\t(\S+)(.*)$`)

// parseGoText parses plain `go test` and `go test -v` output. Without -v a
// passing test prints nothing, so a package reported "ok" with no test lines
// counts as one passed test; run with -json for exact counts.
func parseGoText(stdout, stderr string) Report {
	r := Report{Framework: FrameworkGo}
	var names passedNames
	stderrBuild := goBuildBlocks(lines(stderr))
	stdoutBuild := goBuildBlocks(lines(stdout))
	var (
		tests   []*goTest
		byName  = map[string]*goTest{}
		cur     *goTest // the test whose result line came last
		running string  // the test named by the last "=== " line
		pkgOut  []string
	)
	get := func(name string) *goTest {
		t := byName[name]
		if t == nil {
			t = &goTest{name: name, state: "run"}
			byName[name] = t
			tests = append(tests, t)
		}
		return t
	}
	reset := func() {
		tests, byName, cur, running, pkgOut = nil, map[string]*goTest{}, nil, "", nil
	}
	for _, l := range lines(stdout) {
		if m := goResult.FindStringSubmatch(l); m != nil {
			t := get(m[3])
			t.state = strings.ToLower(m[2])
			cur, running = t, ""
			continue
		}
		if s, ok := strings.CutPrefix(l, "=== "); ok {
			if f := strings.Fields(s); len(f) >= 2 {
				get(f[1])
				running = f[1]
			}
			cur = nil
			continue
		}
		if s := strings.TrimSpace(l); s == "FAIL" || s == "PASS" {
			cur, running = nil, ""
			continue
		}
		if m := goPkgResult.FindStringSubmatch(l); m != nil {
			pkg, rest := m[2], m[3]
			r.recognized = true
			switch strings.TrimSpace(m[1]) {
			case "ok":
				goPassed(pkg, tests, &names)
				passed, _, skipped, _ := tallyGo(pkg, tests, false)
				if passed+skipped == 0 && !strings.Contains(rest, "[no tests to run]") {
					passed = 1
				}
				r.Passed += passed
				r.Skipped += skipped
			case "FAIL":
				if strings.Contains(rest, "[build failed]") || strings.Contains(rest, "[setup failed]") {
					bl := stderrBuild[pkg]
					if len(bl) == 0 {
						bl = stdoutBuild[pkg]
					}
					fs := goBuildFailures(pkg, bl)
					r.Errors += len(fs)
					r.Failures = append(r.Failures, fs...)
					break
				}
				goPassed(pkg, tests, &names)
				passed, failed, skipped, fs := tallyGo(pkg, tests, true)
				r.Passed += passed
				r.Failed += failed
				r.Skipped += skipped
				r.Failures = append(r.Failures, fs...)
				if failed == 0 {
					msg := goPackageMessage(pkgOut)
					if len(msg) == 0 {
						msg = []string{"the test binary failed without a failing test (os.Exit, TestMain or init)"}
					}
					text := message(msg)
					kind := kindOfText(text)
					if kind == "" {
						kind = KindRuntime
					}
					f := Failure{Name: pkg, Message: text, Kind: kind}
					f.File, f.Line = goPanicLocation(pkg, msg)
					r.Errors++
					r.Failures = append(r.Failures, f)
				}
			}
			reset()
			continue
		}
		switch {
		case cur != nil:
			cur.out = append(cur.out, l)
		case running != "":
			byName[running].out = append(byName[running].out, l)
		default:
			pkgOut = append(pkgOut, l)
		}
	}
	if r.Total() == 0 && strings.TrimSpace(stderr) != "" {
		// "go: ..." errors: nothing ran.
		msg := lines(stderr)
		for _, pkg := range slices.Sorted(maps.Keys(stderrBuild)) {
			fs := goBuildFailures(pkg, stderrBuild[pkg])
			r.Errors += len(fs)
			r.Failures = append(r.Failures, fs...)
		}
		if r.Errors == 0 {
			r.Errors = 1
			text := message(msg)
			r.Failures = append(r.Failures, Failure{Name: "go test", Message: text, Kind: kindOfText(text)})
		}
	}
	r.Failures = capFailures(r.Failures)
	r.PassedTests = names.list
	r.Output = tail(joinOutput(stdout, stderr), tailLines, tailBytes)
	return r
}
