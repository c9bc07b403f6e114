package sentinel_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trioagent/trio/critic/sentinel"
	"github.com/trioagent/trio/tools/testreport"
)

const (
	goTest = "package acceptance\n\nimport (\n\t\"testing\"\n\n\t\"calc\"\n)\n\nfunc TestAddSmallNumbers(t *testing.T) {\n" +
		"\tif got := calc.Add(2, 3); got != 5 {\n\t\tt.Errorf(\"Add(2, 3) = %d\", got)\n\t}\n}\n"
	pyTest = "import unittest\n\nimport calc\n\n\nclass CalcTest(unittest.TestCase):\n" +
		"    def test_add_small_numbers(self):\n        self.assertEqual(calc.add(2, 3), 5)\n"
)

// project writes files under a new folder and returns it.
func project(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// runWith lays set's files over dir and runs argv there, as a check does.
func runWith(t *testing.T, dir string, set *sentinel.Set, framework string, argv ...string) (testreport.Report, int) {
	t.Helper()
	for _, f := range set.Files() {
		if err := os.WriteFile(filepath.Join(dir, f.Path), []byte(f.Content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-count=1", "PYTHONDONTWRITEBYTECODE=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return testreport.ParseExit(framework, stdout.String(), stderr.String(), code), code
}

func python(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true and no python3")
		}
		t.Skip("no python3")
	}
	return p
}

// An honest run of each runner: the sentinels fail and pass as written,
// Verify finds nothing, the exit status is non-zero only because of them,
// and the cleaned report holds the designed test alone.
func TestHonestRunsVerify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, framework, designed string
		files                     map[string]string
		argv                      func(t *testing.T) []string
	}{
		{"go", testreport.FrameworkGo, "TestAddSmallNumbers", map[string]string{
			"go.mod": "module calc\n\ngo 1.22\n", "calc.go": "package calc\n\nfunc Add(a, b int) int { return a + b }\n",
			"acceptance/calc_test.go": goTest}, func(*testing.T) []string { return []string{"go", "test", "-json", "./..."} }},
		{"unittest", testreport.FrameworkUnittest, "test_add_small_numbers", map[string]string{
			"calc.py": "def add(a, b):\n    return a + b\n", "tests/__init__.py": "", "tests/test_calc.py": pyTest},
			func(t *testing.T) []string {
				return []string{python(t), "-m", "unittest", "discover", "-v", "-b", "-s", "tests", "-t", "."}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var suite []sentinel.File
			for p, c := range tt.files {
				if strings.HasPrefix(p, "acceptance/") || strings.HasPrefix(p, "tests/") {
					suite = append(suite, sentinel.File{Path: p, Content: c})
				}
			}
			set := sentinel.New(nil, tt.framework, suite)
			if set.Empty() {
				t.Fatal("no sentinels")
			}
			dir := project(t, tt.files)
			rep, code := runWith(t, dir, set, tt.framework, tt.argv(t)...)
			if probs := set.Verify(rep, code, nil); len(probs) > 0 {
				t.Fatalf("an honest run: %+v\nreport %+v", probs, rep)
			}
			if !set.Failed(rep) || code == 0 {
				t.Errorf("exit %d, sentinel failed %v: want a failing run", code, set.Failed(rep))
			}
			clean := set.Clean(rep)
			if clean.Failed != 0 || clean.Errors != 0 || clean.Passed != 1 || len(clean.PassedTests) != 1 ||
				!strings.HasSuffix(clean.PassedTests[0], tt.designed) || len(clean.Nonces) != 0 {
				t.Errorf("clean report %+v: want the designed test alone, passed", clean)
			}
			if out := set.Scrub(rep.Output); strings.Contains(out, testreport.NoncePrefix) {
				t.Errorf("scrubbed output holds a nonce: %q", out)
			}
		})
	}
}

// Subverted runs, each through the real runner: Verify names a problem.
func TestForgedRunsFound(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, framework string
		files           map[string]string
		argv            func(t *testing.T) []string
	}{
		{"python patched assertEqual", testreport.FrameworkUnittest, map[string]string{
			"calc.py":           "import unittest\nunittest.TestCase.assertEqual = lambda *a, **k: None\n\ndef add(a, b):\n    return a - b\n",
			"tests/__init__.py": "", "tests/test_calc.py": pyTest},
			func(t *testing.T) []string {
				return []string{python(t), "-m", "unittest", "discover", "-v", "-s", "tests", "-t", "."}
			}},
		{"python failures reported as successes", testreport.FrameworkUnittest, map[string]string{
			"calc.py": "import unittest\nunittest.TestResult.addFailure = lambda self, t, e: self.addSuccess(t)\n" +
				"unittest.TextTestResult.addFailure = lambda self, t, e: self.addSuccess(t)\n\ndef add(a, b):\n    return a - b\n",
			"tests/__init__.py": "", "tests/test_calc.py": pyTest},
			func(t *testing.T) []string {
				return []string{python(t), "-m", "unittest", "discover", "-v", "-s", "tests", "-t", "."}
			}},
		{"go exit status 0 after failures", testreport.FrameworkGo, map[string]string{
			"go.mod":                  "module calc\n\ngo 1.22\n",
			"calc.go":                 "package calc\n\nfunc Add(a, b int) int { return a + b }\n",
			"acceptance/calc_test.go": goTest,
			"run.sh":                  "go test -json ./... ; exit 0\n"},
			func(*testing.T) []string { return []string{"sh", "run.sh"} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var suite []sentinel.File
			for p, c := range tt.files {
				if strings.HasPrefix(p, "acceptance/") || strings.HasPrefix(p, "tests/") {
					suite = append(suite, sentinel.File{Path: p, Content: c})
				}
			}
			set := sentinel.New(nil, tt.framework, suite)
			dir := project(t, tt.files)
			rep, code := runWith(t, dir, set, tt.framework, tt.argv(t)...)
			probs := set.Verify(rep, code, nil)
			if len(probs) == 0 {
				t.Fatalf("no problem found in a subverted run: report %+v, exit %d", rep, code)
			}
			for _, p := range probs {
				for _, s := range set.Tests() {
					if strings.Contains(p.Why, s.Name) || strings.Contains(p.Why, s.Nonce) {
						t.Errorf("problem %q names a sentinel", p.Why)
					}
				}
			}
		})
	}
}

// Reports no honest runner makes, built by hand: each is a problem.
func TestVerifyReports(t *testing.T) {
	t.Parallel()
	set := sentinel.New([]byte("seed"), testreport.FrameworkGo, []sentinel.File{{Path: "acceptance/calc_test.go", Content: goTest}})
	var pass, fail sentinel.Test
	for _, s := range set.Tests() {
		if s.MustFail {
			fail = s
		} else {
			pass = s
		}
	}
	honest := testreport.Report{Passed: 2, Failed: 1,
		PassedTests: []string{"calc/acceptance.TestAddSmallNumbers", "calc/acceptance." + pass.Name},
		Failures:    []testreport.Failure{{Name: "calc/acceptance." + fail.Name}},
		Nonces:      []string{pass.Nonce, fail.Nonce}}
	if probs := set.Verify(honest, 1, nil); len(probs) != 0 {
		t.Fatalf("honest report: %+v", probs)
	}
	tests := map[string]func(r *testreport.Report) int{
		"must-fail passed": func(r *testreport.Report) int {
			r.PassedTests = append(r.PassedTests, "calc/acceptance."+fail.Name)
			r.Failures, r.Failed = nil, 0
			return 0
		},
		"must-fail missing":       func(r *testreport.Report) int { r.Failures, r.Failed = nil, 0; return 0 },
		"failure without nonce":   func(r *testreport.Report) int { r.Nonces = []string{pass.Nonce}; return 1 },
		"must-pass without nonce": func(r *testreport.Report) int { r.Nonces = []string{fail.Nonce}; return 1 },
		"must-pass missing": func(r *testreport.Report) int {
			r.PassedTests = r.PassedTests[:1]
			return 1
		},
		"must-pass failed": func(r *testreport.Report) int {
			r.PassedTests = r.PassedTests[:1]
			r.Failures = append(r.Failures, testreport.Failure{Name: "calc/acceptance." + pass.Name})
			return 1
		},
		"exit 0 after a failure": func(r *testreport.Report) int { return 0 },
	}
	for name, forge := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := honest
			r.PassedTests = slices.Clone(honest.PassedTests)
			r.Failures = slices.Clone(honest.Failures)
			code := forge(&r)
			if probs := set.Verify(r, code, nil); len(probs) == 0 {
				t.Errorf("no problem found in %+v (exit %d)", r, code)
			}
		})
	}
	// A group whose designed tests did not run expects no sentinel.
	if probs := set.Verify(testreport.Report{}, 1, func(string) bool { return false }); len(probs) != 0 {
		t.Errorf("a group that did not run: %+v", probs)
	}
}

// The same seed makes the same sentinels (a replayed check verifies its
// recorded result); another seed makes others. Names never collide with
// the suite's and read like its tests.
func TestSeedAndNames(t *testing.T) {
	t.Parallel()
	suite := []sentinel.File{{Path: "tests/test_calc.py", Content: pyTest}, {Path: "acceptance/calc_test.go", Content: goTest}}
	a := sentinel.New([]byte("one"), testreport.FrameworkUnittest, suite)
	b := sentinel.New([]byte("one"), testreport.FrameworkUnittest, suite)
	c := sentinel.New([]byte("two"), testreport.FrameworkUnittest, suite)
	if !slices.Equal(a.Tests(), b.Tests()) || !slices.Equal(a.Files(), b.Files()) {
		t.Error("the same seed made different sentinels")
	}
	if slices.Equal(a.Tests(), c.Tests()) {
		t.Error("another seed made the same sentinels")
	}
	seen := map[string]bool{}
	for _, s := range a.Tests() {
		if seen[s.Name] || strings.Contains(pyTest+goTest, s.Name) {
			t.Errorf("name %s is not unique", s.Name)
		}
		seen[s.Name] = true
		if !strings.HasPrefix(s.Name, "Test") && !strings.HasPrefix(s.Name, "test_") {
			t.Errorf("name %s does not read like a test", s.Name)
		}
		if !strings.HasPrefix(s.Nonce, testreport.NoncePrefix) {
			t.Errorf("nonce %s", s.Nonce)
		}
	}
	// The Python file keeps its own content first.
	for _, f := range a.Files() {
		if f.Path == "tests/test_calc.py" && !strings.HasPrefix(f.Content, pyTest) {
			t.Errorf("the Python host lost its content: %q", f.Content)
		}
	}
}
