package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/trioagent/trio/dist/flow"
	"github.com/trioagent/trio/eval"
)

// tworker is a trio worker process of a test.
type tworker struct {
	name, dir, log string
	cmd            *exec.Cmd
	done           chan struct{}
}

// startWorker starts trio worker NAME in dir/NAME with env and args,
// logging to dir/NAME.log; the test's cleanup kills it.
func startWorker(t *testing.T, dir, name string, env []string, args ...string) *tworker {
	t.Helper()
	w := &tworker{name: name, dir: filepath.Join(dir, name), log: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	lf, err := os.Create(w.log)
	if err != nil {
		t.Fatal(err)
	}
	w.cmd = exec.Command(bin, append([]string{"worker", "--name", name, "--dir", w.dir}, args...)...)
	w.cmd.Dir, w.cmd.Env, w.cmd.Stdout, w.cmd.Stderr = dir, env, lf, lf
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { w.cmd.Wait(); close(w.done) }()
	t.Cleanup(func() { w.cmd.Process.Kill(); <-w.done })
	return w
}

// sessionsAtOnce reads a worker's log: the runs that finished on it and
// the most sessions it ran at once.
func sessionsAtOnce(t *testing.T, log string) (finished, most int) {
	t.Helper()
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	now := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.Contains(line, ": session of epoch "):
			now++
			most = max(most, now)
		case strings.Contains(line, " finished on "):
			now--
			finished++
		case strings.Contains(line, " asks (") || strings.Contains(line, " is stale, "):
			now--
		}
	}
	return finished, most
}

// outcome is a result without what differs between two evals of the same
// replays (times, folders, the run id).
func outcome(r eval.TaskResult) string {
	o := r.Outcome()
	o.RunID = ""
	b, _ := json.Marshal(o)
	return string(b)
}

// TestTemporalEval runs the shipped suite with trio eval --temporal on a
// real dev server and two trio worker processes (each task's replay as
// its model, two sessions at a time per worker), and a local trio eval
// of the same replays: eval.json's totals and every task's outcome are
// the same; each worker ran sessions, never more than --parallel at
// once. A second submission of two of the tasks (to a new output folder)
// starts no run: its fan-out attaches to the finished ones, and their
// restored runs are judged again with the same outcomes.
func TestTemporalEval(t *testing.T) {
	// The worker's own model (the demo's script) answers no eval run:
	// each run's spec carries its task's replay.
	dir, addr, env := cluster(t)
	const parallel = 2
	workers := []*tworker{
		startWorker(t, dir, "a", env, "--sandbox", "userns", "--parallel", fmt.Sprint(parallel)),
		startWorker(t, dir, "b", env, "--sandbox", "userns", "--parallel", fmt.Sprint(parallel)),
	}

	start := time.Now()
	localOut := filepath.Join(dir, "local")
	r := trio(t, dir, cleanEnv(), "eval", suiteDir(t), "--sandbox", "userns", "--parallel", "4", "--out", localOut, "--quiet")
	if r.code != 0 {
		t.Fatalf("local trio eval: exit %d\n%s", r.code, r.stderr)
	}
	localTime := time.Since(start)

	start = time.Now()
	remoteOut := filepath.Join(dir, "remote")
	r = trio(t, dir, env, "eval", suiteDir(t), "--temporal", "--sandbox", "userns", "--parallel", "4", "--out", remoteOut, "--heartbeat-timeout", "30s")
	remoteTime := time.Since(start)
	logs := func() string {
		var b strings.Builder
		for _, w := range workers {
			l, _ := os.ReadFile(w.log)
			fmt.Fprintf(&b, "--- worker %s:\n%s", w.name, l)
		}
		return b.String()
	}
	if r.code != 0 {
		t.Fatalf("trio eval --temporal: exit %d\n%s\n%s", r.code, r.stderr, logs())
	}
	t.Logf("local eval %s, eval on Temporal %s; trio eval --temporal said:\n%s", localTime.Round(time.Millisecond), remoteTime.Round(time.Millisecond), r.stderr)

	local, remote := readReport(t, localOut), readReport(t, remoteOut)
	lt, rt := local.Totals, remote.Totals
	lt.RunWallTime, rt.RunWallTime = 0, 0
	t.Logf("eval.json totals: on Temporal %+v; local %+v", rt, lt)
	if lt != rt || rt.Tasks != 12 {
		t.Errorf("totals on Temporal %+v\nlocal %+v", rt, lt)
	}
	if len(local.Tasks) != len(remote.Tasks) {
		t.Fatalf("%d results on Temporal, %d local", len(remote.Tasks), len(local.Tasks))
	}
	for i, x := range remote.Tasks {
		if a, b := outcome(x), outcome(local.Tasks[i]); a != b {
			t.Errorf("task %s on Temporal:\n%s\nlocal:\n%s", x.ID, a, b)
		}
		if !strings.HasPrefix(x.RunID, "eval-"+x.ID+"-1-") || !x.Isolated {
			t.Errorf("task %s: run id %s, isolated %v", x.ID, x.RunID, x.Isolated)
		}
	}
	for _, w := range workers {
		finished, most := sessionsAtOnce(t, w.log)
		l, _ := os.ReadFile(w.log)
		t.Logf("worker %s: %d runs finished, at most %d sessions at once, %d placements declined (full)",
			w.name, finished, most, strings.Count(string(l), " is full ("))
		if finished == 0 || most > parallel {
			t.Errorf("worker %s: %d runs finished, %d sessions at once (--parallel %d)\n%s", w.name, finished, most, parallel, logs())
		}
	}

	// A second submission of two tasks: nothing runs again.
	again := filepath.Join(dir, "again")
	r = trio(t, dir, env, "eval", suiteDir(t), "--temporal", "--sandbox", "userns", "--tasks", "py-slugify,py-intervals", "--out", again)
	if r.code != 0 {
		t.Fatalf("second trio eval --temporal: exit %d\n%s", r.code, r.stderr)
	}
	m := regexp.MustCompile(`fan-out (eval-[0-9a-f]+) of 2 runs submitted to Temporal`).FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("the second submission names no new fan-out of 2 runs:\n%s", r.stderr)
	}
	c, err := client.Dial(client.Options{HostPort: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var fan flow.EvalResult
	if err := c.GetWorkflow(t.Context(), m[1], "").Get(t.Context(), &fan); err != nil {
		t.Fatal(err)
	}
	if len(fan.Started) != 0 || len(fan.Attached) != 2 {
		t.Errorf("the second fan-out started %v and attached to %v: want no run started, both attached", fan.Started, fan.Attached)
	}
	second := readReport(t, again)
	for _, x := range second.Tasks {
		for _, y := range remote.Tasks {
			if x.ID == y.ID && (outcome(x) != outcome(y) || x.RunID != y.RunID) {
				t.Errorf("task %s, second submission:\n%s\nfirst:\n%s", x.ID, outcome(x), outcome(y))
			}
		}
	}
}

// TestTemporalEvalWorkerKilled: worker A alone takes the demo run and an
// eval of three tasks (a seeded one, a repair, a disagreement), four
// sessions at once; once every run has a session on A and A completed
// its third call, A is killed with SIGKILL and worker B starts. Every run
// completes on B, whose log shows each move; every call id of every run
// completed exactly once and began at most twice (only the call in
// flight runs again); the eval's verdicts are those of a local eval.
func TestTemporalEvalWorkerKilled(t *testing.T) {
	dir, _, env := cluster(t)
	goal, _ := filepath.Abs("../../examples/demo/goal.md")
	a := startWorker(t, dir, "a", env, "--sandbox", "userns", "--parallel", "4")

	// The heartbeat timeout bounds how long B waits to see A's sessions
	// lost; it must never pass for a live session: B runs four sessions
	// at once under the race detector, beside the rest of the suite.
	const heartbeat = "15s"
	const demoID = "20261204-000000-evalkill"
	if r := trio(t, dir, env, "run", "--temporal", "--goal-file", goal, "--run-id", demoID, "--unattended", "--heartbeat-timeout", heartbeat); r.code != 0 {
		t.Fatalf("trio run --temporal: exit %d\n%s", r.code, r.stderr)
	}
	out := filepath.Join(dir, "eval")
	ev := exec.Command(bin, "eval", suiteDir(t), "--temporal", "--sandbox", "userns", "--tasks", "py-inventory-seed,go-mean-repair,py-intervals",
		"--out", out, "--heartbeat-timeout", heartbeat)
	var evOut, evErr strings.Builder
	ev.Dir, ev.Env, ev.Stdout, ev.Stderr = dir, env, &evOut, &evErr
	if err := ev.Start(); err != nil {
		t.Fatal(err)
	}
	evDone := make(chan struct{})
	go func() { ev.Wait(); close(evDone) }()
	t.Cleanup(func() { ev.Process.Kill(); <-evDone })

	// Every run in a session on A, and A's third completed call.
	runs := func(w *tworker) []string {
		entries, _ := os.ReadDir(filepath.Join(w.dir, "runs"))
		var ids []string
		for _, e := range entries {
			if _, err := os.Stat(filepath.Join(w.dir, "runs", e.Name(), "state.json")); err == nil {
				ids = append(ids, e.Name())
			}
		}
		return ids
	}
	deadline := time.Now().Add(3 * time.Minute)
	var onA []string
	for {
		onA = runs(a)
		done := 0
		for _, id := range onA {
			ends, _ := endedCalls(filepath.Join(a.dir, "runs", id))
			done += len(ends)
		}
		if len(onA) == 4 && done >= 3 {
			break
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(a.log)
			t.Fatalf("A never held the four runs with three completed calls: %v\n%s", onA, b)
		}
		time.Sleep(10 * time.Millisecond) // polling the run folders; the kill must come soon after the third call
	}
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-a.done
	aLog, _ := os.ReadFile(a.log)
	b := startWorker(t, dir, "b", env, "--sandbox", "userns", "--parallel", "4")

	r := trio(t, dir, env, "run", "--temporal", "--goal-file", goal, "--run-id", demoID, "--wait")
	if r.code != 0 || !strings.Contains(r.stderr, "ended: completed (after 1 moves)") {
		bl, _ := os.ReadFile(b.log)
		t.Fatalf("the demo run: exit %d\n%s\nB's log:\n%s", r.code, r.stderr, bl)
	}
	select {
	case <-evDone:
	case <-time.After(5 * time.Minute):
		t.Fatal("trio eval --temporal did not end")
	}
	bLog, _ := os.ReadFile(b.log)
	if ev.ProcessState.ExitCode() != 0 {
		t.Fatalf("trio eval --temporal: exit %d\n%s\nA's log:\n%s\nB's log:\n%s", ev.ProcessState.ExitCode(), evErr.String(), aLog, bLog)
	}
	t.Logf("A's log:\n%s\nB's log:\n%s", aLog, bLog)
	for _, id := range onA {
		// The move: the workflow (on B, the only worker left) saw the
		// session on A lost; B restored A's last commit of the run (or
		// started it afresh, had A committed nothing) and finished it.
		lost := regexp.MustCompile(`msg="session lost, moving the run" .* run=` + regexp.QuoteMeta(id) + ` host=a epoch=1 `)
		if !lost.Match(bLog) {
			t.Errorf("B's log has no lost session of run %s on A", id)
		}
		restored := strings.Contains(string(bLog), fmt.Sprintf("run %s: commit ", id)) && strings.Contains(string(bLog), "(epoch 1, from a) restored")
		if !restored && !strings.Contains(string(bLog), fmt.Sprintf("run %s placed on b (epoch 2, commit 0)", id)) {
			t.Errorf("B's log shows no restore of run %s", id)
		}
		if !strings.Contains(string(bLog), fmt.Sprintf("run %s finished on b: completed", id)) {
			t.Errorf("run %s did not complete on B", id)
		}
		if strings.Contains(string(aLog), fmt.Sprintf("run %s finished on a", id)) {
			t.Errorf("run %s finished on A before the kill", id)
		}
		ends, begins := endedCalls(filepath.Join(b.dir, "runs", id))
		if len(ends) < 3 {
			t.Errorf("run %s: only %d calls completed", id, len(ends))
		}
		again := 0
		for k, n := range ends {
			if n != 1 || begins[k] > 2 {
				t.Errorf("run %s, call %s: completed %d times, began %d times", id, k, n, begins[k])
			}
			if begins[k] == 2 {
				again++
			}
		}
		if again > 1 {
			t.Errorf("run %s: %d calls ran again, want at most the one in flight", id, again)
		}
	}
	rep := readReport(t, out)
	tot := rep.Totals
	if tot.Tasks != 3 || tot.HiddenPass != 2 || tot.Completed != 3 || tot.FalseCompleted != 1 {
		t.Errorf("eval totals %+v: want 3 tasks, 2 hidden passes, 3 completed, 1 completed with failing hidden tests\n%s", tot, evErr.String())
	}
}
