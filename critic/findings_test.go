package critic

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestNormalize(t *testing.T) {
	t.Parallel()
	tests := []struct{ a, b string }{
		{"--- FAIL: TestX (0.00s)", "--- FAIL: TestX (1.27s)"},
		{"ok  \texample.com/x\t0.003s", "ok  example.com/x 12.5s"},
		{"panic at 0xc000012345 goroutine 7", "panic at 0xc0000abcde goroutine 19"},
		{"2026/11/30 16:16:24 started", "2027-01-02T03:04:05.123Z started"},
		{"took 15ms then 3µs", "took 250ms then 1ns"},
		{"/tmp/go-build123/b001/x.test failed", "/tmp/go-build999/b001/x.test failed"},
		{"FAILED (errors=1) in 0.12 seconds", "FAILED (errors=1) in 3 seconds"},
	}
	for _, tt := range tests {
		if na, nb := Normalize(tt.a), Normalize(tt.b); na != nb {
			t.Errorf("Normalize(%q) = %q, Normalize(%q) = %q; want equal", tt.a, na, tt.b, nb)
		}
	}
	for _, pair := range [][2]string{
		{`Greet(Ada) = "Hi", want "Hello"`, `Greet(Ada) = "Yo", want "Hello"`},
		{"want 3 got 4", "want 3 got 5"},
		{"greet_test.go:11: failed", "greet_test.go:12: failed"},
	} {
		if Normalize(pair[0]) == Normalize(pair[1]) {
			t.Errorf("Normalize makes %q and %q equal", pair[0], pair[1])
		}
	}
}

func TestFingerprint(t *testing.T) {
	t.Parallel()
	base := Findings{
		Verdict: VerdictFail,
		Failures: []Failure{
			{TestID: "TestA", Kind: KindAssertion, Actual: "got 1 (0.01s)"},
			{TestID: "TestB", Kind: KindRuntime, Actual: "panic at 0xdeadbeef"},
		},
	}
	reordered := base
	reordered.Failures = []Failure{
		{TestID: "TestB", Kind: KindRuntime, Actual: "panic at 0xfeedface"},
		{TestID: "TestA", Kind: KindAssertion, Actual: "got 1 (3.20s)"},
	}
	otherKind := base
	otherKind.Failures = slices.Clone(base.Failures)
	otherKind.Failures[0].Kind = KindTimeout
	otherTest := base
	otherTest.Failures = base.Failures[:1]
	suspect := base
	suspect.Verdict = VerdictSuspectTest
	suspect.SuspectTests = []SuspectTest{{TestID: "TestA", Reason: "x"}}

	withChecks := Findings{Verdict: VerdictFail, Checks: []CheckResult{
		{Name: CheckTests, Detail: "go: 1 passed, 1 failed; exit code 1\nTestA (a_test.go:3): got 1 (0.02s)"},
		{Name: CheckFiles, OK: true, Detail: "all 3 planned files exist"},
	}, Failures: []Failure{{TestID: "TestA", Kind: KindAssertion, Actual: "the model's wording"}}}
	reworded := withChecks
	reworded.Checks = []CheckResult{
		{Name: CheckTests, Detail: "go: 1 passed, 1 failed; exit code 1\nTestA (a_test.go:3): got 1 (0.91s)"},
		{Name: CheckFiles, OK: true, Detail: "all 4 planned files exist"},
	}
	reworded.Failures = []Failure{{TestID: "A", Kind: KindRuntime, Actual: "other words"}}
	otherCheck := withChecks
	otherCheck.Checks = []CheckResult{{Name: CheckTests, Detail: "go: 1 passed, 1 failed; exit code 1\nTestA (a_test.go:3): got 2 (0.02s)"}}

	fp := base.Fingerprint()
	if len(fp) != 16 {
		t.Fatalf("fingerprint %q", fp)
	}
	if reordered.Fingerprint() != fp {
		t.Errorf("order or numbers changed the fingerprint")
	}
	for name, f := range map[string]Findings{"kind": otherKind, "tests": otherTest, "suspect": suspect} {
		if f.Fingerprint() == fp {
			t.Errorf("a different %s has the same fingerprint", name)
		}
	}
	if withChecks.Fingerprint() != reworded.Fingerprint() {
		t.Errorf("the model's wording or passing checks changed a check-based fingerprint")
	}
	if withChecks.Fingerprint() == otherCheck.Fingerprint() {
		t.Errorf("different check failures share a fingerprint")
	}
	if (Findings{Verdict: VerdictPass}).Fingerprint() != "" {
		t.Errorf("pass has a fingerprint")
	}
}

func TestGlobMatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"runs/**", "runs/a/b.json", true},
		{"runs/**", "runs", true},
		{"runs/**", "other/runs/x", false},
		{"**/*.md", "docs/a/b.md", true},
		{"*.md", "docs/a/b.md", true},
		{"docs/*.md", "docs/a/b.md", false},
		{"./out/", "out", true},
		{"[", "x", false},
		{"", "x", false},
	}
	for _, tt := range tests {
		if got := globMatch(tt.pattern, tt.name); got != tt.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
}

func TestFindStray(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, p := range []string{
		"main.go", "go.mod", "go.sum", "README.md", "LICENSE", ".gitignore",
		".git/HEAD", "acceptance/a_test.go", "acceptance/__pycache__/x.pyc",
		"pkg/__pycache__/m.cpython-312.pyc", "pkg/m.py", "pkg/m.pyc",
		".pytest_cache/v/cache", "node_modules/x/index.js", "web/package.json", "web/node_modules/y/i.js",
		"vendor/modules.txt", "vendor/example.com/x/x.go",
		"core", "core.1234", "a.tmp", "b.swp", ".DS_Store", "main.test", "notes.md",
		"build/out.bin", "runs/r/state.json", "old/keep.txt", "planned/__pycache__/needed.py",
	} {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	planned := []string{"main.go", "pkg/m.py", "web/package.json", "planned/__pycache__/needed.py"}
	r := newStrayRules(planned, "acceptance", map[string]bool{"old/keep.txt": true}, []string{"runs/**"})
	got, err := r.findStray(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		".DS_Store", ".pytest_cache/", "a.tmp", "b.swp", "build/out.bin", "core", "core.1234",
		"main.test", "node_modules/", "notes.md", "pkg/__pycache__/", "pkg/m.pyc",
	}
	if !slices.Equal(got, want) {
		t.Errorf("findStray =\n%q\nwant\n%q", got, want)
	}
}

func TestListFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, p := range []string{"b.go", "a/x.txt", ".git/HEAD"} {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ListFiles(os.DirFS(dir))
	if err != nil || !slices.Equal(got, []string{"a/x.txt", "b.go"}) {
		t.Errorf("ListFiles = %q, %v", got, err)
	}
}

func BenchmarkFingerprint(b *testing.B) {
	f := Findings{Verdict: VerdictFail, Checks: []CheckResult{
		{Name: CheckTests, Detail: "go: 40 passed, 3 failed; exit code 1\nTestA (a_test.go:3): got 1 (0.02s)\nTestB (b_test.go:9): panic at 0xc000123456\nTestC: timed out after 2m0s"},
		{Name: CheckStray, Detail: "2 stray paths\nnotes.txt\n__pycache__/"},
	}}
	b.ReportAllocs()
	for b.Loop() {
		_ = f.Fingerprint()
	}
}
