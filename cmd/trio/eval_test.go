package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/eval"
	"github.com/trioagent/trio/sandbox/userns"
)

// suiteDir is the shipped suite, from this package's folder.
func suiteDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.Abs("../../evals")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestEvalKilledAndRerun runs `trio eval evals/` offline, kills it with
// SIGKILL once a few tasks finished, and runs it again: the finished tasks
// are skipped (their results untouched), the rest run, and the table and
// eval.json carry the run folders' numbers.
func TestEvalKilledAndRerun(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	args := []string{"eval", suiteDir(t), "--sandbox", "local", "--parallel", "2", "--out", out}

	cmd := exec.Command(bin, append(args, "--json")...)
	cmd.Dir, cmd.Env = dir, cleanEnv()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	finished := 0
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 4<<20), 4<<20)
	for finished < 4 && sc.Scan() {
		var ev eval.Event
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Kind == eval.EventTaskFinished {
			finished++
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if finished < 4 {
		t.Fatalf("the eval ended after %d finished tasks", finished)
	}
	before := map[string][]byte{}
	entries, _ := os.ReadDir(filepath.Join(out, eval.TasksDir))
	for _, e := range entries {
		if b, err := os.ReadFile(filepath.Join(eval.SampleDir(out, e.Name(), 1), eval.ResultFile)); err == nil {
			before[e.Name()] = b
		}
	}
	if len(before) < 4 || len(before) >= 12 {
		t.Fatalf("%d results after the kill, want at least 4 and fewer than 12", len(before))
	}

	start := time.Now()
	r := trio(t, dir, nil, args...)
	t.Logf("rerun of %d tasks: %s", 12-len(before), time.Since(start))
	if r.code != 0 {
		t.Fatalf("rerun: exit %d\n%s", r.code, r.stderr)
	}
	if n := strings.Count(r.stderr, "(finished earlier, skipped)"); n != len(before) {
		t.Errorf("%d skipped lines, want %d:\n%s", n, len(before), r.stderr)
	}
	if n := strings.Count(r.stderr, "\n["); n != 12 {
		t.Errorf("%d progress lines, want 12:\n%s", n, r.stderr)
	}
	var rep eval.Report
	b, err := os.ReadFile(filepath.Join(out, eval.ReportJSON))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Skipped) != len(before) {
		t.Errorf("skipped %v, want the %d finished before the kill", rep.Skipped, len(before))
	}
	for id, old := range before {
		now, _ := os.ReadFile(filepath.Join(eval.SampleDir(out, id, 1), eval.ResultFile))
		if string(now) != string(old) {
			t.Errorf("task %s finished before the kill and ran again", id)
		}
	}
	md, _ := os.ReadFile(filepath.Join(out, eval.ReportMD))
	if r.stdout != string(md) {
		t.Errorf("the table on stdout is not eval.md")
	}
	for _, tr := range rep.Tasks {
		disk, err := agent.LoadReport(tr.RunDir)
		if err != nil {
			t.Fatal(err)
		}
		m := disk.Metrics
		row := tr.ID + " | "
		if !strings.Contains(string(md), "| "+row) {
			t.Errorf("no row for %s", tr.ID)
		}
		if tr.Tokens != m.PromptTokens+m.CompletionTokens || tr.RepairRounds != m.RepairRounds || tr.ToolCalls != m.ToolCalls || tr.Completed != m.Completed {
			t.Errorf("task %s: %+v differs from its run folder's report %+v", tr.ID, tr, m)
		}
	}
	tot := rep.Totals
	if tot.Tasks != 12 || tot.HiddenPass != 10 || tot.Completed != 11 || tot.FalseCompleted != 1 {
		t.Errorf("totals %+v: want 12 tasks, 10 hidden passes, 11 completed, 1 completed with failing hidden tests", tot)
	}
}

func TestEvalBadSuiteExits3(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	suite := filepath.Join(dir, "suite.yaml")
	os.WriteFile(suite, []byte("version: 1\ntasks:\n  - id: a\n    colour: red\n"), 0o644)
	for _, args := range [][]string{
		{"eval", dir},
		{"eval", suiteDir(t), "--tasks", "no-such-task"},
		{"eval", suiteDir(t), "--price", "cheap"},
	} {
		r := trio(t, dir, nil, args...)
		if r.code != exitConfig {
			t.Errorf("trio %v: exit %d, want 3\n%s", args, r.code, r.stderr)
		}
	}
	r := trio(t, dir, nil, "eval", dir)
	if !strings.Contains(r.stderr, suite) || !strings.Contains(r.stderr, "colour") {
		t.Errorf("stderr does not name the file and the key:\n%s", r.stderr)
	}
}

// TestEvalSandboxChoice: trio eval isolates as trio run does. With neither
// containerd nor bwrap it refuses (exit 3) and says how to go on; with
// --sandbox local every result is marked UNISOLATED in the table, on
// stderr and in eval.json; in userns every result is isolated, the hidden
// tests (Go and Python, sentinels laid over them) judged in userns too.
func TestEvalSandboxChoice(t *testing.T) {
	dir := t.TempDir()
	tasks := []string{"--tasks", "py-slugify,go-reverse"}

	noIsolation := cleanEnv("PATH=/usr/local/go/bin:/nonexistent", "TRIO_CONTAINERD_ADDRESS="+filepath.Join(dir, "none.sock"))
	// Nor Landlock: auto leaves it out (sandbox.auto in trio.yaml).
	refusedCfg := filepath.Join(dir, "no-landlock.yaml")
	os.WriteFile(refusedCfg, []byte(autoWithoutLandlock), 0o644)
	r := trio(t, dir, noIsolation, append([]string{"eval", suiteDir(t), "--config", refusedCfg, "--out", filepath.Join(dir, "refused")}, tasks...)...)
	if r.code != exitConfig || !strings.Contains(r.stderr, "no isolating sandbox") || !strings.Contains(r.stderr, "--sandbox local") {
		t.Errorf("eval without containerd or bwrap: exit %d, want 3 with the ways forward:\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "refused", eval.TasksDir, "py-slugify")); err == nil {
		t.Errorf("the refused eval started a task")
	}

	read := func(out string) eval.Report {
		t.Helper()
		var rep eval.Report
		b, err := os.ReadFile(filepath.Join(out, eval.ReportJSON))
		if err == nil {
			err = json.Unmarshal(b, &rep)
		}
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	local := filepath.Join(dir, "local")
	r = trio(t, dir, nil, append([]string{"eval", suiteDir(t), "--sandbox", "local", "--out", local}, tasks...)...)
	if r.code != 0 {
		t.Fatalf("eval --sandbox local: exit %d\n%s", r.code, r.stderr)
	}
	rep := read(local)
	if rep.Isolated || len(rep.Tasks) != 2 || rep.Unisolated() != 2 {
		t.Errorf("eval.json of --sandbox local: isolated %v, %d of %d results unisolated; want every result unisolated", rep.Isolated, rep.Unisolated(), len(rep.Tasks))
	}
	if !strings.Contains(r.stdout, "**UNISOLATED: 2 of 2 results") || strings.Count(r.stdout, " UNISOLATED |") != 2 {
		t.Errorf("the table does not mark the results unisolated:\n%s", r.stdout)
	}
	if strings.Count(r.stderr, "  UNISOLATED") != 2 || !strings.Contains(r.stderr, "trio eval: UNISOLATED: 2 of 2 results") {
		t.Errorf("stderr does not mark the results unisolated:\n%s", r.stderr)
	}

	if err := userns.Available(t.Context(), ""); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and the userns sandbox is unavailable: %v", err)
		}
		t.Skipf("userns sandbox unavailable: %v", err)
	}
	isolated := filepath.Join(dir, "userns")
	r = trio(t, dir, nil, append([]string{"eval", suiteDir(t), "--sandbox", "userns", "--out", isolated}, tasks...)...)
	if r.code != 0 {
		t.Fatalf("eval --sandbox userns: exit %d\n%s", r.code, r.stderr)
	}
	rep = read(isolated)
	if !rep.Isolated || rep.Sandbox != userns.Kind || rep.Unisolated() != 0 || strings.Contains(r.stdout+r.stderr, "UNISOLATED") {
		t.Errorf("eval --sandbox userns: sandbox %s, isolated %v, %d unisolated:\n%s\n%s", rep.Sandbox, rep.Isolated, rep.Unisolated(), r.stdout, r.stderr)
	}
	for _, tr := range rep.Tasks {
		if !tr.Isolated || tr.Hidden.Sandbox != userns.Kind || !tr.Hidden.Pass || tr.Hidden.Forged {
			t.Errorf("task %s: isolated %v, hidden %+v; want an isolated pass judged in userns", tr.ID, tr.Isolated, tr.Hidden)
		}
	}
}
