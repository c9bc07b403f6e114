package testreport

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// wantFailure is what a test asserts about one Failure; Message is a
// substring the message must contain.
type wantFailure struct {
	Name, File string
	Line       int
	Kind       string
	Message    string
}

type wantReport struct {
	Framework                       string
	Passed, Failed, Skipped, Errors int
	OK                              bool
	Failures                        []wantFailure
}

var (
	goFailures = []wantFailure{
		{"example.com/fixture/broken", "broken/broken_test.go", 6, KindBuild, "undefined: undefinedSix"},
		{"example.com/fixture/broken", "broken/broken_test.go", 9, KindBuild, "declared and not used: unused"},
		{"example.com/fixture/broken", "broken/broken_test.go", 9, KindBuild, "cannot use 7 (untyped int constant) as string value"},
		{"example.com/fixture/failing.TestSub", "failing_test.go", 14, KindAssertion, "Sub(5, 3) = 8, want 2\nfailing_test.go:16: second line of output"},
		{"example.com/fixture/failing.TestSubTable/pos", "failing_test.go", 22, KindAssertion, "Sub(1, 1) != 0"},
		{"example.com/fixture/panicking.TestOutOfRange", "/workspace/panicking/panicking.go", 3, KindRuntime, "panic: runtime error: index out of range [5] with length 2"},
	}
	pytestFailures = []wantFailure{
		{"tests/test_calc.py::test_add_wrong", "tests/test_calc.py", 12, KindAssertion, "AssertionError: two and two\nassert 4 == 5"},
		{"tests/test_calc.py::test_div_zero", "calc.py", 6, KindRuntime, "ZeroDivisionError: division by zero"},
		{"tests/test_calc.py::TestCalc::test_method_fails", "tests/test_calc.py", 31, KindAssertion, "At index 2 diff: 3 != 4"},
		{"tests/test_calc.py::test_param[2-2-5]", "tests/test_calc.py", 48, KindAssertion, "assert 4 == 5"},
		{"tests/test_calc.py::test_uses_broken", "tests/test_calc.py", 39, KindRuntime, "RuntimeError: fixture exploded"},
	}
	pytestCollectFailures = []wantFailure{
		{"tests/test_import.py", "tests/test_import.py", 1, KindBuild, "ImportError: cannot import name 'multiply' from 'calc'"},
		{"tests/test_syntax.py", "tests/test_syntax.py", 1, KindSyntax, "SyntaxError: invalid syntax"},
	}
	unittestFailures = []wantFailure{
		{"test_broken_import", "/workspace/test_broken_import.py", 3, KindBuild, "ImportError: cannot import name 'multiply' from 'calc'"},
		{"test_calc.CalcTest.test_type_error", "/workspace/calc.py", 2, KindRuntime, "TypeError: unsupported operand type(s) for +: 'int' and 'NoneType'"},
		{"test_calc.CalcTest.test_add_wrong", "/workspace/test_calc.py", 11, KindAssertion, "AssertionError: 4 != 5 : two and two"},
		{"test_calc.CalcTest.test_sub (i=2)", "/workspace/test_calc.py", 27, KindAssertion, "AssertionError: 2 not less than 2"},
	}
	nodeFailures = []wantFailure{
		{"adds wrong", "/workspace/test/calc.test.js", 11, KindAssertion, "4 !== 5"},
		{"throws", "/workspace/test/calc.test.js", 15, KindRuntime, "Cannot read properties of null (reading 'foo')"},
		{"inner bad", "/workspace/test/calc.test.js", 23, KindAssertion, "Expected values to be strictly deep-equal:\n+ actual - expected"},
	}
)

func TestParseFixtures(t *testing.T) {
	t.Parallel()
	tests := map[string]wantReport{
		"go_json":      {FrameworkGo, 6, 3, 1, 3, false, goFailures},
		"go_text":      {FrameworkGo, 1, 3, 0, 3, false, goFailures}, // without -v, a passing package counts once
		"go_text_v":    {FrameworkGo, 6, 3, 1, 3, false, goFailures},
		"go_json_pass": {FrameworkGo, 3, 0, 1, 0, true, nil},
		"go_json_more": {FrameworkGo, 1, 2, 0, 2, false, []wantFailure{
			{"example.com/more/setupfail", "setupfail/setupfail_test.go", 6, KindBuild, "no required module provides package example.com/nope; to add it:\ngo get example.com/nope"},
			{"example.com/more/exits.TestExit", "", 0, KindRuntime, "the test did not finish"},
			{"example.com/more/slow.TestForever", "/workspace/slow/slow_test.go", 11, KindTimeout, "panic: test timed out after 3s"},
			{"example.com/more/vetfail", "vetfail/vetfail_test.go", 9, KindBuild, `fmt.Printf format %d has arg "not a number" of wrong type string`},
		}},
		"pytest_fail":         {FrameworkPytest, 3, 4, 2, 1, false, pytestFailures},
		"pytest_fail_q":       {FrameworkPytest, 3, 4, 2, 1, false, pytestFailures},
		"pytest_fail_ra":      {FrameworkPytest, 3, 4, 2, 1, false, pytestFailures},
		"pytest_fail_tbshort": {FrameworkPytest, 3, 4, 2, 1, false, pytestFailures},
		"pytest_fail_v":       {FrameworkPytest, 3, 4, 2, 1, false, pytestFailures},
		"pytest_pass_q":       {FrameworkPytest, 2, 0, 0, 0, true, nil},
		"pytest_collect":      {FrameworkPytest, 0, 0, 0, 2, false, pytestCollectFailures},
		"pytest_collect_q":    {FrameworkPytest, 0, 0, 0, 2, false, pytestCollectFailures},
		"pytest_empty":        {FrameworkPytest, 0, 0, 0, 0, false, nil},
		"pytest_empty_q":      {FrameworkPytest, 0, 0, 0, 0, false, nil},
		"unittest_fail_v":     {FrameworkUnittest, 2, 2, 2, 2, false, unittestFailures},
		"unittest_fail":       {FrameworkUnittest, 2, 2, 2, 2, false, unittestFailures},
		"unittest_pass_v":     {FrameworkUnittest, 2, 0, 0, 0, true, nil},
		"unittest_empty":      {FrameworkUnittest, 0, 0, 0, 0, false, nil},
		"node_fail_tap":       {FrameworkNode, 2, 4, 1, 0, false, nodeFailures}, // node counts the failing suite too
		"node_fail_spec":      {FrameworkNode, 2, 4, 1, 0, false, nodeFailures},
		"node_pass_tap":       {FrameworkNode, 2, 0, 0, 0, true, nil},
		"npm_fail":            {FrameworkNode, 2, 4, 1, 0, false, nodeFailures},
	}
	runs := fixtureRuns("python3")
	if len(runs) != len(tests) {
		t.Errorf("%d fixtures recorded, %d checked", len(runs), len(tests))
	}
	for _, fr := range runs {
		want, ok := tests[fr.name]
		if !ok {
			t.Errorf("fixture %s has no expectations", fr.name)
			continue
		}
		stdout, stderr, code := fixture(t, fr.name)
		fw := FrameworkOf(fr.argv)
		if fw != want.Framework {
			t.Errorf("FrameworkOf(%q) = %q, want %q", fr.argv, fw, want.Framework)
		}
		check := func(t *testing.T, got Report) {
			t.Helper()
			checkReport(t, got, want)
		}
		t.Run(fr.name, func(t *testing.T) {
			t.Parallel()
			check(t, ParseExit(fw, stdout, stderr, code))
			t.Run("guessed", func(t *testing.T) {
				check(t, Parse("", stdout, stderr))
			})
		})
	}
}

func checkReport(t *testing.T, got Report, want wantReport) {
	t.Helper()
	if got.Framework != want.Framework || got.Passed != want.Passed || got.Failed != want.Failed ||
		got.Skipped != want.Skipped || got.Errors != want.Errors {
		t.Errorf("got %s (framework %q), want %s", got.Summary(), got.Framework,
			Report{Framework: want.Framework, Passed: want.Passed, Failed: want.Failed, Skipped: want.Skipped, Errors: want.Errors}.Summary())
	}
	if got.OK() != want.OK {
		t.Errorf("OK() = %v, want %v", got.OK(), want.OK)
	}
	// Runners order failures differently between modes (pytest -rA lists
	// errors first); compare them by name and position among equal names.
	key := func(name string, i int) string { return fmt.Sprintf("%s#%d", name, i) }
	index := func(names []string) map[string]int {
		seen, m := map[string]int{}, map[string]int{}
		for i, n := range names {
			m[key(n, seen[n])] = i
			seen[n]++
		}
		return m
	}
	var gotNames, wantNames []string
	for _, f := range got.Failures {
		gotNames = append(gotNames, f.Name)
	}
	for _, f := range want.Failures {
		wantNames = append(wantNames, f.Name)
	}
	if len(gotNames) != len(wantNames) {
		t.Fatalf("failures %q, want %q", gotNames, wantNames)
	}
	gi := index(gotNames)
	seen := map[string]int{}
	for _, w := range want.Failures {
		k := key(w.Name, seen[w.Name])
		seen[w.Name]++
		i, ok := gi[k]
		if !ok {
			t.Errorf("no failure named %q; got %q", w.Name, gotNames)
			continue
		}
		f := got.Failures[i]
		if f.File != w.File || f.Line != w.Line || f.Kind != w.Kind {
			t.Errorf("%s: at %s:%d kind %q, want %s:%d kind %q", w.Name, f.File, f.Line, f.Kind, w.File, w.Line, w.Kind)
		}
		if !strings.Contains(f.Message, w.Message) {
			t.Errorf("%s: message %q does not contain %q", w.Name, f.Message, w.Message)
		}
		if len(f.Message) > messageBytes+8 {
			t.Errorf("%s: message of %d bytes", w.Name, len(f.Message))
		}
	}
	if len(got.Output) > tailBytes {
		t.Errorf("output tail of %d bytes", len(got.Output))
	}
}

func TestParseOutputTail(t *testing.T) {
	t.Parallel()
	stdout, stderr, code := fixture(t, "go_json")
	r := ParseExit(FrameworkGo, stdout, stderr, code)
	// The tail is the text the events carried, not the JSON.
	if strings.Contains(r.Output, `"Action"`) || !strings.Contains(r.Output, "FAIL\texample.com/fixture/panicking") {
		t.Errorf("Output = %q", r.Output)
	}
	if n := strings.Count(r.Output, "\n") + 1; n > tailLines {
		t.Errorf("Output has %d lines", n)
	}
}

func TestParseExit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		framework      string
		stdout, stderr string
		code           int
		errors         int
		kind, message  string
	}{
		{"unknown output, failure status", "", "", "Segmentation fault (core dumped)\n", 139, 1, "", "Segmentation fault"},
		{"unknown output, success status", "", "building...\ndone\n", "", 0, 0, "", ""},
		{"nothing printed", "", "", "", 2, 1, "", "exited with status 2 and printed nothing"},
		{"command not found", "pytest", "", "/usr/bin/python3: No module named pytest\n", 1, 1, "", "No module named pytest"},
		{"timeout killed", "", "", "timeout: the monitored command dumped core\nkilled: timed out after 120s\n", 124, 1, KindTimeout, "timed out"},
		{"pytest no tests ran", "pytest", "\nno tests ran in 0.01s\n", "", 5, 0, "", ""},
		{"passed but failed status", "pytest", "3 passed in 0.10s\nFAIL Required test coverage of 90% not reached.\n", "", 1, 1, "", "coverage"},
		{"go command failure", "go", "", "go: cannot find main module, but found .git/config in /w\n", 1, 1, "", "cannot find main module"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := ParseExit(tc.framework, tc.stdout, tc.stderr, tc.code)
			if r.Errors != tc.errors || r.Failed != 0 {
				t.Fatalf("%s, want %d errors; failures %+v", r.Summary(), tc.errors, r.Failures)
			}
			if tc.errors == 0 {
				return
			}
			f := r.Failures[len(r.Failures)-1]
			if !strings.Contains(f.Message, tc.message) || f.Kind != tc.kind {
				t.Errorf("failure %+v, want message with %q and kind %q", f, tc.message, tc.kind)
			}
			if r.OK() {
				t.Error("OK() with a failure status")
			}
		})
	}
}

func TestParseSynthetic(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		framework      string
		stdout, stderr string
		want           wantReport
	}{
		{
			name:      "go json with build errors on stderr (before Go 1.24)",
			framework: FrameworkGo,
			stdout: `{"Action":"start","Package":"m/p"}
{"Action":"output","Package":"m/p","Output":"FAIL\tm/p [build failed]\n"}
{"Action":"fail","Package":"m/p","Elapsed":0}
`,
			stderr: "# m/p\np/p.go:3:1: syntax error: non-declaration statement outside function body\n",
			want: wantReport{FrameworkGo, 0, 0, 0, 1, false, []wantFailure{
				{"m/p", "p/p.go", 3, KindSyntax, "non-declaration statement"},
			}},
		},
		{
			name:      "go json with a stray go command line",
			framework: FrameworkGo,
			stdout:    "go: warning: \"./...\" matched no packages\n",
			want:      wantReport{FrameworkGo, 0, 0, 0, 0, false, nil},
		},
		{
			name:      "go json package failing in TestMain",
			framework: FrameworkGo,
			stdout: `{"Action":"start","Package":"m/q"}
{"Action":"output","Package":"m/q","Output":"setup: database unreachable\n"}
{"Action":"output","Package":"m/q","Output":"FAIL\tm/q\t0.002s\n"}
{"Action":"fail","Package":"m/q","Elapsed":0.002}
`,
			want: wantReport{FrameworkGo, 0, 0, 0, 1, false, []wantFailure{
				{"m/q", "", 0, KindRuntime, "setup: database unreachable"},
			}},
		},
		{
			name:      "go json stream cut off mid-test",
			framework: FrameworkGo,
			stdout: `{"Action":"start","Package":"m/r"}
{"Action":"run","Package":"m/r","Test":"TestA"}
{"Action":"pass","Package":"m/r","Test":"TestA"}
{"Action":"run","Package":"m/r","Test":"TestB"}
{"Action":"output","Package":"m/r","Test":"TestB","Output":"=== RUN   TestB\n"}
{"Action":"output","Package":"m/r","Test":"TestB","Output":"    b_test.go:9: waiting for server\n"}
`,
			want: wantReport{FrameworkGo, 1, 1, 0, 0, false, []wantFailure{
				{"m/r.TestB", "b_test.go", 9, KindRuntime, "waiting for server\nthe test did not finish"},
			}},
		},
		{
			name:   "jest summary",
			stdout: "FAIL src/a.test.js\n  ● adds\n\nTests:       1 failed, 4 passed, 5 total\nTime: 1s\n",
			want:   wantReport{FrameworkGeneric, 4, 1, 0, 0, false, nil},
		},
		{
			name:   "mocha summary",
			stdout: "  3 passing (12ms)\n  1 pending\n  2 failing\n",
			want:   wantReport{FrameworkGeneric, 3, 2, 1, 0, false, nil},
		},
		{
			name:   "plain TAP without totals",
			stdout: "TAP version 13\n1..3\nok 1 - a\nnot ok 2 - b\nok 3 - c # SKIP no db\n",
			want: wantReport{FrameworkGeneric, 1, 1, 1, 0, false, []wantFailure{
				{"b", "", 0, "", ""},
			}},
		},
		{
			name:      "unittest cut short before its summary",
			framework: FrameworkUnittest,
			stderr: strings.Join([]string{
				"======================================================================",
				"FAIL: test_a (m.T.test_a)",
				"----------------------------------------------------------------------",
				"Traceback (most recent call last):",
				`  File "/w/m.py", line 5, in test_a`,
				"    self.assertTrue(False)",
				"AssertionError: False is not true",
				"",
			}, "\n"),
			want: wantReport{FrameworkUnittest, 0, 1, 0, 0, false, []wantFailure{
				{"m.T.test_a", "/w/m.py", 5, KindAssertion, "AssertionError: False is not true"},
			}},
		},
		{
			name:      "unittest on Python before 3.11",
			framework: FrameworkUnittest,
			stderr: strings.Join([]string{
				"E",
				"======================================================================",
				"ERROR: test_a (m.T)",
				"----------------------------------------------------------------------",
				"Traceback (most recent call last):",
				`  File "/w/m.py", line 5, in test_a`,
				"    1/0",
				"ZeroDivisionError: division by zero",
				"",
				"----------------------------------------------------------------------",
				"Ran 1 test in 0.000s",
				"",
				"FAILED (errors=1)",
			}, "\n"),
			want: wantReport{FrameworkUnittest, 0, 0, 0, 1, false, []wantFailure{
				{"m.T.test_a", "/w/m.py", 5, KindRuntime, "ZeroDivisionError: division by zero"},
			}},
		},
		{
			name:      "pytest cut short: counts from the short summary",
			framework: FrameworkPytest,
			stdout:    "=========================== short test summary info ============================\nFAILED t.py::test_a - assert 1 == 2\nERROR t.py::test_b - Failed: Timeout >1.0s\n",
			want: wantReport{FrameworkPytest, 0, 1, 0, 1, false, []wantFailure{
				{"t.py::test_a", "", 0, KindAssertion, "assert 1 == 2"},
				{"t.py::test_b", "", 0, KindTimeout, "Timeout"},
			}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			checkReport(t, Parse(tc.framework, tc.stdout, tc.stderr), tc.want)
		})
	}
}

func TestSummaryAndOK(t *testing.T) {
	t.Parallel()
	tests := []struct {
		r       Report
		summary string
		ok      bool
	}{
		{Report{Framework: "go", Passed: 12, Failed: 1}, "go: 12 passed, 1 failed, 0 skipped", false},
		{Report{Framework: "pytest", Passed: 3}, "pytest: 3 passed, 0 failed, 0 skipped", true},
		{Report{Framework: "unittest", Passed: 3, Errors: 1}, "unittest: 3 passed, 0 failed, 0 skipped, 1 error", false},
		{Report{Framework: "node", Errors: 2}, "node: 0 passed, 0 failed, 0 skipped, 2 errors", false},
		{Report{Skipped: 2}, "generic: 0 passed, 0 failed, 2 skipped", false},
		{Report{Framework: "pytest"}, "pytest: 0 passed, 0 failed, 0 skipped (no tests ran)", false},
	}
	for _, tc := range tests {
		if got := tc.r.Summary(); got != tc.summary {
			t.Errorf("Summary() = %q, want %q", got, tc.summary)
		}
		if got := tc.r.OK(); got != tc.ok {
			t.Errorf("%s: OK() = %v, want %v", tc.summary, got, tc.ok)
		}
	}
}

func TestReportJSON(t *testing.T) {
	t.Parallel()
	r := Report{Framework: "go", Passed: 1, Failed: 1, Failures: []Failure{{Name: "m.TestA", File: "a_test.go", Line: 3, Message: "bad", Kind: KindAssertion}}, Output: "FAIL"}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"framework":"go","passed":1,"failed":1,"skipped":0,"errors":0,"failures":[{"name":"m.TestA","file":"a_test.go","line":3,"message":"bad","kind":"assertion"}],"output":"FAIL"}`
	if string(b) != want {
		t.Errorf("json = %s\nwant   %s", b, want)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil || back.Summary() != r.Summary() || back.Failures[0] != r.Failures[0] {
		t.Errorf("round trip: %+v, %v", back, err)
	}
}

func TestRelative(t *testing.T) {
	t.Parallel()
	stdout, stderr, code := fixture(t, "unittest_fail_v")
	r := ParseExit(FrameworkUnittest, stdout, stderr, code)
	rel := r.Relative("/workspace/")
	var files []string
	for _, f := range rel.Failures {
		files = append(files, f.File)
	}
	if want := []string{"test_broken_import.py", "calc.py", "test_calc.py", "test_calc.py"}; !slices.Equal(files, want) {
		t.Errorf("Relative files = %q, want %q", files, want)
	}
	if r.Failures[0].File != "/workspace/test_broken_import.py" {
		t.Errorf("Relative changed the original: %q", r.Failures[0].File)
	}
}

func TestSniff(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{
		"go_json": FrameworkGo, "go_text": FrameworkGo, "pytest_fail_q": FrameworkPytest, "pytest_empty_q": FrameworkPytest,
		"unittest_fail": FrameworkUnittest, "node_fail_tap": FrameworkGeneric, "node_fail_spec": FrameworkGeneric,
	} {
		stdout, stderr, _ := fixture(t, name)
		if got := Sniff(stdout, stderr); got != want {
			t.Errorf("Sniff(%s) = %q, want %q", name, got, want)
		}
	}
}

func TestTail(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in       string
		n, max   int
		want     string
		wantDesc string
	}{
		{"a\nb\nc\n", 2, 100, "b\nc", "last lines"},
		{"a\nb\nc", 5, 100, "a\nb\nc", "fewer lines than asked"},
		{"", 3, 10, "", "empty"},
		{"aaaa\nbbbb\ncccc", 3, 6, "cccc", "byte cap cuts at a line start"},
		{"ééééé", 1, 3, "é", "byte cap keeps UTF-8 whole"},
	}
	for _, tc := range tests {
		if got := tail(tc.in, tc.n, tc.max); got != tc.want {
			t.Errorf("%s: tail(%q, %d, %d) = %q, want %q", tc.wantDesc, tc.in, tc.n, tc.max, got, tc.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	entries, _ := os.ReadDir(filepath.Join("testdata", "out"))
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".stdout"); ok {
			stdout, stderr, code := fixture(f, name)
			f.Add(stdout, stderr, code)
		}
	}
	f.Add("ok 1\n  ---\n  error: |-\n", "", 1)
	f.Add("{\"Action\":\"run\",\"Package\":\"p\",\"Test\":\"T/\"}\n{\"Action\":\"fail\",\"Package\":\"p\"}", "", 1)
	f.Add("=== RUN   \n--- FAIL:  (0.00s)\nFAIL\t\n", "", 1)
	f.Add("===== FAILURES =====\n___ x ___\nE\n", "", 1)
	f.Fuzz(func(t *testing.T, stdout, stderr string, code int) {
		for _, fw := range []string{"", FrameworkGo, FrameworkPytest, FrameworkUnittest, FrameworkNode, FrameworkGeneric} {
			r := ParseExit(fw, stdout, stderr, code)
			if r.Passed < 0 || r.Failed < 0 || r.Skipped < 0 || r.Errors < 0 {
				t.Fatalf("%s: negative count: %s", fw, r.Summary())
			}
			if len(r.Failures) > maxFailures+1 {
				t.Fatalf("%s: %d failures", fw, len(r.Failures))
			}
			if len(r.Output) > tailBytes {
				t.Fatalf("%s: tail of %d bytes", fw, len(r.Output))
			}
			if code != 0 && r.OK() {
				t.Fatalf("%s: OK with exit status %d", fw, code)
			}
			_ = r.Summary()
		}
	})
}

// BenchmarkParseGoJSON parses `go test -json` streams of a few megabytes:
// recorded fixtures repeated under distinct package paths, one mostly
// failing (every failure is built, then capped) and one passing.
func BenchmarkParseGoJSON(b *testing.B) {
	for _, name := range []string{"go_json", "go_json_pass"} {
		b.Run(name, func(b *testing.B) {
			stdout, stderr, _ := fixture(b, name)
			var sb strings.Builder
			for i := 0; sb.Len() < 4<<20; i++ {
				sb.WriteString(strings.ReplaceAll(stdout, "example.com/fixture", fmt.Sprintf("example.com/fixture%d", i)))
			}
			stream := sb.String()
			b.SetBytes(int64(len(stream)))
			b.ReportAllocs()
			for b.Loop() {
				if r := ParseGoJSON(stream, stderr); r.Passed == 0 {
					b.Fatal("no tests parsed")
				}
			}
		})
	}
}

func TestScanGoEventMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	stdout, _, _ := fixture(t, "go_json_more")
	ls := append(lines(stdout),
		`{"Action":"output","Test":"T","Output":"tab\there \"quoted\" \u00e9\n"}`,
		`{ "Action" : "pass" , "Elapsed" : 1.5e-3 , "Package" : "p" }`,
		`{"Action":"pass","Extra":{"nested":true},"Package":"p"}`,
		`{"Action":7}`,
		`{"Action":"run"`,
		`{"Action":"run"} trailing`,
		`{}`,
	)
	for _, l := range ls {
		var want goEvent
		werr := json.Unmarshal([]byte(l), &want)
		got, ok := decodeGoEvent(l)
		if ok != (werr == nil) || got != want {
			t.Errorf("decodeGoEvent(%s) = %+v, %v; encoding/json: %+v, %v", l, got, ok, want, werr)
		}
		if fast, ok := scanGoEvent(l); ok && fast != want {
			t.Errorf("scanGoEvent(%s) = %+v, want %+v", l, fast, want)
		}
	}
}

// FuzzScanGoEvent checks that the fast decoder of test2json lines agrees
// with encoding/json whenever it claims a line.
func FuzzScanGoEvent(f *testing.F) {
	stdout, _, _ := fixture(f, "go_json_more")
	for _, l := range lines(stdout) {
		f.Add(l)
	}
	f.Add(`{"Action":"output","Output":"a\u00e9\n"}`)
	f.Add(`{"action":"pass"}`)
	f.Fuzz(func(t *testing.T, line string) {
		fast, ok := scanGoEvent(line)
		if !ok {
			return
		}
		var want goEvent
		if err := json.Unmarshal([]byte(line), &want); err != nil {
			t.Fatalf("scanGoEvent accepted %q, encoding/json: %v", line, err)
		}
		if fast != want {
			t.Fatalf("scanGoEvent(%q) = %+v, encoding/json %+v", line, fast, want)
		}
	})
}
