package eval_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trioagent/trio/eval"
	"github.com/trioagent/trio/sandbox"
)

// The shipped repository tasks (a seed folder; an archive with a setup
// command) run through the eval with their replays: every fail_to_pass
// and pass_to_pass test is counted, and the seed was checked first.
func TestRepoTasksShipped(t *testing.T) {
	t.Parallel()
	s, err := eval.Load("../evals/formats/repo")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	rep, err := runSuite(t, context.Background(), s, s.Tasks, out, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"py-calc-errors": 7, "py-textstats-ties": 5}
	if len(rep.Tasks) != len(want) {
		t.Fatalf("%d results, want %d", len(rep.Tasks), len(want))
	}
	for _, r := range rep.Tasks {
		if !r.Hidden.Pass || r.Hidden.Passed != want[r.ID] || r.Hidden.Failed != 0 || !r.Completed {
			t.Errorf("%s: hidden %+v completed %v; want a pass of %d listed tests", r.ID, r.Hidden, r.Completed, want[r.ID])
		}
		seedLog, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(r.RunDir)), "seed-output.txt"))
		if err != nil {
			t.Errorf("%s: no seed check: %v", r.ID, err)
		}
		if r.ID == "py-textstats-ties" && !strings.Contains(string(seedLog), "$ python3 tools/make_fixture.py") {
			t.Errorf("the setup did not run on the seed:\n%s", seedLog)
		}
	}
}

// gitCalc makes a git repository of the calc task's seed with two commits:
// the seed, then the fix. It returns the folder and both commits.
func gitCalc(t *testing.T, dir string) (repo, seed, fixed string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed for repository seeds at a commit")
	}
	repo = filepath.Join(dir, "repo")
	if err := sandbox.CopyTree("../evals/formats/repo/py-calc-errors/seed", repo); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", ".")
	git("commit", "-q", "-m", "seed")
	seed = git("rev-parse", "HEAD")
	fix := "\n\nclass CalcError(ValueError):\n    pass\n\n\n_div = div\n\n\ndef div(a, b):\n    if b == 0:\n        raise CalcError(\"division by zero\")\n    return _div(a, b)\n\n\n_parse = parse\n\n\ndef parse(expr):\n    try:\n        return _parse(expr)\n    except (KeyError, ValueError) as e:\n        raise CalcError(str(e)) from None\n"
	f, err := os.OpenFile(filepath.Join(repo, "calc.py"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(fix)
	f.Close()
	git("commit", "-q", "-am", "fix")
	return repo, seed, git("rev-parse", "HEAD")
}

// gitTask writes a suite of the calc task whose seed is the git
// repository at commit.
func gitTask(t *testing.T, commit string) *eval.Suite {
	t.Helper()
	dir := t.TempDir()
	task := filepath.Join(dir, "calc-git")
	for _, sub := range []string{"hidden", "goal.md", "replay.yaml"} {
		src := filepath.Join("../evals/formats/repo/py-calc-errors", sub)
		if fi, _ := os.Stat(src); fi.IsDir() {
			if err := sandbox.CopyTree(src, filepath.Join(task, sub)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b, _ := os.ReadFile(src)
		os.WriteFile(filepath.Join(task, sub), b, 0o644)
	}
	_, seed, fixed := gitCalc(t, task)
	if commit == "seed" {
		commit = seed
	} else {
		commit = fixed
	}
	b, _ := os.ReadFile("../evals/formats/repo/py-calc-errors/task.yaml")
	ty := strings.Replace(string(b), "  seed: seed\n", "  seed: repo\n  commit: "+commit+"\n", 1)
	os.WriteFile(filepath.Join(task, "task.yaml"), []byte(ty), 0o644)
	os.WriteFile(filepath.Join(dir, "suite.yaml"), []byte("version: 1\ntasks:\n- id: calc-git\n"), 0o644)
	s, err := eval.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A seed at a commit starts the run from that commit, not from the
// repository's newest one (where the fix already is).
func TestRepoTaskGitCommit(t *testing.T) {
	t.Parallel()
	s := gitTask(t, "seed")
	seed, err := os.ReadFile(filepath.Join(s.Tasks[0].SeedPath(), "calc.py"))
	if err != nil || strings.Contains(string(seed), "CalcError") {
		t.Fatalf("the seed is not the first commit's (%v):\n%s", err, seed)
	}
	rep, err := runSuite(t, context.Background(), s, s.Tasks, t.TempDir(), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Tasks[0]; !r.Hidden.Pass || r.Hidden.Passed != 7 {
		t.Errorf("hidden %+v", r.Hidden)
	}
}

// A task whose fail_to_pass tests already pass on the seed is broken: the
// eval says so, naming the task, its file and the tests, and judges
// nothing of it.
func TestRepoTaskBroken(t *testing.T) {
	t.Parallel()
	s := gitTask(t, "fixed")
	out := t.TempDir()
	_, err := runSuite(t, context.Background(), s, s.Tasks, out, 1, nil)
	if !errors.Is(err, eval.ErrBrokenTask) {
		t.Fatalf("err = %v, want ErrBrokenTask", err)
	}
	for _, want := range []string{"task calc-git", filepath.Join(s.Tasks[0].Dir, "task.yaml"),
		"fail_to_pass tests pass on the seed", "test_calc_errors.CalcErrorTest.test_div_by_zero", "seed-output.txt"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q: %v", want, err)
		}
	}
}

// Bad repository sections stop at Load, naming the file and the field.
func TestRepoTaskInvalid(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"seed: seed\n  fail_to_pass:\n    command: python3 -m unittest\n    tests: []\n":                                 "fail_to_pass.tests is empty",
		"seed: nowhere\n  fail_to_pass:\n    command: python3 -m unittest\n    tests: [a]\n":                             "seed: stat",
		"seed: ../x\n  fail_to_pass:\n    command: python3 -m unittest\n    tests: [a]\n":                                "want a folder, archive or git repository inside the task folder",
		"seed: seed\n  commit: abc\n  fail_to_pass:\n    command: python3 -m unittest\n    tests: [a]\n":                 "commit abc: the seed seed is not a git repository",
		"seed: seed\n  fail_to_pass:\n    tests: [a]\n":                                                                  "fail_to_pass.command is missing",
		"seed: seed\n  fail_to_pass:\n    command: x\n    tests: [a]\n  pass_to_pass:\n    command: x\n    tests: [a]\n": "test a is in both",
		"seed: goal.md\n  fail_to_pass:\n    command: x\n    tests: [a]\n":                                               "want a folder, a .tar",
	}
	for section, want := range cases {
		dir := t.TempDir()
		task := filepath.Join(dir, "t")
		os.MkdirAll(filepath.Join(task, "hidden"), 0o755)
		os.MkdirAll(filepath.Join(task, "seed"), 0o755)
		os.WriteFile(filepath.Join(task, "goal.md"), []byte("do it\n"), 0o644)
		os.WriteFile(filepath.Join(task, "task.yaml"), []byte("repository:\n  "+section), 0o644)
		os.WriteFile(filepath.Join(dir, "suite.yaml"), []byte("version: 1\ntasks:\n- id: t\n"), 0o644)
		_, err := eval.Load(dir)
		if !errors.Is(err, eval.ErrInvalidSuite) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), filepath.Join(task, "task.yaml")) {
			t.Errorf("repository:\n  %s: err = %v, want %q naming task.yaml", section, err, want)
		}
	}
}
