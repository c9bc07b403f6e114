package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trioagent/trio/eval"
)

// trio eval import turns the shipped HumanEval- and MBPP-shaped files into
// suites, and trio eval runs a task of each offline with its reference
// replay: the reference passes its hidden tests through the whole pipeline
// (eval's TestImportShippedFormats checks every task's hidden tests
// directly).
func TestEvalImportAndRun(t *testing.T) {
	for _, format := range []string{eval.FormatHumanEval, eval.FormatMBPP} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			file := filepath.Join(suiteDir(t), "formats", format+".jsonl")
			suite := filepath.Join(dir, "suite")
			r := trio(t, dir, nil, "eval", "import", format, file, suite, "--reference-replay", "--tags", "imported")
			if r.code != 0 || !strings.Contains(r.stdout, "3 tasks of "+file+" imported as suite "+format) {
				t.Fatalf("import: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			out := filepath.Join(dir, "out")
			r = trio(t, dir, nil, "eval", suite, "--tasks", format+"-1", "--sandbox", "local", "--out", out, "--quiet")
			if r.code != 0 {
				t.Fatalf("eval of the imported suite: exit %d\n%s", r.code, r.stderr)
			}
			var rep eval.Report
			b, err := os.ReadFile(filepath.Join(out, eval.ReportJSON))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &rep); err != nil {
				t.Fatal(err)
			}
			if len(rep.Tasks) != 1 || rep.Tasks[0].ID != format+"-1" {
				t.Fatalf("%d results, want 1", len(rep.Tasks))
			}
			for _, res := range rep.Tasks {
				if !res.Hidden.Pass || !res.Completed || strings.Join(res.Tags, ",") != format+",imported" {
					t.Errorf("%s: hidden %+v, completed %v, tags %v: want the reference to pass", res.ID, res.Hidden, res.Completed, res.Tags)
				}
			}
		})
	}
}

// A bad line stops the import with exit 3, naming the file and line, and
// writes nothing.
func TestEvalImportBadLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "p.jsonl")
	os.WriteFile(file, []byte(`{"task_id": 1, "text": "t", "code": "def f():\n    return 1\n", "test_list": ["assert f() == 1"]}`+"\n"+`{"task_id": 2, "text": "t"}`+"\n"), 0o644)
	r := trio(t, dir, nil, "eval", "import", "mbpp", file, filepath.Join(dir, "suite"))
	if r.code != 3 || !strings.Contains(r.stderr, file+":2: code is missing") {
		t.Errorf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "suite")); err == nil {
		t.Errorf("the failed import wrote the suite folder")
	}
	r = trio(t, dir, nil, "eval", "import", "swebench", file, filepath.Join(dir, "suite"))
	if r.code != 3 || !strings.Contains(r.stderr, `format "swebench": want humaneval or mbpp`) {
		t.Errorf("unknown format: exit %d, stderr:\n%s", r.code, r.stderr)
	}
}
