package eval_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/trioagent/trio/eval"
	"github.com/trioagent/trio/sandbox"
)

// hiddenVerdict lays the task's hidden tests over a workspace holding
// solution.py and runs the hidden command with the host's python3: the
// hidden tests' own meaning, without a sandbox or a run.
func hiddenVerdict(t *testing.T, task eval.Task, solution string) (bool, string) {
	t.Helper()
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "solution.py"), []byte(solution), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := sandbox.CopyTree(task.HiddenPath(), ws); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(task.HiddenCommand[0], task.HiddenCommand[1:]...)
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	return err == nil, string(out)
}

// The shipped HumanEval- and MBPP-shaped files import into suites that
// Load reads; each task's hidden tests pass on the file's reference
// solution (written into the reference replay) and fail on a wrong one or
// on a solution whose function has another name.
func TestImportShippedFormats(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatal("python3 is needed for the hidden tests of imported tasks")
	}
	cases := []struct {
		format, file string
		ids          []string
		wrong        map[string]string // task id -> a wrong solution
	}{
		{eval.FormatHumanEval, "humaneval.jsonl", []string{"humaneval-0", "humaneval-1", "humaneval-2"}, map[string]string{
			"humaneval-0": "def running_max(values):\n    return sorted(values)\n",
			"humaneval-1": "def is_balanced(text):\n    return text.count('(') == text.count(')')\n",
			"humaneval-2": "def shift(text, n):\n    return text\n",
		}},
		{eval.FormatMBPP, "mbpp.jsonl", []string{"mbpp-1", "mbpp-2", "mbpp-3"}, map[string]string{
			"mbpp-1": "def count_vowels(s):\n    return sum(1 for c in s if c in 'aeiou')\n", // fails the upper-case assert
			"mbpp-2": "def merge_sorted(a, b):\n    return a + b\n",
			"mbpp-3": "def key_of_max(d):\n    return max(d, key=d.get)\n", // raises on {}
		}},
	}
	for _, c := range cases {
		t.Run(c.format, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "suite")
			suite, err := eval.Import(c.format, filepath.Join("..", "evals", "formats", c.file), out, eval.ImportOptions{ReferenceReplay: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(suite.Tasks) != len(c.ids) || suite.Name != strings.TrimSuffix(c.file, ".jsonl") {
				t.Fatalf("suite %q with %d tasks, want %d", suite.Name, len(suite.Tasks), len(c.ids))
			}
			for i, task := range suite.Tasks {
				if task.ID != c.ids[i] || len(task.Tags) == 0 || task.Tags[0] != c.format || task.Replay == "" {
					t.Errorf("task %d: id %s tags %v replay %q", i, task.ID, task.Tags, task.Replay)
				}
				if _, err := eval.ReplayScript(task); err != nil {
					t.Fatalf("the reference replay does not parse: %v", err)
				}
				ref := referenceOf(t, task)
				if ok, out := hiddenVerdict(t, task, ref); !ok {
					t.Errorf("%s: the hidden tests fail on the reference solution:\n%s", task.ID, out)
				}
				if ok, out := hiddenVerdict(t, task, c.wrong[task.ID]); ok {
					t.Errorf("%s: the hidden tests pass a wrong solution:\n%s", task.ID, out)
				}
				if !strings.Contains(task.Goal, "solution.py") {
					t.Errorf("%s: the goal does not name solution.py: %s", task.ID, task.Goal)
				}
				hidden, _ := os.ReadFile(filepath.Join(task.HiddenPath(), "hidden_tests", "case.json"))
				if strings.Contains(task.Goal, "check(") || (c.format == eval.FormatMBPP && !strings.Contains(string(hidden), "challenge_tests")) {
					t.Errorf("%s: the goal shows the hidden check, or the challenge tests are not hidden", task.ID)
				}
			}
		})
	}
}

// referenceOf reads the solution the reference replay writes.
func referenceOf(t *testing.T, task eval.Task) string {
	t.Helper()
	b, err := os.ReadFile(task.Replay)
	if err != nil {
		t.Fatal(err)
	}
	var script struct {
		Roles map[string][]struct {
			ToolCalls []struct {
				Name      string            `yaml:"name"`
				Arguments map[string]string `yaml:"arguments"`
			} `yaml:"tool_calls"`
		} `yaml:"roles"`
	}
	if err := yaml.Unmarshal(b, &script); err != nil {
		t.Fatal(err)
	}
	for _, r := range script.Roles["worker"] {
		for _, c := range r.ToolCalls {
			if c.Name == "write_file" && c.Arguments["path"] == "solution.py" {
				return c.Arguments["content"]
			}
		}
	}
	t.Fatalf("%s writes no solution.py", task.Replay)
	return ""
}

// Every bad line is named file:line with what is wrong, and nothing is
// written: not the output folder, not a temporary folder beside it.
func TestImportBadLines(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "bad.jsonl")
	lines := []string{
		`{"task_id": "X/0", "prompt": "def f(x):\n    pass\n", "canonical_solution": "    return x\n", "test": "def check(c):\n    assert c(1) == 1\n", "entry_point": "f"}`,
		`{"task_id": "X/1", "prompt": "def f(x):\n", "canonical_solution": "    return x\n", "test": "def check(c): pass\n", "entry_point": "g"}`,
		`not json`,
		``,
		`{"task_id": "X/3", "prompt": "def h():\n", "canonical_solution": "  return 1\n", "entry_point": "h"}`,
		`{"task_id": "X/0", "prompt": "def f(x):\n", "canonical_solution": "    return x\n", "test": "def check(c): pass\n", "entry_point": "f"}`,
		`{"task_id": "X/5", "prompt": "def k():\n", "canonical_solution": "  return 1\n", "test": "assert True\n", "entry_point": "k"}`,
	}
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "suite")
	_, err := eval.Import(eval.FormatHumanEval, file, out, eval.ImportOptions{})
	if !errors.Is(err, eval.ErrInvalidImport) {
		t.Fatalf("err = %v, want ErrInvalidImport", err)
	}
	for _, want := range []string{
		file + ":2: entry_point g: the prompt defines no function g",
		file + ":3: not a JSON object",
		file + ":5: test is missing",
		file + ":6: task id humaneval-0 is also line 1's",
		file + ":7: test defines no function check(candidate)",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), ":1:") || strings.Contains(err.Error(), ":4:") {
		t.Errorf("a good or blank line is reported:\n%v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 { // bad.jsonl
		t.Errorf("the failed import left files: %v", entries)
	}

	// MBPP: an assert calling no function of the code has no entry point.
	mfile := filepath.Join(dir, "m.jsonl")
	os.WriteFile(mfile, []byte(`{"task_id": 9, "text": "t", "code": "def a(x):\n    return x\n", "test_list": ["assert b(1) == 1"], "test_setup_code": "", "challenge_test_list": []}`+"\n"+
		`{"task_id": 10, "text": "t", "code": "def a(x):\n    return x\n", "test_list": "assert a(1) == 1"}`+"\n"), 0o644)
	_, err = eval.Import(eval.FormatMBPP, mfile, out, eval.ImportOptions{})
	for _, want := range []string{mfile + ":1: entry point: no function that code defines is called by test_list[0]", mfile + ":2: test_list: want a list of strings"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q:\n%v", want, err)
		}
	}
	// A file is never replaced, and a folder with files never imported into.
	os.WriteFile(filepath.Join(dir, "afile"), []byte("x"), 0o644)
	if _, err := eval.Import(eval.FormatMBPP, filepath.Join("..", "evals", "formats", "mbpp.jsonl"), filepath.Join(dir, "afile"), eval.ImportOptions{}); err == nil || !strings.Contains(err.Error(), "is a file") {
		t.Errorf("import onto a file: %v", err)
	}
	os.MkdirAll(out, 0o755)
	os.WriteFile(filepath.Join(out, "keep"), []byte("x"), 0o644)
	if _, err := eval.Import(eval.FormatMBPP, filepath.Join("..", "evals", "formats", "mbpp.jsonl"), out, eval.ImportOptions{}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("import into a folder with files: %v", err)
	}
}
