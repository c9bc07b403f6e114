package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/trioagent/trio/agent"
)

// `trio diff RUN` on the demo shows every file the run created as a diff
// against /dev/null, and report.md and inspect show the same change.
func TestDiffDemo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := trio(t, dir, nil, "demo", "--sandbox", "local", "--quiet", "--workspace", "ws", "--runs-dir", "runs")
	if r.code != exitOK {
		t.Fatalf("demo: exit %d\n%s", r.code, r.stderr)
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "runs", "*", agent.ReportJSON))
	if len(runs) != 1 {
		t.Fatalf("reports: %v", runs)
	}
	id := filepath.Base(filepath.Dir(runs[0]))
	d := trio(t, dir, nil, "diff", "--runs-dir", "runs", id)
	if d.code != 0 {
		t.Fatalf("diff: exit %d\n%s", d.code, d.stderr)
	}
	md, err := os.ReadFile(filepath.Join(dir, "ws", "md", "md.go"))
	if err != nil {
		t.Fatal(err)
	}
	// The created files, each whole, as added lines.
	for _, f := range []string{"go.mod", "md/md.go", "md/md_test.go", "cmd/mdhtml/main.go", "acceptance/render_test.go"} {
		if !strings.Contains(d.stdout, "--- /dev/null\n+++ b/"+f+"\n@@ -0,0 +1,") {
			t.Errorf("diff lacks the created %s:\n%s", f, clip(d.stdout, 2000))
		}
	}
	var added strings.Builder
	for _, l := range strings.SplitAfter(string(md), "\n") {
		if l != "" {
			added.WriteString("+" + l)
		}
	}
	if !strings.Contains(d.stdout, added.String()) {
		t.Errorf("diff does not hold md/md.go as it is now (after the repair)")
	}
	st := trio(t, dir, nil, "diff", "--stat", "runs/"+id)
	lines := strings.Count(string(md), "\n")
	if !strings.Contains(st.stdout, "added") || !strings.Contains(st.stdout, "md/md.go") || !strings.Contains(st.stdout, "+"+itoa(lines)) {
		t.Errorf("diff --stat (md/md.go has %d lines):\n%s", lines, st.stdout)
	}
	rep, err := os.ReadFile(filepath.Join(filepath.Dir(runs[0]), agent.ReportMD))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rep), "## Changes") || !strings.Contains(string(rep), "+++ b/md/md.go") {
		t.Errorf("report.md lacks the changes:\n%s", rep)
	}
	in := trio(t, dir, nil, "inspect", "--runs-dir", "runs", id)
	if !strings.Contains(in.stdout, "Changes against the starting workspace") || !strings.Contains(in.stdout, "added    md/md.go") {
		t.Errorf("inspect lacks the per-file summary:\n%s", in.stdout)
	}
	// The earlier failing verdict with its failure, the Worker's analysis
	// and the model of each role.
	for _, want := range []string{
		"1. fail (suite v1)", "     - TestRenderInline/two_bold_spans [assertion] at acceptance/render_test.go:47",
		"2. pass", "Worker's repair analyses", "round 1: What failed: the acceptance test TestRenderInline/two_bold_spans",
		" worker", "critic", "planner",
	} {
		if !strings.Contains(in.stdout, want) {
			t.Errorf("inspect lacks %q:\n%s", want, in.stdout)
		}
	}
	// A folder that is no run exits 3.
	if r := trio(t, dir, nil, "diff", "ws"); r.code != exitConfig {
		t.Errorf("diff of a non-run: exit %d\n%s", r.code, r.stderr)
	}
}

// A second run on a workspace an earlier run left files in is refused with
// exit 3 unless --reuse-workspace says to build on them.
func TestRunRefusesUsedWorkspace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if r := trio(t, dir, nil, "demo", "--sandbox", "local", "--quiet", "--workspace", "ws", "--runs-dir", "runs"); r.code != exitOK {
		t.Fatalf("demo: exit %d\n%s", r.code, r.stderr)
	}
	script, err := filepath.Abs("../../examples/demo/script.yaml")
	if err != nil {
		t.Fatal(err)
	}
	goal, _ := filepath.Abs("../../examples/demo/goal.md")
	env := cleanEnv(envScript + "=" + script)
	r := trio(t, dir, env, "run", "--goal-file", goal, "--sandbox", "local", "--quiet", "--workspace", "ws", "--runs-dir", "runs")
	if r.code != exitConfig || !strings.Contains(r.stderr, "holds files left by run") || !strings.Contains(r.stderr, "--reuse-workspace") {
		t.Fatalf("second run: exit %d, want 3 naming the earlier run\n%s", r.code, r.stderr)
	}
	r = trio(t, dir, env, "run", "--goal-file", goal, "--sandbox", "local", "--workspace", "ws", "--runs-dir", "runs", "--reuse-workspace")
	if !strings.Contains(r.stderr, "--reuse-workspace: building on the files already in the workspace") || strings.Contains(r.stderr, "holds files left by run") {
		t.Errorf("reuse: exit %d\n%s", r.code, r.stderr)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
