package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/trioagent/trio/dist/flow"
)

// envTemporalCLI names the Temporal CLI whose dev server the tests start
// (default: temporal on PATH). The tests were written against v1.5.1.
const envTemporalCLI = "TRIO_TEMPORAL_CLI"

// need is a component a test cannot run without: missing, it fails the
// test under CI=true and skips it otherwise.
func need(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and %s is missing: %v", what, err)
	}
	t.Skipf("%s missing: %v", what, err)
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// devServer starts a Temporal dev server on loopback, in memory, and
// returns its frontend address once it answers.
func devServer(t *testing.T) string {
	t.Helper()
	cli := os.Getenv(envTemporalCLI)
	if cli == "" {
		cli = "temporal"
	}
	cli, err := exec.LookPath(cli)
	need(t, "the Temporal CLI ($"+envTemporalCLI+" or temporal on PATH)", err)
	port := freePort(t)
	cmd := exec.Command(cli, "server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", port,
		"--http-port", freePort(t), "--metrics-port", freePort(t), "--log-level", "error")
	logf, err := os.Create(filepath.Join(t.TempDir(), "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	addr := "127.0.0.1:" + port
	// Ready when a client's health check passes (the server takes a few
	// seconds to open its frontend); the dial itself bounds each try.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		select {
		case err := <-exited:
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("the dev server exited: %v\n%s", err, b)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, err := client.DialContext(ctx, client.Options{HostPort: addr})
		cancel()
		if err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dev server at %s did not answer: %v", addr, err)
		}
		time.Sleep(200 * time.Millisecond) // polling a readiness condition, bounded by the deadline
	}
}

// endedCalls counts the completed calls in a run folder's calls.jsonl.
func endedCalls(runDir string) (ends, begins map[string]int) {
	ends, begins = map[string]int{}, map[string]int{}
	f, err := os.Open(filepath.Join(runDir, "calls.jsonl"))
	if err != nil {
		return ends, begins
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var rec struct{ Phase, Key string }
		if json.Unmarshal(sc.Bytes(), &rec) != nil {
			continue // a record being written
		}
		switch rec.Phase {
		case "end":
			ends[rec.Key]++
		case "begin":
			begins[rec.Key]++
		}
	}
	return ends, begins
}

// cluster starts a dev server for the test and returns a folder of the
// test's, the server's address and the environment the test's trio
// commands share: the server, a store in the folder and the demo's
// script as the workers' model. The workers sandbox with userns.
func cluster(t *testing.T) (dir, addr string, env []string) {
	t.Helper()
	_, err := exec.LookPath("bwrap")
	need(t, "bwrap (the userns sandbox the workers and judges use)", err)
	addr = devServer(t)
	dir = t.TempDir()
	script, _ := filepath.Abs("../../examples/demo/script.yaml")
	env = cleanEnv(envTemporalAddress+"="+addr, envTemporalNamespace+"=default",
		envStore+"="+filepath.Join(dir, "store"), envScript+"="+script)
	return dir, addr, env
}

// TestTemporalWorkerKilled runs the demo on a real Temporal dev server
// with two trio worker processes; the worker that holds the run is killed
// with SIGKILL after its third completed tool call. The run moves to the
// other worker, which restores the last commit and completes it; every
// call in calls.jsonl completed exactly once and began at most twice (only
// the call in flight runs again); a second submission of the run id
// starts nothing.
func TestTemporalWorkerKilled(t *testing.T) {
	dir, _, env := cluster(t)
	goal, _ := filepath.Abs("../../examples/demo/goal.md")
	type worker struct {
		name, dir, log string
		cmd            *exec.Cmd
		done           chan struct{}
	}
	workers := map[string]*worker{}
	for _, name := range []string{"a", "b"} {
		w := &worker{name: name, dir: filepath.Join(dir, name), log: filepath.Join(dir, name+".log"), done: make(chan struct{})}
		lf, err := os.Create(w.log)
		if err != nil {
			t.Fatal(err)
		}
		w.cmd = exec.Command(bin, "worker", "--name", name, "--dir", w.dir, "--sandbox", "userns")
		w.cmd.Dir, w.cmd.Env, w.cmd.Stdout, w.cmd.Stderr = dir, env, lf, lf
		if err := w.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { w.cmd.Wait(); close(w.done) }()
		t.Cleanup(func() { w.cmd.Process.Kill(); <-w.done })
		workers[name] = w
	}
	const id = "20261204-000000-temporal"
	r := trio(t, dir, env, "run", "--temporal", "--goal-file", goal, "--run-id", id, "--unattended", "--heartbeat-timeout", "5s")
	if r.code != 0 || strings.TrimSpace(r.stdout) != id {
		t.Fatalf("trio run --temporal: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
	// The worker holding the run, after its third completed call.
	var victim, survivor *worker
	deadline := time.Now().Add(3 * time.Minute)
	for victim == nil {
		for _, w := range workers {
			if ends, _ := endedCalls(filepath.Join(w.dir, "runs", id)); len(ends) >= 3 {
				victim = w
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no worker completed three calls of the run")
		}
		time.Sleep(10 * time.Millisecond) // polling the run folder; the kill must come soon after the third call
	}
	if err := victim.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-victim.done
	for _, w := range workers {
		if w != victim {
			survivor = w
		}
	}
	r = trio(t, dir, env, "run", "--temporal", "--goal-file", goal, "--run-id", id, "--wait")
	logb, _ := os.ReadFile(survivor.log)
	log := string(logb)
	if r.code != 0 || !strings.Contains(r.stderr, "was submitted before: nothing new started") || !strings.Contains(r.stderr, "ended: completed (after 1 moves)") {
		t.Fatalf("the second submission with --wait: exit %d\n%s\nsurvivor's log:\n%s", r.code, r.stderr, log)
	}
	for _, want := range []string{
		"session lost, moving the run",
		fmt.Sprintf("(epoch 1, from %s) restored", victim.name),
		fmt.Sprintf("run %s finished on %s: completed", id, survivor.name),
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the survivor's log lacks %q:\n%s", want, log)
		}
	}
	t.Logf("the move, in %s's log:\n%s", survivor.name, log)
	ends, begins := endedCalls(filepath.Join(survivor.dir, "runs", id))
	if len(ends) < 10 {
		t.Errorf("only %d calls completed in the run", len(ends))
	}
	for k, n := range ends {
		if n != 1 || begins[k] > 2 {
			t.Errorf("call %s: completed %d times, began %d times", k, n, begins[k])
		}
	}
	r = trio(t, dir, env, "status", id, "--json")
	var st flow.Status
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.State != "finished" || st.Moves != 1 ||
		len(st.Lost) != 1 || st.Lost[0] != victim.name || st.Host != survivor.name {
		t.Errorf("trio status: %+v (%v)\n%s", st, err, r.stderr)
	}
}

// TestTemporalConfirm: on a real dev server, a policy's ask ends the
// session; trio status shows the request; trio confirm's yes resumes the
// run, which runs the command and completes; the audit log records the
// person's answer.
func TestTemporalConfirm(t *testing.T) {
	dir, _, env := cluster(t)
	goal, _ := filepath.Abs("../../examples/demo/goal.md")
	pol, err := os.ReadFile("../../configs/policy.interactive.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The demo's first go test asks.
	askPol := strings.Replace(string(pol), "  ask:\n", "  ask:\n    - \"go test -json ./md/\"\n", 1)
	if askPol == string(pol) {
		t.Fatal("policy.interactive.yaml has no commands.ask list")
	}
	polFile := filepath.Join(dir, "ask.yaml")
	if err := os.WriteFile(polFile, []byte(askPol), 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "worker.log")
	lf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	w := exec.Command(bin, "worker", "--name", "a", "--dir", filepath.Join(dir, "a"), "--sandbox", "userns", "--policy", polFile)
	w.Dir, w.Env, w.Stdout, w.Stderr = dir, env, lf, lf
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { w.Wait(); close(done) }()
	t.Cleanup(func() { w.Process.Kill(); <-done })
	const id = "20261204-000000-confirm"
	if r := trio(t, dir, env, "run", "--temporal", "--goal-file", goal, "--run-id", id, "--policy", polFile); r.code != 0 {
		t.Fatalf("trio run --temporal: exit %d\n%s", r.code, r.stderr)
	}
	var r result
	deadline := time.Now().Add(3 * time.Minute)
	for {
		r = trio(t, dir, env, "status", id)
		if strings.Contains(r.stdout, "waiting") {
			break
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logPath)
			t.Fatalf("the run never waited for a confirmation; status:\n%s%s\nworker:\n%s", r.stdout, r.stderr, b)
		}
		time.Sleep(100 * time.Millisecond) // polling the workflow's state
	}
	for _, want := range []string{"asks: run_tests exec go test -json ./md/", `rule: commands.ask: "go test -json ./md/"`, "trio confirm " + id} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("trio status lacks %q:\n%s", want, r.stdout)
		}
	}
	if r := trio(t, dir, env, "confirm", id, "yes"); r.code != 0 {
		t.Fatalf("trio confirm: exit %d\n%s", r.code, r.stderr)
	}
	r = trio(t, dir, env, "run", "--temporal", "--goal-file", goal, "--run-id", id, "--wait")
	if r.code != 0 || !strings.Contains(r.stderr, "ended: completed") {
		b, _ := os.ReadFile(logPath)
		t.Fatalf("the run after yes: exit %d\n%s\nworker:\n%s", r.code, r.stderr, b)
	}
	audit, err := os.ReadFile(filepath.Join(dir, "a", "runs", id, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	answered := false
	for _, line := range strings.Split(string(audit), "\n") {
		if strings.Contains(line, `"line":"go test -json ./md/"`) && strings.Contains(line, `"answer":"yes"`) && strings.Contains(line, `"outcome":"ok"`) {
			answered = true
		}
	}
	if !answered {
		t.Errorf("audit.jsonl has no go test -json ./md/ run after a yes:\n%s", audit)
	}
}
