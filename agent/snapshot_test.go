package agent_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trioagent/trio/agent"
)

// The run records the workspace as it started; the diff compares with
// that record even after a resume, when the workspace has changed since
// the first session (the snapshot is not retaken).
func TestDiffAgainstStartSurvivesResume(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	seed := map[string]string{"calc.go": calcBuggy, "gone.txt": "old notes\n", "README.md": "# calc\n"}
	for p, c := range seed {
		if err := os.WriteFile(filepath.Join(e.ws, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m := newFake().
		add("planner", calcPlan()).
		add("test_designer", calcSuite()).
		add("worker", calls("fix Add, drop the notes", write("calc.go", calcGood), call{"delete_file", map[string]string{"path": "gone.txt"}}))
	rep := run(t, m, nil, e.opts()...)
	if rep.Reason != agent.StopModelError {
		t.Fatalf("first session: %s (%s), want model_error (the worker's replies ran out)", rep.Reason, rep.Detail)
	}
	runDir := filepath.Join(e.runs, "run")
	m.add("worker", calls("module file", write("go.mod", goMod), finish("done")))
	rep, err := agent.Resume(context.Background(), runDir, m, nil, local)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Reason != agent.StopCompleted {
		t.Fatalf("resumed: %s (%s)", rep.Reason, rep.Detail)
	}

	c, err := agent.Diff(runDir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]agent.FileChange{}
	for _, f := range c.Files {
		got[f.Path] = f
	}
	for p, want := range map[string]struct {
		status   string
		add, del int
	}{"calc.go": {"modified", 1, 1}, "gone.txt": {"deleted", 0, 1}, "go.mod": {"added", 3, 0}, "acceptance/calc_test.go": {"added", strings.Count(calcTest, "\n"), 0}} {
		f, ok := got[p]
		if !ok || f.Status != want.status || f.Added != want.add || f.Removed != want.del {
			t.Errorf("%s: %+v, want %s +%d -%d", p, f, want.status, want.add, want.del)
		}
	}
	if _, ok := got["README.md"]; ok || len(c.Files) != 4 {
		t.Errorf("changes: %+v (README.md is unchanged)", c.Files)
	}
	u := c.Unified()
	for _, want := range []string{
		"--- a/calc.go\n+++ b/calc.go\n",
		"-func Add(a, b int) int { return a - b }\n+func Add(a, b int) int { return a + b }\n",
		"--- /dev/null\n+++ b/go.mod\n@@ -0,0 +1,3 @@\n+module calc\n",
		"--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-old notes\n",
	} {
		if !strings.Contains(u, want) {
			t.Errorf("diff lacks %q:\n%s", want, u)
		}
	}
	// The report carries the summary, report.md the diff too.
	if len(rep.Changes) != 4 {
		t.Errorf("report changes: %+v", rep.Changes)
	}
	md := readFile(t, filepath.Join(runDir, agent.ReportMD))
	for _, want := range []string{"## Changes", "- `calc.go` modified +1 −1", "```diff\n", "+func Add(a, b int) int { return a + b }"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
}

// A run folder without a snapshot says so: Diff wraps ErrNoSnapshot.
func TestDiffWithoutSnapshot(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := newFake().add("planner", text("not a plan"), text("still not"), text("no"))
	run(t, m, nil, e.opts()...)
	runDir := filepath.Join(e.runs, "run")
	if err := os.RemoveAll(filepath.Join(runDir, agent.StartDir)); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Diff(runDir); !errors.Is(err, agent.ErrNoSnapshot) {
		t.Errorf("Diff: %v, want ErrNoSnapshot", err)
	}
}

// A second run on a workspace that another run left files in is refused,
// unless the caller says to reuse them.
func TestWorkspaceOfAnotherRunRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	first := newFake().add("planner", calcPlan()).add("test_designer", calcSuite()).
		add("worker", calls("all", write("go.mod", goMod), write("calc.go", calcGood), finish("done")))
	if rep := run(t, first, nil, e.opts()...); rep.Reason != agent.StopCompleted {
		t.Fatalf("first run: %s %s", rep.Reason, rep.Detail)
	}
	opts := []agent.Option{agent.WithWorkspace(e.ws), agent.WithRunsDir(e.runs), agent.WithRunID("second"), local}
	a, err := agent.New(newFake(), nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Run(context.Background(), "again")
	if !errors.Is(err, agent.ErrWorkspaceUsed) || !errors.Is(err, agent.ErrInvalidInput) || !strings.Contains(err.Error(), "left by run run") {
		t.Fatalf("second run: %v, want ErrWorkspaceUsed naming run \"run\"", err)
	}
	if _, err := os.Stat(filepath.Join(e.runs, "second")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused run left its folder: %v", err)
	}
	again := newFake().add("planner", calcPlan()).add("test_designer", calcSuite()).
		add("worker", calls("nothing to do", finish("already built")))
	rep := run(t, again, nil, append(opts, agent.WithReuseWorkspace())...)
	if rep.Reason != agent.StopCompleted {
		t.Fatalf("reused: %s %s", rep.Reason, rep.Detail)
	}
	// Its diff starts from the first run's files: only the tests changed.
	if len(rep.Changes) != 0 {
		t.Errorf("reusing run changed %+v", rep.Changes)
	}
}

// A file over the snapshot's 8 MiB limit and a file the policy denies are
// recorded by name, size and time, never read: the run folder holds
// neither's content, and Diff tells a change to them by their size or
// time, without lines.
func TestSnapshotLargeAndDeniedByName(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	secret := "TOKEN=canary-" + strings.Repeat("q", 20)
	big := bytes.Repeat([]byte("big line of text\n"), (9<<20)/17)
	for p, c := range map[string][]byte{"big.txt": big, ".env": []byte(secret + "\n"), "keep.txt": []byte("same\n")} {
		if err := os.WriteFile(filepath.Join(e.ws, p), c, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m := newFake().add("planner", text("not a plan"), text("still not"), text("no"))
	run(t, m, nil, e.opts()...)
	runDir := filepath.Join(e.runs, "run")
	filepath.WalkDir(runDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b := readFile(t, p); strings.Contains(b, secret) || strings.Contains(b, "big line of text") {
				t.Errorf("%s holds the content of .env or big.txt", p)
			}
		}
		return nil
	})
	c, err := agent.Diff(runDir)
	if err != nil || len(c.Files) != 0 {
		t.Fatalf("Diff before any change: %+v, %v", c, err)
	}
	later := time.Now().Add(time.Minute)
	for _, p := range []string{"big.txt", ".env"} {
		if err := os.Chtimes(filepath.Join(e.ws, p), later, later); err != nil {
			t.Fatal(err)
		}
	}
	c, err = agent.Diff(runDir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"big.txt": "larger than 8.0 MiB", ".env": "denied by the policy"}
	if len(c.Files) != 2 {
		t.Fatalf("changes %+v, want big.txt and .env", c.Files)
	}
	for _, f := range c.Files {
		if f.Status != "modified" || !f.Binary || !strings.Contains(f.Note, want[f.Path]) || c.FileDiff(f.Path) != "" {
			t.Errorf("%+v, want modified, no lines, a note with %q", f, want[f.Path])
		}
	}
}
