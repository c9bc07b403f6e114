// Package sentinel makes the control tests that prove a test runner was
// honest, and reads a run's report against them.
//
// A check lays a Set over the acceptance tests just before it runs them and
// removes it right after: for each Go package of the suite a new _test.go
// file, and for each Python test file a few tests appended to it, so that
// the sentinels run in the same runner invocation and the same process as
// the designed tests whatever the test command selects. Each Set has
// tests that must fail and tests that must pass, each named from the same
// vocabulary as real test names (so a forger cannot tell them by name) and
// each carrying a random nonce: a must-fail test fails with its nonce in
// the assertion's message, a must-pass test prints its nonce where the
// runner shows it. Verify then tells a report an honest runner could have
// made from one it could not:
//
//   - a must-fail sentinel reported passed, or missing, or failed without
//     its nonce in the output (an assertion patched to do nothing, a
//     runner that prints "ok" for every test it finds, a process that
//     exits at import);
//   - a must-pass sentinel that failed or whose nonce is not in the output
//     (names reported without the tests running);
//   - a run that exited 0 although a must-fail sentinel failed (a forged
//     exit status).
//
// The nonces are derived from a seed, so a check replayed from a
// write-ahead log (the same seed) verifies its recorded result. A forger
// that reads the sentinels' source at run time and imitates them exactly
// is not caught: sentinels raise the bar from "print PASS for every name"
// to "understand the check", and the kernel boundary, the canonical suite
// and the trusted caches do the rest.
//
// This package only makes text and reads reports: the caller writes the
// files, runs the command and removes them.
package sentinel

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"go/parser"
	"go/token"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/trioagent/trio/tools/testreport"
)

// File is a workspace-relative path and its content.
type File struct {
	Path    string
	Content string
}

// Test is one sentinel.
type Test struct {
	// Name is the function or method name, unique in the suite.
	Name string
	// Host is the file that holds it (a new Go file, or the Python test
	// file it was appended to).
	Host string
	// Group is what must have run for the sentinel to be expected: the Go
	// package folder, or the Python test file.
	Group    string
	MustFail bool
	Nonce    string
}

// Set is the sentinels of one check.
type Set struct {
	tests []Test
	// files are the files to lay over the suite: whole new contents.
	files []File
}

// nonceRE matches the nonces sentinels print; testreport collects them.
var nonceRE = regexp.MustCompile(testreport.NoncePattern)

// New makes the sentinels for the suite's files as run by framework (a
// testreport Framework constant). seed makes the names and nonces (the
// same seed, the same Set); nil takes a random one. Files in languages
// without sentinels (and Python files when the framework is neither
// unittest nor pytest) get none; an empty Set verifies anything.
func New(seed []byte, framework string, suite []File) *Set {
	if seed == nil {
		seed = make([]byte, 32)
		rand.Read(seed)
	}
	g := &gen{key: seed, taken: map[string]bool{}}
	for _, f := range suite {
		g.vocabulary(f.Content)
	}
	s := &Set{}
	var goDirs []string
	goPkg := map[string]string{}
	for _, f := range suite {
		if !strings.HasSuffix(f.Path, "_test.go") {
			continue
		}
		dir := path.Dir(f.Path)
		if _, ok := goPkg[dir]; ok {
			continue
		}
		pf, err := parser.ParseFile(token.NewFileSet(), f.Path, f.Content, parser.PackageClauseOnly)
		if err != nil {
			continue
		}
		goPkg[dir] = pf.Name.Name
		goDirs = append(goDirs, dir)
	}
	slices.Sort(goDirs)
	for _, dir := range goDirs {
		s.addGo(g, dir, goPkg[dir], suite)
	}
	if framework == testreport.FrameworkUnittest || framework == testreport.FrameworkPytest {
		for _, f := range suite {
			base := path.Base(f.Path)
			if strings.HasSuffix(base, ".py") && (strings.HasPrefix(base, "test") || strings.HasSuffix(base, "_test.py")) {
				s.addPython(g, f, framework == testreport.FrameworkPytest)
			}
		}
	}
	return s
}

// Files returns the files to write over the suite for the check: new
// files and the full new contents of changed ones.
func (s *Set) Files() []File { return slices.Clone(s.files) }

// Tests returns the sentinels.
func (s *Set) Tests() []Test { return slices.Clone(s.tests) }

// Empty reports whether the Set has no sentinel.
func (s *Set) Empty() bool { return s == nil || len(s.tests) == 0 }

func (s *Set) addGo(g *gen, dir, pkg string, suite []File) {
	pass := Test{Name: g.goName(), Group: dir, Nonce: g.nonce()}
	fail := Test{Name: g.goName(), Group: dir, MustFail: true, Nonce: g.nonce()}
	host := ""
	for host == "" || slices.ContainsFunc(suite, func(f File) bool { return f.Path == host }) {
		host = path.Join(dir, g.snake(2)+"_test.go")
	}
	pass.Host, fail.Host = host, host
	var b strings.Builder
	fmt.Fprintf(&b, "package %s\n\nimport \"testing\"\n\n", pkg)
	fmt.Fprintf(&b, "func %s(t *testing.T) {\n\tt.Log(%q)\n}\n\n", pass.Name, pass.Nonce)
	fmt.Fprintf(&b, "func %s(t *testing.T) {\n\tif got, want := %q, %q; got != want {\n\t\tt.Errorf(\"%%s: got %%q, want %%q\", %q, got, want)\n\t}\n}\n",
		fail.Name, g.word(), g.word()+"s", fail.Nonce)
	s.tests = append(s.tests, pass, fail)
	s.files = append(s.files, File{Path: host, Content: b.String()})
}

func (s *Set) addPython(g *gen, f File, pytest bool) {
	group := f.Path
	var b strings.Builder
	b.WriteString(f.Content)
	if !strings.HasSuffix(f.Content, "\n") {
		b.WriteString("\n")
	}
	alias := "_" + g.snake(2)
	b.WriteString("\n\n")
	if pytest {
		// pytest captures what a passing test prints; capsys.disabled()
		// is its own way to show it.
		pass := Test{Name: g.pyName(), Host: f.Path, Group: group, Nonce: g.nonce()}
		fail := Test{Name: g.pyName(), Host: f.Path, Group: group, MustFail: true, Nonce: g.nonce()}
		fmt.Fprintf(&b, "def %s(capsys):\n    with capsys.disabled():\n        print(%q, flush=True)\n\n\n", pass.Name, pass.Nonce)
		fmt.Fprintf(&b, "def %s():\n    assert %q == %q, %q\n", fail.Name, g.word(), g.word()+"s", fail.Nonce)
		s.tests = append(s.tests, pass, fail)
		if !strings.Contains(f.Content, "unittest") {
			s.files = append(s.files, File{Path: f.Path, Content: b.String()})
			return
		}
		b.WriteString("\n\n")
	}
	// unittest, or pytest running TestCase classes: the TestCase
	// assertions are what a patch of unittest would change.
	class := g.className()
	fail1 := Test{Name: g.pyName(), Host: f.Path, Group: group, MustFail: true, Nonce: g.nonce()}
	fail2 := Test{Name: g.pyName(), Host: f.Path, Group: group, MustFail: true, Nonce: g.nonce()}
	fmt.Fprintf(&b, "import sys as %s_sys, unittest as %s_unittest\n\n\n", alias, alias)
	fmt.Fprintf(&b, "class %s(%s_unittest.TestCase):\n", class, alias)
	if !pytest {
		pass := Test{Name: g.pyName(), Host: f.Path, Group: group, Nonce: g.nonce()}
		// The real stdout: unittest's -b buffers sys.stdout.
		fmt.Fprintf(&b, "    def %s(self):\n        %s_sys.__stdout__.write(%q + \"\\n\")\n        %s_sys.__stdout__.flush()\n\n",
			pass.Name, alias, pass.Nonce, alias)
		s.tests = append(s.tests, pass)
	}
	fmt.Fprintf(&b, "    def %s(self):\n        self.assertEqual(%q, %q, %q)\n\n", fail1.Name, g.word(), g.word()+"s", fail1.Nonce)
	fmt.Fprintf(&b, "    def %s(self):\n        self.assertTrue(%q == %q, %q)\n", fail2.Name, g.word(), g.word()+"s", fail2.Nonce)
	s.tests = append(s.tests, fail1, fail2)
	s.files = append(s.files, File{Path: f.Path, Content: b.String()})
}

// Problem is one way a report departs from what an honest runner prints.
type Problem struct {
	// Test is the sentinel, empty for the exit status.
	Test Test
	// Why says what was wrong, without the sentinel's name or nonce (it
	// may reach the Worker).
	Why string
}

// Clean returns rep without the sentinels: their names, failures,
// times and counts, and the nonces. The designed tests are judged on it.
func (s *Set) Clean(rep testreport.Report) testreport.Report {
	clean := rep
	clean.Nonces = nil
	if s.Empty() {
		return clean
	}
	clean.PassedTests, clean.Failures, clean.Durations = nil, nil, nil
	for _, n := range rep.PassedTests {
		if _, ok := s.match(n); ok {
			clean.Passed--
			continue
		}
		clean.PassedTests = append(clean.PassedTests, n)
		if d, ok := rep.Durations[n]; ok {
			if clean.Durations == nil {
				clean.Durations = map[string]float64{}
			}
			clean.Durations[n] = d
		}
	}
	for _, f := range rep.Failures {
		if _, ok := s.match(f.Name); ok {
			clean.Failed--
			continue
		}
		clean.Failures = append(clean.Failures, f)
	}
	clean.Passed = max(clean.Passed, 0)
	clean.Failed = max(clean.Failed, 0)
	clean.Output = s.Scrub(rep.Output)
	return clean
}

// Failed reports whether rep shows a must-fail sentinel failed, so that
// an honest runner's exit status is not 0.
func (s *Set) Failed(rep testreport.Report) bool {
	for _, f := range rep.Failures {
		if t, ok := s.match(f.Name); ok && t.MustFail {
			return true
		}
	}
	return false
}

// Verify reads rep (the run's parsed report, with the nonces its output
// held) and the run's exit code against the Set, and returns the ways
// they depart from what an honest runner prints. ran says whether a group
// (a Go package folder, a Python test file) ran at all: when none of its
// designed tests was reported, its sentinels are not expected either (the
// designed tests' absence fails the check on its own); nil expects every
// group.
func (s *Set) Verify(rep testreport.Report, exitCode int, ran func(group string) bool) []Problem {
	if s.Empty() {
		return nil
	}
	passed := map[string]bool{}
	failed := map[string]bool{}
	for _, n := range rep.PassedTests {
		if t, ok := s.match(n); ok {
			passed[t.Name] = true
		}
	}
	for _, f := range rep.Failures {
		if t, ok := s.match(f.Name); ok {
			failed[t.Name] = true
		}
	}
	nonces := map[string]bool{}
	for _, n := range rep.Nonces {
		nonces[n] = true
	}
	// A runner that lists more failures than it kept may have dropped a
	// sentinel's; a runner that names no passing test cannot show one.
	failuresComplete := len(rep.Failures) >= rep.Failed+rep.Errors
	namesPassed := len(rep.PassedTests) > 0
	var probs []Problem
	anyFailed := false
	for _, t := range s.tests {
		if ran != nil && !ran(t.Group) {
			continue
		}
		switch {
		case t.MustFail && passed[t.Name]:
			probs = append(probs, Problem{t, "a control test that must fail was reported passed: the assertions or the runner do not work as written"})
		case t.MustFail && failed[t.Name] && !nonces[t.Nonce]:
			probs = append(probs, Problem{t, "a control test failed without its own message in the output: the failure was not the test's"})
		case t.MustFail && failed[t.Name]:
			anyFailed = true
		case t.MustFail && failuresComplete:
			probs = append(probs, Problem{t, "a control test that must fail is missing from the report: the runner did not run the test files as written"})
		case !t.MustFail && failed[t.Name]:
			probs = append(probs, Problem{t, "a control test that must pass failed: the test runner or its environment was changed"})
		case !t.MustFail && namesPassed && !passed[t.Name]:
			probs = append(probs, Problem{t, "a control test that must pass is missing from the report: the runner did not run the test files as written"})
		case !t.MustFail && passed[t.Name] && !nonces[t.Nonce]:
			probs = append(probs, Problem{t, "a control test was reported passed without printing what it prints: the report was not made by running it"})
		}
	}
	if anyFailed && exitCode == 0 {
		probs = append(probs, Problem{Why: "the test command exited 0 although a control test failed: the exit status was forged"})
	}
	return probs
}

// match finds the sentinel a reported test name stands for: its name as a
// whole identifier in the runner's form (pkg.Name, module.Class.name,
// path::Class::name[params], "name (module.Class.name)").
func (s *Set) match(reported string) (Test, bool) {
	for _, t := range s.tests {
		if containsIdent(reported, t.Name) {
			return t, true
		}
	}
	return Test{}, false
}

// Scrub removes every line that names a sentinel or holds a nonce, so that
// text made from a check's output can reach a model without them.
func (s *Set) Scrub(text string) string {
	if s.Empty() || text == "" {
		return text
	}
	lines := strings.SplitAfter(text, "\n")
	out := lines[:0]
	for _, l := range lines {
		if nonceRE.MatchString(l) || slices.ContainsFunc(s.tests, func(t Test) bool { return containsIdent(l, t.Name) }) {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "")
}

func containsIdent(s, name string) bool {
	for off := 0; ; {
		i := strings.Index(s[off:], name)
		if i < 0 {
			return false
		}
		i += off
		end := i + len(name)
		if (i == 0 || !identByte(s[i-1])) && (end == len(s) || !identByte(s[end])) {
			return true
		}
		off = i + 1
	}
}

func identByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// gen draws names and nonces from a keyed stream.
type gen struct {
	key   []byte
	n     uint64
	words []string
	taken map[string]bool
}

// common are words real test names use, beside the suite's own.
var common = []string{"basic", "empty", "input", "large", "edge", "returns", "error", "value", "invalid",
	"negative", "zero", "unicode", "order", "many", "single", "whitespace", "boundary", "round", "trip",
	"parse", "format", "handles", "reports", "nested", "missing", "default", "limit", "case", "output", "result"}

// vocabulary adds the words of the identifiers in src that look like test
// names.
func (g *gen) vocabulary(src string) {
	for _, id := range testIdent.FindAllString(src, -1) {
		for _, w := range splitWords(id) {
			w = strings.ToLower(w)
			if len(w) >= 3 && len(w) <= 12 && w != "test" && !slices.Contains(g.words, w) && len(g.words) < 200 {
				g.words = append(g.words, w)
			}
		}
	}
	for _, id := range ident.FindAllString(src, -1) {
		g.taken[id] = true
	}
}

var (
	testIdent = regexp.MustCompile(`\b(?:Test|test_?)[A-Za-z0-9_]+`)
	ident     = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
)

func splitWords(id string) []string {
	var out []string
	cur := []rune{}
	for _, r := range id {
		switch {
		case r == '_':
			if len(cur) > 0 {
				out = append(out, string(cur))
			}
			cur = cur[:0]
		case unicode.IsUpper(r) && len(cur) > 0:
			out = append(out, string(cur))
			cur = []rune{r}
		default:
			cur = append(cur, r)
		}
	}
	if len(cur) > 0 {
		out = append(out, string(cur))
	}
	return out
}

func (g *gen) next() uint64 {
	m := hmac.New(sha256.New, g.key)
	binary.Write(m, binary.BigEndian, g.n)
	g.n++
	return binary.BigEndian.Uint64(m.Sum(nil))
}

func (g *gen) word() string {
	if len(g.words) > 0 && g.next()%3 != 0 {
		return g.words[g.next()%uint64(len(g.words))]
	}
	return common[g.next()%uint64(len(common))]
}

func (g *gen) nonce() string {
	m := hmac.New(sha256.New, g.key)
	binary.Write(m, binary.BigEndian, g.n)
	g.n++
	return testreport.NoncePrefix + hex.EncodeToString(m.Sum(nil)[:16])
}

// unique draws names from mk until one is new to the suite and the Set.
func (g *gen) unique(mk func() string) string {
	for {
		n := mk()
		if !g.taken[n] {
			g.taken[n] = true
			return n
		}
	}
}

func (g *gen) snake(n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = g.word()
	}
	return strings.Join(ws, "_")
}

func camel(s string) string {
	var b strings.Builder
	for _, w := range strings.Split(s, "_") {
		if w != "" {
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	return b.String()
}

func (g *gen) goName() string {
	return g.unique(func() string { return "Test" + camel(g.snake(2+int(g.next()%2))) })
}

func (g *gen) pyName() string {
	return g.unique(func() string { return "test_" + g.snake(2+int(g.next()%2)) })
}

func (g *gen) className() string {
	return g.unique(func() string { return "Test" + camel(g.snake(2)) })
}
