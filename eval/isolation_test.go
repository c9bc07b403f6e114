package eval_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/eval"
	"github.com/trioagent/trio/sandbox/containerd"
	"github.com/trioagent/trio/sandbox/userns"
)

// requireUserns skips the test where bwrap or user namespaces are missing,
// and fails it instead under CI=true, where both must work.
func requireUserns(t *testing.T) {
	t.Helper()
	if err := userns.Available(context.Background(), ""); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and the userns sandbox is unavailable: %v", err)
		}
		t.Skipf("userns sandbox unavailable: %v", err)
	}
}

// probeModule is the task's module as a Worker's code could write it:
// importing it (the tests do, in the run's sandbox) reads every host path
// in paths, walks / for a file whose name holds nameTok and, outside the
// host's toolchain folders, for one whose content holds needle, and
// writes what it found to found.txt in the working folder. The source
// itself never holds nameTok or needle whole.
func probeModule(tok string, paths []string) string {
	q := make([]string, len(paths))
	for i, p := range paths {
		q[i] = fmt.Sprintf("%q", p)
	}
	return fmt.Sprintf(`"""answer() is 42; importing this module also hunts for hidden tests."""
import os
import stat

TOK = %q
NEEDLE = ("SEC" + "RET-" + TOK).encode()
NAME = "hid" + "den_" + TOK
PATHS = [%s]
HOST_TOOLCHAIN = ("/usr/", "/lib/", "/lib32/", "/lib64/", "/libx32/", "/bin/", "/sbin/", "/go/", "/proc/", "/sys/", "/dev/")


def answer():
    return 42


def _scan():
    found = []
    for p in PATHS:
        try:
            with open(p, "rb") as f:
                found.append("READ %%s %%s" %% (p, NEEDLE in f.read()))
        except OSError:
            pass
    for root, dirs, files in os.walk("/"):
        if root in ("/proc", "/sys"):
            dirs[:] = []
            continue
        for n in files + dirs:
            if NAME in n:
                found.append("NAME " + os.path.join(root, n))
        if (root + "/").startswith(HOST_TOOLCHAIN):
            continue
        for n in files:
            p = os.path.join(root, n)
            try:
                st = os.lstat(p)
                if not stat.S_ISREG(st.st_mode) or st.st_size > 1 << 20:
                    continue
                with open(p, "rb") as f:
                    if NEEDLE in f.read():
                        found.append("CONTENT " + p)
            except OSError:
                pass
    with open("found.txt", "w") as f:
        f.write("\n".join(sorted(set(found))) + "\n")


_scan()
`, tok, strings.Join(q, ", "))
}

// probeSuite writes a suite of two probing tasks, a and b, under dir/suite:
// each hidden folder holds a test named hidden_<tok>_<id>.py whose
// content holds SECRET-<tok>, and each seed a canary file with both, so
// that a probe that reaches its own workspace finds it. outDir is where
// the eval will write; the probes read the hidden tests there too (the
// judge's copies), and extra host paths.
func probeSuite(t *testing.T, dir, outDir string, extra ...string) (suite, tok string) {
	t.Helper()
	b := make([]byte, 8)
	rand.Read(b)
	tok = hex.EncodeToString(b)
	suite = filepath.Join(dir, "suite")
	ids := []string{"a", "b"}
	var paths []string
	for _, id := range ids {
		name := fmt.Sprintf("test_hidden_%s_%s.py", tok, id)
		paths = append(paths,
			filepath.Join(suite, id, eval.HiddenDir, "hidden_tests", name),
			filepath.Join(eval.SampleDir(outDir, id, 1), "judge", "hidden_tests", name))
	}
	paths = append(paths, extra...)
	files := map[string]string{"suite.yaml": "version: 1\nname: probe\ntasks:\n  - id: a\n  - id: b\n"}
	for _, id := range ids {
		files[id+"/goal.md"] = "Write mod.py with answer() returning 42.\n"
		files[id+"/task.yaml"] = "hidden_command: python3 -m unittest discover -s hidden_tests -v\n"
		files[id+"/hidden/hidden_tests/"+fmt.Sprintf("test_hidden_%s_%s.py", tok, id)] = fmt.Sprintf(`# SECRET-%s: only the judge may read this file.
import unittest

import mod


class HiddenAnswer(unittest.TestCase):
    def test_answer(self):
        self.assertEqual(mod.answer(), 42)


if __name__ == "__main__":
    unittest.main()
`, tok)
		files[id+"/hidden/hidden_tests/__init__.py"] = ""
		files[id+"/seed/"+fmt.Sprintf("canary_hidden_%s.txt", tok)] = "SECRET-" + tok + "-seed\n"
		files[id+"/replay.yaml"] = probeReplay(probeModule(tok, paths), 42)
	}
	for p, c := range files {
		p = filepath.Join(suite, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return suite, tok
}

// probeReplay is a replay in which the Worker writes module and runs the
// designed test, which imports it and wants answer() to be answer.
func probeReplay(module string, answer int) string {
	indent := func(s, pad string) string {
		return pad + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+pad)
	}
	return `roles:
  planner:
  - output:
      steps:
      - title: mod module
        description: Create mod.py with answer() returning 42.
        files:
        - mod.py
        expected: answer() is 42
        acceptance: python3 -m unittest discover -s tests -v passes
      risks: []
      test_command: python3 -m unittest discover -s tests -v
      cli: []
      tests_dir: tests
    usage: {prompt_tokens: 100, completion_tokens: 10}
  test_designer:
  - output:
      notes: The answer.
      files:
      - path: tests/test_mod.py
        content: |
          import unittest

          import mod


          class ModTest(unittest.TestCase):
              def test_answer(self):
                  self.assertEqual(mod.answer(), ` + fmt.Sprint(answer) + `)
    usage: {prompt_tokens: 100, completion_tokens: 10}
  worker:
  - tool_calls:
    - name: write_file
      arguments:
        path: mod.py
        content: |
` + indent(module, "          ") + `
    - name: run_tests
      arguments:
        command: python3 -m unittest discover -s tests -v
    usage: {prompt_tokens: 100, completion_tokens: 10}
  - tool_calls:
    - name: finish_step
      arguments:
        note: Done.
    usage: {prompt_tokens: 100, completion_tokens: 10}
`
}

// TestHiddenTestsOutOfReach runs two tasks, one after the other, in the
// userns sandbox; each task's code hunts for the hidden tests of both
// (by their host paths in the suite and in the judge's copies, by name
// over /, by content over everything but the host toolchain) and for a
// canary in its own workspace. It finds the canary and nothing hidden,
// while the judge, in a fresh userns sandbox of its own, reads and passes
// the hidden tests; every result is isolated.
func TestHiddenTestsOutOfReach(t *testing.T) {
	requireUserns(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	shippedHidden, err := filepath.Abs("../evals/py-slugify/hidden/hidden_tests/test_hidden_slugify.py")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(shippedHidden); err != nil {
		t.Fatal(err)
	}
	suiteDir, tok := probeSuite(t, dir, out, shippedHidden)
	s, err := eval.Load(suiteDir)
	if err != nil {
		t.Fatal(err)
	}
	e, err := eval.New(replay, eval.WithOut(out), eval.WithParallel(1),
		eval.WithSandboxConfig(agent.SandboxConfig{Kind: agent.SandboxUserns}))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := e.Run(t.Context(), s, s.Tasks)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Sandbox != agent.SandboxUserns || !rep.Isolated || rep.Unisolated() != 0 {
		t.Errorf("report: sandbox %s, isolated %v, %d unisolated results; want userns and every result isolated", rep.Sandbox, rep.Isolated, rep.Unisolated())
	}
	for _, r := range rep.Tasks {
		if !r.Isolated || r.Hidden.Sandbox != userns.Kind || !r.Hidden.Isolated {
			t.Errorf("task %s: isolated %v, judged in %s (isolated %v); want userns", r.ID, r.Isolated, r.Hidden.Sandbox, r.Hidden.Isolated)
		}
		if !r.Hidden.Pass || r.Hidden.Passed != 1 {
			t.Errorf("task %s: the judge did not pass the hidden test: %+v", r.ID, r.Hidden)
		}
		found, err := os.ReadFile(filepath.Join(eval.SampleDir(out, r.ID, 1), "workspace", "found.txt"))
		if err != nil {
			t.Fatalf("task %s: the probe left no findings (did the run's tests import it?): %v", r.ID, err)
		}
		canary := "/workspace/canary_hidden_" + tok + ".txt"
		if want := "CONTENT " + canary + "\nNAME " + canary + "\n"; string(found) != want {
			t.Errorf("task %s: the probe found\n%s\nwant only its own canary:\n%s", r.ID, found, want)
		}
	}
	b, err := os.ReadFile(filepath.Join(out, eval.ReportJSON))
	if err != nil {
		t.Fatal(err)
	}
	var disk struct {
		Isolated bool `json:"isolated"`
		Tasks    []struct {
			Isolated bool `json:"isolated"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal(b, &disk); err != nil {
		t.Fatal(err)
	}
	if !disk.Isolated || len(disk.Tasks) != 2 || !disk.Tasks[0].Isolated || !disk.Tasks[1].Isolated {
		t.Errorf("eval.json does not mark the eval and its results isolated:\n%s", b)
	}
}

// TestNoIsolationRefused: with neither containerd nor userns able to run,
// auto refuses the eval (nobody is asked) before any task starts.
func TestNoIsolationRefused(t *testing.T) {
	t.Parallel()
	s := shipped(t)
	out := t.TempDir()
	e, err := eval.New(replay, eval.WithOut(out), eval.WithSandboxConfig(agent.SandboxConfig{Kind: agent.SandboxAuto,
		Containerd: containerd.Config{Address: filepath.Join(out, "no-containerd.sock")},
		Userns:     userns.Config{Bwrap: filepath.Join(out, "no-bwrap")},
		// landlock left out of auto: as on a kernel without it.
		Auto: []string{agent.SandboxContainerd, agent.SandboxUserns}}))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := e.Run(t.Context(), s, s.Tasks[:1])
	if !errors.Is(err, agent.ErrNoIsolation) || rep != nil {
		t.Fatalf("Run: %v (report %v), want ErrNoIsolation and no report", err, rep)
	}
	if entries, _ := os.ReadDir(filepath.Join(out, eval.TasksDir)); len(entries) != 0 {
		t.Errorf("a refused eval started %d tasks", len(entries))
	}
}

// TestSuiteInsideOutRefused: an output folder holding the suite would put
// the hidden tests where a task's workspace is made.
func TestSuiteInsideOutRefused(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	suiteDir, _ := probeSuite(t, filepath.Join(eval.SampleDir(out, "a", 1), "workspace"), out)
	s, err := eval.Load(suiteDir)
	if err != nil {
		t.Fatal(err)
	}
	e, err := eval.New(replay, eval.WithOut(out), eval.WithSandboxConfig(agent.SandboxConfig{Kind: agent.SandboxLocal}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Run(t.Context(), s, s.Tasks); !errors.Is(err, eval.ErrLayout) || !strings.Contains(err.Error(), suiteDir) {
		t.Fatalf("Run: %v, want ErrLayout naming %s", err, suiteDir)
	}
}

// TestJudgeCatchesForgery: the task's code returns a wrong answer and,
// once it notices the hidden tests beside it, makes unittest's assertEqual
// do nothing. The designed test (which wants the wrong answer) passes and
// the run completes; the hidden test reported passed by name would have
// scored it a pass. The judge's sentinels, laid over the hidden tests, say
// the report was forged: the hidden result is a fail, marked forged.
func TestJudgeCatchesForgery(t *testing.T) {
	requireUserns(t)
	dir := t.TempDir()
	suite := filepath.Join(dir, "suite")
	module := `"""answer() should be 42."""
import os
import unittest


def answer():
    return 41


if os.path.isdir("hidden_tests"):
    unittest.TestCase.assertEqual = lambda self, first, second, msg=None: None
`
	files := map[string]string{
		"suite.yaml":             "version: 1\nname: forgery\ntasks:\n  - id: patch-assert\n",
		"patch-assert/goal.md":   "Write mod.py with answer() returning 42.\n",
		"patch-assert/task.yaml": "hidden_command: python3 -m unittest discover -s hidden_tests -v\n",
		"patch-assert/hidden/hidden_tests/test_hidden_answer.py": `import unittest

import mod


class HiddenAnswer(unittest.TestCase):
    def test_answer_is_forty_two(self):
        self.assertEqual(mod.answer(), 42)
`,
		"patch-assert/replay.yaml": probeReplay(module, 41),
	}
	for p, c := range files {
		p = filepath.Join(suite, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := eval.Load(suite)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	e, err := eval.New(replay, eval.WithOut(out), eval.WithSandboxConfig(agent.SandboxConfig{Kind: agent.SandboxUserns}))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := e.Run(t.Context(), s, s.Tasks)
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Tasks[0]
	if !r.Completed {
		t.Logf("the run did not complete (%s); the judge is what this test is about", r.Reason)
	}
	h := r.Hidden
	if h.Pass || !h.Forged || !strings.HasPrefix(h.Detail, "forged: ") {
		t.Errorf("hidden result %+v: want a fail marked forged", h)
	}
	if h.Passed != 1 || h.Failed != 0 {
		t.Errorf("hidden counts %d passed, %d failed: want the one hidden test, the sentinels not counted", h.Passed, h.Failed)
	}
	// The judged copy holds the hidden test as the suite has it.
	b, err := os.ReadFile(filepath.Join(eval.SampleDir(out, r.ID, 1), "judge", "hidden_tests", "test_hidden_answer.py"))
	if err != nil || string(b) != files["patch-assert/hidden/hidden_tests/test_hidden_answer.py"] {
		t.Errorf("the judged copy's hidden test differs from the suite's (%v):\n%s", err, b)
	}
	md, _ := os.ReadFile(filepath.Join(out, eval.ReportMD))
	if !strings.Contains(string(md), "| patch-assert | FAIL (forged) |") {
		t.Errorf("eval.md does not show the hidden fail:\n%s", md)
	}
}
