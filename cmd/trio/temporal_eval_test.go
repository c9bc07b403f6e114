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
	_, err := exec.LookPath("bwrap")
	need(t, "bwrap (the userns sandbox the workers and judges use)", err)
	addr := devServer(t)
	dir := t.TempDir()
	script, _ := filepath.Abs("../../examples/demo/script.yaml")
	// The worker's own model (the demo's script) answers no eval run:
	// each run's spec carries its task's replay.
	env := cleanEnv(envTemporalAddress+"="+addr, envStore+"="+filepath.Join(dir, "store"), envScript+"="+script)
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
		t.Logf("worker %s: %d runs finished, at most %d sessions at once", w.name, finished, most)
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
