package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trioagent/trio/agent"
)

// twoFilesScript plans and writes two files, go.mod and hello.txt; its
// acceptance test always passes.
const twoFilesScript = `roles:
  planner:
    - output: {"steps": [{"title": "Files", "description": "Write go.mod and hello.txt.", "files": ["go.mod", "hello.txt"], "expected": "files", "acceptance": "go test ./... passes"}], "risks": [], "test_command": "go test ./...", "cli": [], "tests_dir": "acceptance"}
  test_designer:
    - output:
        notes: one test that always passes
        files:
          - path: acceptance/ok_test.go
            content: |
              package acceptance

              import "testing"

              func TestOK(t *testing.T) {}
  worker:
    - tool_calls: [{name: write_file, arguments: {path: go.mod, content: "module x\n\ngo 1.22\n"}}]
    - tool_calls: [{name: write_file, arguments: {path: hello.txt, content: "hello\n"}}]
    - tool_calls: [{name: finish_step, arguments: {note: done}}]
`

// treeSums maps every file under dir (byte-for-byte names) to its SHA-256.
func treeSums(t *testing.T, dir string) map[string]string {
	t.Helper()
	sums := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		h := sha256.Sum256(b)
		sums[p] = hex.EncodeToString(h[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sums
}

// runScripted runs trio with twoFilesScript on ws and returns the run
// folder and the result.
func runScripted(t *testing.T, dir, ws string) (string, result) {
	t.Helper()
	script, runs := filepath.Join(dir, "script.yaml"), filepath.Join(dir, "runs")
	if err := os.WriteFile(script, []byte(twoFilesScript), 0o644); err != nil {
		t.Fatal(err)
	}
	r := trio(t, dir, cleanEnv(envScript+"="+script), "run", "--goal", "Write go.mod and hello.txt.",
		"--sandbox", "local", "--runs-dir", runs, "--workspace", ws, "--unattended")
	ids, _ := os.ReadDir(runs)
	if len(ids) != 1 {
		t.Fatalf("runs %v; exit %d\n%s", ids, r.code, r.stderr)
	}
	return filepath.Join(runs, ids[0].Name()), r
}

// An existing project of 5,000 files, among them names that would be
// stray had the run made them (temporary files, caches, a crash dump): the
// run adds its two planned files and is COMPLETED with no stray finding,
// every existing file is untouched, and state.json and report.json stay
// small.
func TestExistingProjectNoStray(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	files := map[string]string{
		"notes.tmp": "mine\n", "draft.txt~": "mine\n", "core": "mine\n", "build.log": "mine\n",
		"patch.orig": "mine\n", "__pycache__/m.cpython-312.pyc": "mine\n", "node_modules/x/index.js": "mine\n",
		".cache/blob": "mine\n", "scratch/a.swp": "mine\n",
	}
	for i := len(files); i < 5000; i++ {
		files[fmt.Sprintf("docs/d%02d/note%04d.md", i%50, i)] = fmt.Sprintf("# note %d\n", i)
	}
	for p, c := range files {
		p = filepath.Join(ws, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := treeSums(t, ws)
	runDir, r := runScripted(t, dir, ws)
	if r.code != exitOK || !strings.Contains(r.stderr, "COMPLETED") {
		t.Fatalf("exit %d, want 0 and COMPLETED\n%s", r.code, r.stderr)
	}
	after := treeSums(t, ws)
	for p, s := range before {
		if after[p] != s {
			t.Errorf("%s changed or is gone", p)
		}
	}
	for _, p := range []string{"go.mod", "hello.txt"} {
		if _, ok := after[filepath.Join(ws, p)]; !ok {
			t.Errorf("the planned %s is missing", p)
		}
	}
	b, err := os.ReadFile(filepath.Join(runDir, agent.ReportJSON))
	if err != nil {
		t.Fatal(err)
	}
	var rep agent.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Findings == nil {
		t.Fatal("report.json has no findings")
	}
	for _, c := range rep.Findings.Checks {
		if c.Name == "stray_files" && (!c.OK || c.Detail != "no stray files") {
			t.Errorf("check %s: %s", c.Name, c.Detail)
		}
	}
	for name, text := range map[string]string{"report.json": string(b), "the trace": readAll(t, filepath.Join(runDir, agent.TraceFile))} {
		if strings.Contains(text, `"stray_file"`) || strings.Contains(text, "stray:") || strings.Contains(text, "delete it") {
			t.Errorf("%s names a stray file", name)
		}
	}
	if len(rep.Changes) != 3 { // go.mod, hello.txt and the acceptance test
		t.Errorf("changes %+v, want the two planned files and the test", rep.Changes)
	}
	for _, f := range []string{agent.ReportJSON, agent.StateFile} {
		if fi, err := os.Stat(filepath.Join(runDir, f)); err != nil || fi.Size() > 1<<20 {
			t.Errorf("%s: %v, want under 1 MiB", f, fi.Size())
		}
	}
}

func readAll(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// File names that are not UTF-8 neither stop a run nor get lost: the run
// is COMPLETED, and trio diff shows a change to such a file, escaped.
func TestNonUTF8FileNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	bad, badDir := "bad\xff\xfe.txt", "d\xff"
	if err := os.MkdirAll(filepath.Join(ws, badDir), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{bad, "gone\xfe.txt", filepath.Join(badDir, "x.txt")} {
		if err := os.WriteFile(filepath.Join(ws, p), []byte("line one\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runDir, r := runScripted(t, dir, ws)
	if r.code != exitOK || !strings.Contains(r.stderr, "COMPLETED") {
		t.Fatalf("exit %d, want 0 and COMPLETED\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "invalid argument") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	// A person then edits one, deletes another: the diff has both, named
	// escaped, with the lines.
	if err := os.WriteFile(filepath.Join(ws, bad), []byte("line two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(ws, "gone\xfe.txt")); err != nil {
		t.Fatal(err)
	}
	d := trio(t, dir, nil, "diff", runDir)
	if d.code != 0 {
		t.Fatalf("trio diff: exit %d\n%s", d.code, d.stderr)
	}
	for _, want := range []string{`--- a/bad\xff\xfe.txt`, `+++ b/bad\xff\xfe.txt`, "-line one\n+line two\n", `--- a/gone\xfe.txt`} {
		if !strings.Contains(d.stdout, want) {
			t.Errorf("trio diff lacks %q:\n%s", want, d.stdout)
		}
	}
	if strings.Contains(d.stdout, `d\xff/x.txt`) {
		t.Errorf("trio diff shows the untouched d\\xff/x.txt:\n%s", d.stdout)
	}
}

// A file the policy denies (.env) is recorded by name only: after a run,
// and after the file changed, its content is nowhere in the run folder,
// nor in trio diff's output or the viewer's page.
func TestDeniedFileNotCopied(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	canary := func() string { return "SECRET=trio-canary-" + rand.Text() }
	first, second := canary(), canary()
	for p, c := range map[string]string{".env": first + "\n", "config/.env.local": first + "\n", "README.md": "# project\n"} {
		p = filepath.Join(ws, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runDir, r := runScripted(t, dir, ws)
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if err := os.WriteFile(filepath.Join(ws, ".env"), []byte(second+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := trio(t, dir, nil, "diff", runDir)
	v := trio(t, dir, nil, "view", "--out", filepath.Join(dir, "view.html"), runDir)
	if d.code != 0 || v.code != 0 {
		t.Fatalf("trio diff: exit %d, trio view: exit %d\n%s%s", d.code, v.code, d.stderr, v.stderr)
	}
	if !strings.Contains(d.stdout, ".env") || !strings.Contains(d.stdout, "denied by the policy") {
		t.Errorf("trio diff does not say .env changed:\n%s", d.stdout)
	}
	for _, secret := range []string{first, second} {
		for _, out := range []string{d.stdout, d.stderr, r.stderr, readAll(t, filepath.Join(dir, "view.html"))} {
			if strings.Contains(out, secret) {
				t.Errorf("a secret is in the output of trio diff, trio view or trio run")
			}
		}
		filepath.WalkDir(runDir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.Contains(readAll(t, p), secret) {
				t.Errorf("%s holds the secret", p)
			}
			return nil
		})
	}
}
