package critic

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trioagent/trio/planner"
	"github.com/trioagent/trio/tools/testreport"
)

// canonical builds the suite options for files (workspace-relative path →
// content) in the tests folder dir, as DesignTests would have left them.
func canonical(dir, framework string, files map[string]string) []Option {
	var fs []SuiteFile
	for p, c := range files {
		fs = append(fs, SuiteFile{Path: p, Content: c})
	}
	slices.SortFunc(fs, func(a, b SuiteFile) int { return strings.Compare(a.Path, b.Path) })
	s := TestSuite{Version: 1, Dir: dir, Hash: suiteHash(fs)}
	for _, f := range fs {
		s.Files = append(s.Files, f.Path)
	}
	s.Tests, _ = DesignedTests(fs, framework)
	return []Option{WithSuite(s), WithSuiteFiles(fs...)}
}

// treeOf returns every path under dir in the workspace with its content
// ("" for folders, "-> target" for links).
func treeOf(t *testing.T, root, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "-> " + target
		case d.IsDir():
			if rel != dir {
				out[rel+"/"] = ""
			}
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// RestoreSuite finds each kind of change, undoes it without following
// links, and leaves exactly the canonical files; caches go without counting.
func TestRestoreSuite(t *testing.T) {
	t.Parallel()
	suite := map[string]string{
		"acceptance/greet_test.go":     goTest("acceptance", "TestGreet"),
		"acceptance/data/input.txt":    "hello\n",
		"acceptance/data/more_test.go": goTest("data", "TestMore"),
	}
	want := map[string]string{"acceptance/data/": ""}
	for p, c := range suite {
		want[p] = c
	}
	tests := []struct {
		name    string
		tamper  func(t *testing.T, ws string)
		changes []string // "path change"
		caches  int
	}{
		{"unchanged", func(*testing.T, string) {}, nil, 0},
		{"modified", func(t *testing.T, ws string) {
			writeFiles(t, ws, map[string]string{"acceptance/greet_test.go": goTest("acceptance", "TestGreet") + "// nothing to see\n"})
		}, []string{"acceptance/greet_test.go modified"}, 0},
		{"deleted", func(t *testing.T, ws string) {
			must(t, os.Remove(filepath.Join(ws, "acceptance/data/input.txt")))
		}, []string{"acceptance/data/input.txt deleted"}, 0},
		{"the whole folder deleted", func(t *testing.T, ws string) {
			must(t, os.RemoveAll(filepath.Join(ws, "acceptance")))
		}, []string{"acceptance/data/input.txt deleted", "acceptance/data/more_test.go deleted", "acceptance/greet_test.go deleted"}, 0},
		{"added file and folder", func(t *testing.T, ws string) {
			writeFiles(t, ws, map[string]string{"acceptance/zz_test.go": goTest("acceptance", "TestInit"), "acceptance/helper/x.go": "package helper\n"})
		}, []string{"acceptance/helper/ added", "acceptance/zz_test.go added"}, 0},
		{"caches are not tampering", func(t *testing.T, ws string) {
			writeFiles(t, ws, map[string]string{"acceptance/__pycache__/test_a.cpython-311.pyc": "x", "acceptance/data/b.pyc": "y"})
		}, nil, 2},
		{"suite file replaced by a symlink", func(t *testing.T, ws string) {
			writeFiles(t, ws, map[string]string{"trivial_test.go.txt": goTest("acceptance", "TestGreet")})
			must(t, os.Remove(filepath.Join(ws, "acceptance/greet_test.go")))
			must(t, os.Symlink("../trivial_test.go.txt", filepath.Join(ws, "acceptance/greet_test.go")))
		}, []string{"acceptance/greet_test.go replaced"}, 0},
		{"tests folder replaced by a symlink", func(t *testing.T, ws string) {
			must(t, os.Rename(filepath.Join(ws, "acceptance"), filepath.Join(ws, "elsewhere")))
			must(t, os.Symlink("elsewhere", filepath.Join(ws, "acceptance")))
		}, []string{"acceptance replaced", "acceptance/data/input.txt deleted", "acceptance/data/more_test.go deleted", "acceptance/greet_test.go deleted"}, 0},
		{"sub-folder replaced by a file", func(t *testing.T, ws string) {
			must(t, os.RemoveAll(filepath.Join(ws, "acceptance/data")))
			writeFiles(t, ws, map[string]string{"acceptance/data": "not a folder"})
		}, []string{"acceptance/data replaced", "acceptance/data/input.txt deleted", "acceptance/data/more_test.go deleted"}, 0},
		{"made unwritable", func(t *testing.T, ws string) {
			writeFiles(t, ws, map[string]string{"acceptance/data/input.txt": "changed\n"})
			must(t, os.Chmod(filepath.Join(ws, "acceptance/data"), 0o555))
		}, []string{"acceptance/data/input.txt modified"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, ws := newCritic(t, suite, &fakeModel{}, canonical("acceptance", testreport.FrameworkGo, suite)...)
			tt.tamper(t, ws)
			outside := treeOf(t, ws, ".")
			r, err := c.RestoreSuite()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ch := range r.Changes {
				got = append(got, ch.Path+" "+ch.Change)
			}
			if !slices.Equal(got, tt.changes) || len(r.Caches) != tt.caches {
				t.Errorf("changes %q, caches %q; want %q and %d caches", got, r.Caches, tt.changes, tt.caches)
			}
			if tree := treeOf(t, ws, "acceptance"); !equalMaps(tree, want) {
				t.Errorf("tests folder after restore:\n%q\nwant\n%q", tree, want)
			}
			// Nothing outside the tests folder changed: links were removed,
			// not written through.
			for p, content := range outside {
				if strings.HasPrefix(p, "acceptance") {
					continue
				}
				if got := treeOf(t, ws, ".")[p]; got != content {
					t.Errorf("%s outside the tests folder changed: %q, was %q", p, got, content)
				}
			}
			if pend := c.PendingChanges(); len(pend) != len(tt.changes) {
				t.Errorf("pending %v, want the %d changes kept for the next Check", pend, len(tt.changes))
			}
			// A second pass finds nothing.
			if r, err := c.RestoreSuite(); err != nil || len(r.Changes) != 0 {
				t.Errorf("second restore: %+v, %v", r, err)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// greetSuite is the canonical acceptance test of greetProject.
var greetSuite = map[string]string{"acceptance/greet_test.go": greetProject("")["acceptance/greet_test.go"]}

const trivialGreetTest = "package acceptance\n\nimport \"testing\"\n\nfunc TestGreetBasic(t *testing.T) {}\n"

// Check fails a round whose tests the project's code changed, with a
// tampering finding per change, even when the restored tests pass; and it
// runs the restored tests, not the rewritten ones.
func TestCheckTampering(t *testing.T) {
	t.Parallel()
	// Library code that rewrites the acceptance test whenever a test
	// binary that imports it starts (its working folder is the test's).
	rewriting := strings.Replace(greetProject("Hi")["greet.go"], "package greet\n",
		"package greet\n\nimport \"os\"\n\nfunc init() {\n\tif _, err := os.Stat(\"greet_test.go\"); err == nil {\n"+
			"\t\t_ = os.WriteFile(\"greet_test.go\", []byte("+goQuote(trivialGreetTest)+"), 0o644)\n\t}\n}\n", 1)
	tests := []struct {
		name       string
		greeting   string            // what Greet returns
		files      map[string]string // written over the project
		during     bool              // a change is expected while the checks ran
		testsPass  bool              // the restored tests pass
		notInModel bool              // the model's findings leave tampering out
	}{
		{name: "rewritten test, wrong code", greeting: "Hi", files: map[string]string{"acceptance/greet_test.go": trivialGreetTest}},
		{name: "rewritten test, right code", greeting: "Hello, Ada!", files: map[string]string{"acceptance/greet_test.go": trivialGreetTest}, testsPass: true, notInModel: true},
		{name: "code rewrites the test while it runs", greeting: "Hi", files: map[string]string{"greet.go": rewriting}, during: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			proj := greetProject(tt.greeting)
			reply := modelFindings
			if tt.notInModel {
				reply = `{"verdict": "fail", "failures": [{"test_id": "stray", "location": "", "expected": "x", "actual": "y", "kind": "assertion"}], "suspect_tests": [], "summary": "Something."}`
			}
			m := &fakeModel{replies: map[string][]string{AgentCritic: {reply}}}
			c, ws := newCritic(t, proj, m, canonical("acceptance", testreport.FrameworkGo, greetSuite)...)
			writeFiles(t, ws, tt.files)
			f, err := c.Check(context.Background(), greetPlan())
			if err != nil {
				t.Fatal(err)
			}
			if f.Passed() {
				t.Fatalf("verdict pass with the tests rewritten: %+v", f)
			}
			suite := checkNamed(f, CheckSuite)
			if suite.OK || !strings.Contains(suite.Detail, "tampering") || !strings.Contains(suite.Detail, "acceptance/greet_test.go modified") {
				t.Errorf("suite check %+v, want tampering naming acceptance/greet_test.go", suite)
			}
			if got := strings.Contains(suite.Detail, "while the checks ran"); got != tt.during {
				t.Errorf("suite check %q: a change while the checks ran %v, want %v", suite.Detail, got, tt.during)
			}
			if ok := checkNamed(f, CheckTests).OK; ok != tt.testsPass {
				t.Errorf("tests check ok %v, want %v (the restored test ran): %s", ok, tt.testsPass, checkNamed(f, CheckTests).Detail)
			}
			if !slices.ContainsFunc(f.Failures, func(x Failure) bool {
				return x.Kind == KindTampering && x.TestID == "tampering:acceptance/greet_test.go"
			}) {
				t.Errorf("failures %+v lack the tampering finding", f.Failures)
			}
			if got := readWS(t, ws, "acceptance/greet_test.go"); got != greetSuite["acceptance/greet_test.go"] {
				t.Errorf("acceptance test after the check: %q", got)
			}
			if pend := c.PendingChanges(); len(pend) != 0 {
				t.Errorf("pending after the check %v: reported changes must not count twice", pend)
			}
		})
	}
}

func goQuote(s string) string {
	return "\"" + strings.NewReplacer("\\", "\\\\", "\"", "\\\"", "\n", "\\n", "\t", "\\t").Replace(s) + "\""
}

func readWS(t *testing.T, ws, p string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ws, p))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A runner that the project's code shadowed or cut short passes no
// designed test by name, whatever its counts say; the finding names each
// missing test.
func TestCheckDesignedTestsByName(t *testing.T) {
	t.Parallel()
	pySuite := map[string]string{
		"tests/__init__.py": "",
		"tests/test_calc.py": "import unittest\n\nimport calc\n\n\nclass CalcTest(unittest.TestCase):\n" +
			"    def test_add(self):\n        self.assertEqual(calc.add(2, 3), 5)\n\n" +
			"    def test_zero(self):\n        self.assertEqual(calc.add(0, 0), 0)\n",
	}
	pyProject := func(extra map[string]string) map[string]string {
		files := map[string]string{"calc.py": "def add(a, b):\n    return a + b\n"}
		for p, c := range pySuite {
			files[p] = c
		}
		for p, c := range extra {
			files[p] = c
		}
		return files
	}
	pyPlan := func(cmd string) planner.Plan {
		return planner.Plan{Goal: "calc", TestCommand: cmd, TestsDir: "tests",
			Steps: []planner.Step{{ID: 1, Title: "calc", Description: "add", Files: []string{"calc.py"}, Expected: "x", Acceptance: "y"}}}
	}
	goPlan := greetPlan()
	goPlan.CLI = nil
	tests := []struct {
		name      string
		files     map[string]string
		suite     map[string]string
		dir       string
		framework string
		plan      planner.Plan
		missing   []string // designed tests the finding must name
		why       string
	}{
		{
			name: "the real runner passes every designed test", files: pyProject(nil), suite: pySuite, dir: "tests",
			framework: testreport.FrameworkUnittest, plan: pyPlan("python3 -m unittest discover -s tests -t ."),
		},
		{
			name: "a workspace unittest package shadows the runner", dir: "tests", suite: pySuite, framework: testreport.FrameworkUnittest,
			files: pyProject(map[string]string{
				"unittest/__init__.py": "",
				"unittest/__main__.py": "import sys\nsys.stderr.write('.\\n' + '-' * 70 + '\\nRan 2 tests in 0.000s\\n\\nOK\\n')\n",
			}),
			plan:    pyPlan("python3 -m unittest discover -s tests -t ."),
			missing: []string{"tests/test_calc.py::CalcTest::test_add", "tests/test_calc.py::CalcTest::test_zero"},
			why:     "counted 2 passed tests but named none",
		},
		{
			// pytest is not installed here, so a workspace pytest package
			// prints what pytest prints when a conftest.py skips every test.
			name: "everything skipped (a conftest.py that skips all)", dir: "tests", suite: pySuite, framework: testreport.FrameworkPytest,
			files: pyProject(map[string]string{
				"conftest.py":        "import pytest\n\ndef pytest_collection_modifyitems(items):\n    for i in items:\n        i.add_marker(pytest.mark.skip(reason='skipped by conftest'))\n",
				"pytest/__init__.py": "",
				"pytest/__main__.py": "print('tests/test_calc.py ss' + ' ' * 50 + '[100%]')\n" +
					"print('=' * 27 + ' short test summary info ' + '=' * 28)\nprint('SKIPPED [2] tests/test_calc.py: skipped by conftest')\n" +
					"print('=' * 30 + ' 2 skipped in 0.01s ' + '=' * 30)\n",
			}),
			plan:    pyPlan("python3 -m pytest -q"),
			missing: []string{"tests/test_calc.py::CalcTest::test_add", "tests/test_calc.py::CalcTest::test_zero"},
			why:     "2 tests were skipped",
		},
		{
			// The library ends any test binary but its own package's before a
			// test runs; the project's own test passes, so a count is not zero.
			name: "os.Exit(0) in an init", dir: "acceptance", suite: greetSuite, framework: testreport.FrameworkGo,
			files: func() map[string]string {
				p := greetProject("Hi")
				p["greet.go"] = "package greet\n\nimport (\n\t\"os\"\n\t\"strings\"\n)\n\nfunc init() {\n\tif strings.HasSuffix(os.Args[0], \"acceptance.test\") {\n\t\tos.Exit(0)\n\t}\n}\n\n// Greet greets name.\nfunc Greet(name string) string { return \"Hi\" }\n"
				p["greet_test.go"] = "package greet\n\nimport \"testing\"\n\nfunc TestOwn(t *testing.T) {}\n"
				return p
			}(),
			plan:    goPlan,
			missing: []string{"acceptance/greet_test.go::TestGreetBasic"},
			why:     "the test command did not run it",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := &fakeModel{replies: map[string][]string{AgentCritic: {modelFindings}}}
			c, _ := newCritic(t, tt.files, m, append(canonical(tt.dir, tt.framework, tt.suite), WithAllowed("**"))...)
			f, err := c.Check(context.Background(), tt.plan)
			if err != nil {
				t.Fatal(err)
			}
			tc := checkNamed(f, CheckTests)
			if len(tt.missing) == 0 {
				if !tc.OK || !strings.Contains(tc.Detail, "2 of 2 acceptance tests passed by name") {
					t.Fatalf("tests check %+v, want every designed test passed by name", tc)
				}
				return
			}
			if tc.OK || f.Passed() {
				t.Fatalf("tests check %+v, verdict %s: want a failure", tc, f.Verdict)
			}
			for _, id := range tt.missing {
				if !strings.Contains(tc.Detail, id+": not reported as passed") || !strings.Contains(tc.Detail, tt.why) {
					t.Errorf("tests detail lacks %q with %q:\n%s", id, tt.why, tc.Detail)
				}
				if !slices.ContainsFunc(f.Failures, func(x Failure) bool { return x.TestID == id && x.Kind == KindNotRun }) {
					t.Errorf("failures %+v lack %s (not_run)", f.Failures, id)
				}
			}
		})
	}
}

func TestDesignedTests(t *testing.T) {
	t.Parallel()
	goFile := `package acceptance

import (
	"testing"
	tt "testing"
)

func TestAdd(t *testing.T)        {}
func Test(t *testing.T)           {}
func TestÜber(t *testing.T)       {}
func Testlower(t *testing.T)      {}
func TestMain(m *testing.M)       {}
func TestHelper(x int)            {}
func FuzzParse(f *tt.F)           {}
func BenchmarkAdd(b *testing.B)   {}
func (s suite) TestMethod(t *testing.T) {}
func helper(t *testing.T)         {}
`
	base := "import unittest\n\n\nclass Base(unittest.TestCase):\n    def test_shared(self):\n        pass\n\n    def helper(self):\n        def test_nested():\n            pass\n"
	derived := "from tests.base import Base\nimport unittest\n\n\nclass Mixin:\n    def test_mixed(self):\n        pass\n\n\nclass Derived(\n        Mixin,\n        Base):\n    async def test_own(self):\n        pass\n\n\nclass TestPlain:\n    def test_plain(self):\n        pass\n\n\ndef test_function():\n    pass\n"
	tests := []struct {
		name      string
		files     map[string]string
		framework string
		want      []string
		langs     []string
	}{
		{"go", map[string]string{"a/x_test.go": goFile, "a/helper.go": "package acceptance\nfunc TestNot(t *testing.T) {}\n"}, testreport.FrameworkGo,
			[]string{"a/x_test.go::FuzzParse", "a/x_test.go::Test", "a/x_test.go::TestAdd", "a/x_test.go::TestÜber"}, []string{"Go"}},
		{"go files this machine does not build", map[string]string{
			"a/ignored_test.go":   "//go:build ignore\n\npackage a\n\nimport \"testing\"\n\nfunc TestIgnored(t *testing.T) {}\n",
			"a/x_windows_test.go": goTest("a", "TestWindows"),
			"a/broken_test.go":    "package a\n\nimport \"testing\"\n\nfunc TestBroken(t *testing.T) { syntax error\n",
		}, testreport.FrameworkGo, []string{"a/broken_test.go::TestBroken"}, []string{"Go"}},
		{"python under unittest", map[string]string{"tests/base.py": base, "tests/test_b.py": derived, "tests/test_base.py": "from tests.base import Base\n"}, testreport.FrameworkUnittest,
			[]string{"tests/test_b.py::Derived::test_mixed", "tests/test_b.py::Derived::test_own", "tests/test_b.py::Derived::test_shared"}, []string{"Python"}},
		{"python under pytest", map[string]string{"tests/test_b.py": derived, "tests/test_a.py": base}, testreport.FrameworkPytest,
			[]string{"tests/test_a.py::Base::test_shared", "tests/test_b.py::Derived::test_mixed", "tests/test_b.py::Derived::test_own",
				"tests/test_b.py::Derived::test_shared", "tests/test_b.py::TestPlain::test_plain", "tests/test_b.py::test_function"}, []string{"Python"}},
		{"python under another command", map[string]string{"tests/test_b.py": derived}, "", nil, nil},
		{"other languages", map[string]string{"test/a.test.js": "test('adds', () => {})\n", "tests/run.sh": "exit 0\n"}, testreport.FrameworkNode, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var files []SuiteFile
			for p, c := range tt.files {
				files = append(files, SuiteFile{Path: p, Content: c})
			}
			got, langs := DesignedTests(files, tt.framework)
			if !slices.Equal(got, tt.want) || !slices.Equal(langs, tt.langs) {
				t.Errorf("DesignedTests = %q, %q; want %q, %q", got, langs, tt.want, tt.langs)
			}
		})
	}
}

// Names match across the forms runners print, and a project file never
// stands in for a designed one.
func TestPassedByName(t *testing.T) {
	t.Parallel()
	c, ws := designCritic(t, &fakeModel{})
	writeFiles(t, ws, map[string]string{"go.mod": "module example.com/calc // the module\n", "test_calc.py": "x", "tests/test_calc.py": "x"})
	m := &nameMatcher{exists: c.exists, goPackage: c.goPackage}
	tests := []struct {
		id     string
		passed []string
		want   bool
	}{
		{"acceptance/calc_test.go::TestAdd", []string{"example.com/calc/acceptance.TestAdd"}, true},
		{"acceptance/calc_test.go::TestAdd", []string{"example.com/calc/acceptance.TestAdd/zero"}, true},
		{"acceptance/calc_test.go::TestAdd", []string{"example.com/calc/acceptance.TestAddMore"}, false},
		{"acceptance/calc_test.go::TestAdd", []string{"example.com/calc/other/acceptance.TestAdd"}, false},
		{"acceptance/calc_test.go::TestAdd", []string{"example.com/calc.TestAdd", "TestAdd"}, false},
		{"acceptance/calc_test.go::TestAdd", []string{"example.com/calc/acceptance.TestOther/x.TestAdd"}, false},
		{"tests/test_a.py::test_x", []string{"tests/test_a.py::test_x"}, true},
		{"tests/test_a.py::test_x", []string{"tests/test_a.py::test_x[1-2]"}, true},
		{"tests/test_a.py::test_x", []string{"test_a.py::test_x"}, true},        // pytest's rootdir is tests/
		{"tests/test_calc.py::test_x", []string{"test_calc.py::test_x"}, false}, // the project's own test_calc.py
		{"tests/test_a.py::C::test_x", []string{"tests/test_a.py::C::test_x"}, true},
		{"tests/test_a.py::C::test_x", []string{"tests/test_a.py::test_x", "tests/test_a.py::D::test_x"}, false},
		{"tests/test_a.py::C::test_x", []string{"tests.test_a.C.test_x"}, true},
		{"tests/test_a.py::C::test_x", []string{"test_a.C.test_x"}, true}, // discover -s tests
		{"tests/test_calc.py::C::test_x", []string{"test_calc.C.test_x"}, false},
		{"tests/test_a.py::C::test_x", []string{"other.test_a.C.test_x"}, false},
	}
	for _, tt := range tests {
		m.passed = tt.passed
		if got := m.passedByName(tt.id); got != tt.want {
			t.Errorf("passedByName(%q) in %q = %v, want %v", tt.id, tt.passed, got, tt.want)
		}
	}
}

// A reply whose files define no test the runner would collect goes back
// to the test designer, naming the rule.
func TestDesignTestsNeedsTests(t *testing.T) {
	t.Parallel()
	m := &fakeModel{replies: map[string][]string{AgentTestDesigner: {
		suiteJSON(t, map[string]string{"acceptance/a_test.go": "package acceptance\n\nfunc helper() {}\n"}),
		suiteJSON(t, map[string]string{"acceptance/a_test.go": goTest("acceptance", "TestA")}),
	}}}
	c, _ := designCritic(t, m)
	s, err := c.DesignTests(context.Background(), "g", greetPlan())
	if err != nil {
		t.Fatal(err)
	}
	if last := m.reqs[1].Messages[len(m.reqs[1].Messages)-1].Content; !strings.Contains(last, "func TestXxx(t *testing.T)") {
		t.Errorf("re-ask %q does not say what a test is", last)
	}
	if !slices.Equal(s.Tests, []string{"acceptance/a_test.go::TestA"}) {
		t.Errorf("tests %q", s.Tests)
	}
	if files := c.SuiteFiles(); len(files) != 1 || files[0].Content != goTest("acceptance", "TestA") {
		t.Errorf("canonical files %+v", files)
	}
	if err := s.Verify(c.SuiteFiles()); err != nil {
		t.Errorf("Verify of the suite's own files: %v", err)
	}
	if err := s.Verify([]SuiteFile{{Path: "acceptance/a_test.go", Content: trivialGreetTest}}); err == nil {
		t.Error("Verify accepted other content")
	}
}
