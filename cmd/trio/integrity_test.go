package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/trioagent/trio/agent"
)

// filesScript writes three files, one call each, and finishes; its test
// always passes.
const filesScript = `roles:
  planner:
    - output: {"steps": [{"title": "Files", "description": "Write go.mod, a.txt and b.txt.", "files": ["go.mod", "a.txt", "b.txt"], "expected": "files", "acceptance": "go test ./... passes"}], "risks": [], "test_command": "go test ./...", "cli": [], "tests_dir": "acceptance"}
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
    - tool_calls: [{name: write_file, arguments: {path: a.txt, content: "a\n"}}]
    - tool_calls: [{name: write_file, arguments: {path: b.txt, content: "b\n"}}]
    - tool_calls: [{name: finish_step, arguments: {note: done}}]
`

// session is a trio process whose JSON events the test reads.
type session struct {
	cmd    *exec.Cmd
	events *bufio.Scanner
	stderr *bytes.Buffer
}

func startTrio(t *testing.T, dir string, env []string, args ...string) *session {
	t.Helper()
	cmd := exec.Command(bin, append(args, "--json")...)
	cmd.Dir, cmd.Env = dir, env
	s := &session{cmd: cmd, stderr: &bytes.Buffer{}}
	cmd.Stderr = s.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.events = bufio.NewScanner(out)
	s.events.Buffer(make([]byte, 1<<20), 1<<20)
	return s
}

// until reads events up to the first of kind.
func (s *session) until(t *testing.T, kind agent.EventKind) {
	t.Helper()
	for s.events.Scan() {
		var ev agent.Event
		if json.Unmarshal(s.events.Bytes(), &ev) == nil && ev.Kind == kind {
			return
		}
	}
	t.Fatalf("no %s event; stderr:\n%s", kind, s.stderr)
}

// wait drains the events and returns the exit code.
func (s *session) wait() int {
	for s.events.Scan() {
	}
	s.cmd.Wait()
	return s.cmd.ProcessState.ExitCode()
}

// writes counts the Worker's completed write_file calls per path in a
// run's audit log.
func writes(t *testing.T, runDir string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(runDir, agent.AuditFile))
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r struct {
			Role, Tool, Outcome string
			Effects             []struct{ Path string }
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		if r.Tool == "write_file" && r.Outcome == "ok" {
			for _, e := range r.Effects {
				n[e.Path]++
			}
		}
	}
	return n
}

// Two resumes of one interrupted run: the first holds the run (it is
// stopped mid-run to make sure), the second exits 3 at once naming the
// first's pid and host, and the first then finishes without a write run
// twice.
func TestConcurrentResumes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script, runs := filepath.Join(dir, "script.yaml"), filepath.Join(dir, "runs")
	os.WriteFile(script, []byte(filesScript), 0o644)
	env := cleanEnv(envScript + "=" + script)
	first := startTrio(t, dir, env, "run", "--goal", "Write the files.", "--sandbox", "local", "--runs-dir", runs, "--workspace", "ws")
	first.until(t, agent.EventToolCall)
	first.cmd.Process.Signal(syscall.SIGINT)
	if code := first.wait(); code != exitInterrupted {
		t.Fatalf("interrupted run: exit %d\n%s", code, first.stderr)
	}
	ids, _ := os.ReadDir(runs)
	if len(ids) != 1 {
		t.Fatalf("runs: %v", ids)
	}
	runDir := filepath.Join(runs, ids[0].Name())

	a := startTrio(t, dir, env, "resume", runDir)
	a.until(t, agent.EventRunResumed)
	a.cmd.Process.Signal(syscall.SIGSTOP) // A holds the run while B tries
	b := trio(t, dir, env, "resume", runDir)
	a.cmd.Process.Signal(syscall.SIGCONT)
	host, _ := os.Hostname()
	want := fmt.Sprintf("run %s is in use by pid %d on host %s", ids[0].Name(), a.cmd.Process.Pid, host)
	if b.code != exitConfig || !strings.Contains(b.stderr, want) {
		t.Errorf("second resume: exit %d, want 3 with %q:\n%s", b.code, want, b.stderr)
	}
	if code := a.wait(); code != exitOK {
		t.Fatalf("first resume: exit %d\n%s", code, a.stderr)
	}
	for path, n := range writes(t, runDir) {
		if n != 1 {
			t.Errorf("the audit shows %s written %d times", path, n)
		}
	}
	if n := len(writes(t, runDir)); n != 3 {
		t.Errorf("%d files written, want 3", n)
	}
}

// Two runs on one workspace: the second exits 3 naming the first's pid,
// and leaves no run folder; the first finishes.
func TestTwoRunsOneWorkspace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script, runs := filepath.Join(dir, "script.yaml"), filepath.Join(dir, "runs")
	os.WriteFile(script, []byte(filesScript), 0o644)
	env := cleanEnv(envScript + "=" + script)
	args := []string{"run", "--goal", "Write the files.", "--sandbox", "local", "--runs-dir", runs, "--workspace", "ws"}
	a := startTrio(t, dir, env, args...)
	a.until(t, agent.EventRunStarted)
	a.cmd.Process.Signal(syscall.SIGSTOP)
	b := trio(t, dir, env, append(args, "--quiet")...)
	a.cmd.Process.Signal(syscall.SIGCONT)
	want := fmt.Sprintf("workspace %s is in use by pid %d on host", filepath.Join(dir, "ws"), a.cmd.Process.Pid)
	if b.code != exitConfig || !strings.Contains(b.stderr, want) || !strings.Contains(b.stderr, "(run ") {
		t.Errorf("second run: exit %d, want 3 with %q and the holder's run:\n%s", b.code, want, b.stderr)
	}
	if code := a.wait(); code != exitOK {
		t.Fatalf("first run: exit %d\n%s", code, a.stderr)
	}
	ids, _ := os.ReadDir(runs)
	if len(ids) != 1 {
		t.Errorf("runs %v: the refused run left a folder", ids)
	}
	for path, n := range writes(t, filepath.Join(runs, ids[0].Name())) {
		if n != 1 {
			t.Errorf("the audit shows %s written %d times", path, n)
		}
	}
}

// Bad input exits 3 with a message naming what was wrong, before any
// model call, and leaves nothing behind.
func TestBadInputExits3(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "script.yaml")
	os.WriteFile(script, []byte(filesScript), 0o644)
	big := filepath.Join(dir, "big.md")
	os.WriteFile(big, bytes.Repeat([]byte("Build a calculator.\n"), 50<<20/20), 0o644)
	bin := filepath.Join(dir, "goal.bin")
	os.WriteFile(bin, []byte("\x7fELF\x02\x01\x01\x00\x00\x00\xff\xfe"), 0o644)
	os.WriteFile(filepath.Join(dir, "afile"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, "retries.yaml"), []byte("endpoint:\n  timeout: 30s\n  max_retries: 1000000000\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "window.yaml"), []byte("window:\n  context_limit: 10\n"), 0o644)
	env := cleanEnv(envScript + "=" + script)
	run := []string{"run", "--sandbox", "local", "--runs-dir", "runs", "--quiet"}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"50 MB goal", append(run, "--goal-file", "big.md"), "big.md is 52428800 bytes, more than the goal limit of 262144"},
		{"binary goal", append(run, "--goal-file", "goal.bin"), "--goal-file goal.bin: the goal is not UTF-8 text"},
		{"workspace is a file", append(run, "--goal", "x", "--workspace", "afile"), "afile is a file, not a folder"},
		{"runs dir under a file", []string{"run", "--sandbox", "local", "--runs-dir", "afile/runs", "--quiet", "--goal", "x"}, "afile/runs/"},
		{"max_retries", append(run, "--goal", "x", "--config", "retries.yaml"), "retries.yaml:3: endpoint.max_retries: want a whole number from 0 to 20"},
		{"context_limit", append(run, "--goal", "x", "--config", "window.yaml"), "window.yaml:2: window.context_limit: want a whole number from 1024"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := trio(t, dir, env, tt.args...)
			if r.code != exitConfig || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, want 3 with %q:\n%s", r.code, tt.want, r.stderr)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "runs")); err == nil {
		t.Errorf("bad input left a runs folder")
	}

	// A damaged checkpoint, and one from a version with another phase.
	for name, state := range map[string]string{
		"damaged": `{"version": 1, "run_id": "x", "pha`,
		"phase":   `{"version": 1, "run_id": "x", "phase": "deploy", "workspace": "ws"}`,
	} {
		runDir := filepath.Join(dir, "bad-"+name)
		os.MkdirAll(runDir, 0o755)
		os.WriteFile(filepath.Join(runDir, agent.StateFile), []byte(state), 0o644)
		want := map[string]string{"damaged": "state.json: damaged checkpoint", "phase": `unknown phase "deploy"`}[name]
		for _, cmd := range []string{"resume", "inspect"} {
			r := trio(t, dir, env, cmd, runDir)
			if r.code != exitConfig || !strings.Contains(r.stderr, want) {
				t.Errorf("%s of a %s checkpoint: exit %d, want 3 with %q:\n%s", cmd, name, r.code, want, r.stderr)
			}
		}
		if entries, _ := os.ReadDir(runDir); len(entries) != 1 {
			t.Errorf("resume of a %s checkpoint left %d files, want state.json alone", name, len(entries))
		}
	}
}

// A run folder whose calls.jsonl is gone while the checkpoint has calls
// pending is not resumed: the completed calls would run again unrecorded.
func TestMissingCallsRecord(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script, runs := filepath.Join(dir, "script.yaml"), filepath.Join(dir, "runs")
	// One reply with three writes, so that the run stops inside it.
	os.WriteFile(script, []byte(strings.Replace(filesScript, `    - tool_calls: [{name: write_file, arguments: {path: go.mod, content: "module x\n\ngo 1.22\n"}}]
    - tool_calls: [{name: write_file, arguments: {path: a.txt, content: "a\n"}}]
    - tool_calls: [{name: write_file, arguments: {path: b.txt, content: "b\n"}}]`, `    - tool_calls:
        - {name: write_file, arguments: {path: go.mod, content: "module x\n\ngo 1.22\n"}}
        - {name: write_file, arguments: {path: a.txt, content: "a\n"}}
        - {name: write_file, arguments: {path: b.txt, content: "b\n"}}`, 1)), 0o644)
	env := cleanEnv(envScript + "=" + script)
	s := startTrio(t, dir, env, "run", "--goal", "Write the files.", "--sandbox", "local", "--runs-dir", runs, "--workspace", "ws")
	s.until(t, agent.EventToolCall)
	s.cmd.Process.Signal(syscall.SIGKILL)
	s.wait()
	ids, _ := os.ReadDir(runs)
	runDir := filepath.Join(runs, ids[0].Name())
	os.Remove(filepath.Join(runDir, agent.CallsFile))
	r := trio(t, dir, env, "resume", runDir)
	if r.code != exitConfig || !strings.Contains(r.stderr, "calls.jsonl is missing and the checkpoint has a pending Worker reply with 3 tool calls") {
		t.Fatalf("resume without calls.jsonl: exit %d\n%s", r.code, r.stderr)
	}
	// An empty record says: run them again. The kill can land inside a
	// write, between its temporary file and the rename (made certain
	// here): the resume removes that file, or the Critic would count it
	// as a stray file and fail the check.
	os.WriteFile(filepath.Join(runDir, agent.CallsFile), nil, 0o644)
	cut := filepath.Join(dir, "ws", ".a.txt.trio-0123456789ab.tmp")
	if err := os.WriteFile(cut, []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := trio(t, dir, env, "resume", "--quiet", runDir); r.code != exitOK {
		t.Fatalf("resume with an empty calls.jsonl: exit %d\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(cut); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the interrupted write's temporary file is still there: %v", err)
	}
}
