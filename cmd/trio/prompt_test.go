package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/trioagent/trio/policy"
)

// openPair returns a pseudo-terminal: the confirmer reads the tty side;
// the test plays the person on the master side, whose output it collects.
// waitReadable waits until the terminal has a line to read (poll(2), which
// reads nothing), so that what was typed has arrived before a question is
// asked, however slow the machine.
func waitReadable(t *testing.T, tty *os.File) {
	t.Helper()
	rc, err := tty.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var perr error
	if err := rc.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			if _, perr = unix.Poll(fds, -1); perr != unix.EINTR {
				return
			}
		}
	}); err != nil || perr != nil {
		t.Fatalf("poll the terminal: %v %v", err, perr)
	}
}

func openPair(t *testing.T) (ptmx *os.File, tty *os.File, screen *syncBuffer) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	screen = &syncBuffer{}
	done := make(chan struct{})
	go func() {
		io.Copy(screen, ptmx)
		close(done)
	}()
	t.Cleanup(func() {
		tty.Close()
		ptmx.Close()
		<-done
	})
	return ptmx, tty, screen
}

var rmRequest = policy.ConfirmRequest{
	Tool: "run_command", Action: "exec", Argv: []string{"rm", "-rf", "build"}, Command: "rm -rf build",
	Decision: policy.Decision{Verdict: policy.Ask, Rule: `commands.ask: "rm *" (policy.yaml:9)`, Reason: `"rm -rf build" matches commands.ask "rm *"`},
	Timeout:  time.Minute,
}

// The Confirmer on a real pseudo-terminal: each answer, and every kind of
// non-answer, which is no.
func TestConfirmerOnPTY(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		typed   string // "" types nothing: the question times out
		want    policy.Answer
		wantErr error
		shown   string
	}{
		{"yes", "y\n", policy.AnswerYes, nil, "yes, once"},
		{"yes word", "Yes\n", policy.AnswerYes, nil, "yes, once"},
		{"no", "n\n", policy.AnswerNo, nil, "denied"},
		{"always", "a\n", policy.AnswerAlways, nil, "every action under this rule"},
		{"garbage", "sure thing\n", policy.AnswerNo, nil, `"sure thing" is not y, n or a: denied`},
		{"empty line", "\n", policy.AnswerNo, nil, "denied"},
		{"end of input", "\x04", policy.AnswerNo, nil, "end of input: denied"},
		{"timeout", "", policy.AnswerNo, context.DeadlineExceeded, "no answer within"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ptmx, tty, screen := openPair(t)
			c, err := newTTYConfirmer(tty)
			if err != nil {
				t.Fatal(err)
			}
			req := rmRequest
			timeout := 10 * time.Second
			if tt.typed == "" {
				timeout, req.Timeout = 300*time.Millisecond, 300*time.Millisecond
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			type reply struct {
				a   policy.Answer
				err error
			}
			got := make(chan reply, 1)
			go func() {
				a, err := c.Confirm(ctx, req)
				got <- reply{a, err}
			}()
			waitFor(t, screen, "Allow?", 1, 5*time.Second)
			if tt.typed != "" {
				ptmx.Write([]byte(tt.typed))
			}
			r := <-got
			if r.a != tt.want || !errors.Is(r.err, tt.wantErr) {
				t.Errorf("answer %v, %v; want %v, %v", r.a, r.err, tt.want, tt.wantErr)
			}
			waitFor(t, screen, tt.shown, 1, 5*time.Second)
			s := screen.String()
			for _, want := range []string{"run_command", `["rm" "-rf" "build"]`, `commands.ask: "rm *" (policy.yaml:9)`, `matches commands.ask`, "no answer in 1m0s = no"} {
				if tt.typed != "" && !strings.Contains(s, want) {
					t.Errorf("question lacks %q:\n%s", want, s)
				}
			}
		})
	}
}

// Input typed before a question cannot answer it, and a timed-out question
// leaves nothing reading the terminal: the next question gets the next line.
func TestConfirmerTypeAheadAndNoStolenInput(t *testing.T) {
	t.Parallel()
	ptmx, tty, screen := openPair(t)
	c, err := newTTYConfirmer(tty)
	if err != nil {
		t.Fatal(err)
	}
	ptmx.Write([]byte("y\n")) // typed before anything was asked
	waitReadable(t, tty)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	a, err := c.Confirm(ctx, rmRequest)
	cancel()
	if a != policy.AnswerNo || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("type-ahead answered: %v, %v", a, err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := make(chan policy.Answer, 1)
	go func() {
		a, _ := c.Confirm(ctx, rmRequest)
		got <- a
	}()
	waitFor(t, screen, "Allow?", 2, 5*time.Second)
	ptmx.Write([]byte("a\n"))
	if a := <-got; a != policy.AnswerAlways {
		t.Errorf("second question: %v, want always", a)
	}
}

// Cancelling (Ctrl-C cancels the run's context) ends the question at once
// with no.
func TestConfirmerCancel(t *testing.T) {
	t.Parallel()
	_, tty, screen := openPair(t)
	c, err := newTTYConfirmer(tty)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() {
		a, err := c.Confirm(ctx, rmRequest)
		if a != policy.AnswerNo {
			err = errors.New("not no")
		}
		got <- err
	}()
	waitFor(t, screen, "Allow?", 1, 5*time.Second)
	cancel()
	select {
	case err := <-got:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Confirm did not return after cancel")
	}
}

const ptyPolicy = `version: 1
mode: interactive
commands:
  allow: ["go test *", "go build *", "go vet *"]
  ask: ["rm *"]
confirm:
  timeout: 2s
  default: deny
`

// The worker asks to remove five files, one command each: the person
// answers y, n, nothing, a; the fifth command falls under the "always".
const ptyScript = `roles:
  planner:
    - output: {"steps": [{"title": "Remove the files", "description": "Remove a.txt to e.txt, one rm each; write go.mod.", "files": ["go.mod"], "expected": "files removed", "acceptance": "go test ./... passes"}], "risks": [], "test_command": "go test ./...", "cli": [], "tests_dir": "acceptance"}
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
    - tool_calls:
        - {name: write_file, arguments: {path: go.mod, content: "module x\n\ngo 1.22\n"}}
        - {name: run_command, arguments: {command: "rm a.txt"}}
    - tool_calls: [{name: run_command, arguments: {command: "rm b.txt"}}]
    - tool_calls: [{name: run_command, arguments: {command: "rm c.txt"}}]
    - tool_calls: [{name: run_command, arguments: {command: "rm d.txt"}}]
    - tool_calls: [{name: run_command, arguments: {command: "rm e.txt"}}]
    - tool_calls: [{name: finish_step, arguments: {note: done}}]
`

// trio run on a real terminal: y runs the command, n and silence deny it,
// a runs it and every later command under the same rule without asking.
func TestRunAsksOnTerminal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws, runs := filepath.Join(dir, "ws"), filepath.Join(dir, "runs")
	os.MkdirAll(ws, 0o755)
	for _, f := range []string{"a.txt", "b.txt", "c.txt", "d.txt", "e.txt"} {
		os.WriteFile(filepath.Join(ws, f), []byte(f+"\n"), 0o644)
	}
	pol, script := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "script.yaml")
	os.WriteFile(pol, []byte(ptyPolicy), 0o644)
	os.WriteFile(script, []byte(ptyScript), 0o644)

	cmd := exec.Command(bin, "run", "--goal", "Remove the text files.", "--workspace", ws, "--runs-dir", runs,
		"--policy", pol, "--sandbox", "local", "--quiet")
	cmd.Dir, cmd.Env = dir, cleanEnv(envScript+"="+script)
	var stderr syncBuffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	ptmx, err := pty.Start(cmd) // stdin is the terminal
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	screen := &syncBuffer{}
	go io.Copy(screen, ptmx)

	answer := func(n int, text string) {
		waitFor(t, screen, "Allow?", n, 30*time.Second)
		if text != "" {
			ptmx.Write([]byte(text + "\n"))
		}
	}
	answer(1, "y")
	answer(2, "n")
	answer(3, "") // never answered: the 2s confirm timeout denies it
	answer(4, "a")
	waitErr := make(chan error, 1)
	go func() { waitErr <- cmd.Wait() }()
	select {
	case <-waitErr:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("trio run did not finish; terminal:\n%s\nstderr:\n%s", screen.String(), stderr.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != exitOK {
		t.Fatalf("exit %d\nterminal:\n%s\nstderr:\n%s", code, screen.String(), stderr.String())
	}
	s := screen.String()
	if n := strings.Count(s, "Allow?"); n != 4 {
		t.Errorf("%d questions, want 4 (the 5th rm is covered by always):\n%s", n, s)
	}
	for _, want := range []string{`["rm" "a.txt"]`, `commands.ask: "rm *"`, "no answer within 2s: denied", "yes, once", "every action under this rule"} {
		if !strings.Contains(s, want) {
			t.Errorf("terminal lacks %q:\n%s", want, s)
		}
	}
	for f, kept := range map[string]bool{"a.txt": false, "b.txt": true, "c.txt": true, "d.txt": false, "e.txt": false} {
		_, err := os.Stat(filepath.Join(ws, f))
		if (err == nil) != kept {
			t.Errorf("%s: kept %v, want %v", f, err == nil, kept)
		}
	}
	// The audit log records the answers, the "always" and the call it covered.
	audits, _ := filepath.Glob(filepath.Join(runs, "*", "audit.jsonl"))
	if len(audits) != 1 {
		t.Fatalf("audit logs: %v", audits)
	}
	b, _ := os.ReadFile(audits[0])
	audit := string(b)
	for _, want := range []string{`"answer":"yes"`, `"answer":"always"`, `"auto_approved":true`, `"answer":"no"`} {
		if !strings.Contains(audit, want) {
			t.Errorf("audit lacks %s:\n%s", want, audit)
		}
	}
}

// Without a terminal on stdin nothing waits: ask means deny.
func TestRunWithoutTerminalDenies(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws, runs := filepath.Join(dir, "ws"), filepath.Join(dir, "runs")
	os.MkdirAll(ws, 0o755)
	for _, f := range []string{"a.txt", "b.txt", "c.txt", "d.txt", "e.txt"} {
		os.WriteFile(filepath.Join(ws, f), []byte(f+"\n"), 0o644)
	}
	pol, script := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "script.yaml")
	os.WriteFile(pol, []byte(ptyPolicy), 0o644)
	os.WriteFile(script, []byte(ptyScript), 0o644)
	r := trio(t, dir, cleanEnv(envScript+"="+script), "run", "--goal", "Remove the text files.", "--workspace", ws,
		"--runs-dir", runs, "--policy", pol, "--sandbox", "local")
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	audits, _ := filepath.Glob(filepath.Join(runs, "*", "audit.jsonl"))
	if len(audits) != 1 {
		t.Fatalf("audit logs: %v", audits)
	}
	if b, _ := os.ReadFile(audits[0]); strings.Contains(string(b), `"answer"`) || strings.Count(string(b), "no one is available to confirm") != 5 {
		t.Errorf("audit log:\n%s", b)
	}
	for _, f := range []string{"a.txt", "b.txt", "c.txt", "d.txt", "e.txt"} {
		if _, err := os.Stat(filepath.Join(ws, f)); err != nil {
			t.Errorf("%s was removed without a person: %v", f, err)
		}
	}
	if !strings.Contains(r.stderr, "5 denied") {
		t.Errorf("report does not count 5 denials:\n%s", r.stderr)
	}
	// It says up front why nobody is asked, and each denial reads as text.
	for _, want := range []string{"stdin is not a terminal", `run_command rm a.txt · deny · `, `failed: denied by policy: "rm a.txt" matches commands.ask "rm *"`} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
}

// With neither containerd nor user namespaces (bwrap --disable-userns
// switches them off for trio), an interactive run on a terminal asks
// before it runs commands without isolation: y runs them locally, with the
// warning; n refuses the run (exit 3).
func TestAutoAsksBeforeNoIsolation(t *testing.T) {
	t.Parallel()
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and bwrap is missing: %v", err)
		}
		t.Skipf("bwrap missing: %v", err)
	}
	for _, tt := range []struct {
		answer string
		code   int
		want   string
	}{
		{"y", exitOK, "LOCAL sandbox, which does NOT isolate"},
		{"n", exitConfig, "running commands without isolation was not confirmed"},
	} {
		t.Run(tt.answer, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			pol, script := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "script.yaml")
			os.WriteFile(pol, []byte("version: 1\nmode: interactive\ncommands:\n  allow: [\"python3 *\"]\n"), 0o644)
			os.WriteFile(script, []byte(pyScript), 0o644)
			// A machine without Landlock either: auto leaves it out.
			os.WriteFile(filepath.Join(dir, "trio.yaml"), []byte(autoWithoutLandlock), 0o644)
			cmd := exec.Command(bwrap, "--unshare-user", "--disable-userns", "--dev-bind", "/", "/", "--",
				bin, "run", "--goal", "x", "--policy", pol, "--runs-dir", filepath.Join(dir, "runs"))
			cmd.Dir = dir
			cmd.Env = cleanEnv(envScript+"="+script, "TRIO_CONTAINERD_ADDRESS="+filepath.Join(dir, "no.sock"))
			var stderr syncBuffer
			cmd.Stdout, cmd.Stderr = io.Discard, &stderr
			ptmx, err := pty.Start(cmd)
			if err != nil {
				t.Skipf("no pseudo-terminal: %v", err)
			}
			defer ptmx.Close()
			screen := &syncBuffer{}
			go io.Copy(screen, ptmx)
			waitFor(t, screen, "Allow?", 1, 30*time.Second)
			ptmx.Write([]byte(tt.answer + "\n"))
			waitErr := make(chan error, 1)
			go func() { waitErr <- cmd.Wait() }()
			select {
			case <-waitErr:
			case <-time.After(60 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("trio run did not finish; terminal:\n%s\nstderr:\n%s", screen.String(), stderr.String())
			}
			if !strings.Contains(screen.String(), "WITHOUT isolation") {
				t.Errorf("the question does not say what it asks:\n%s", screen.String())
			}
			if code := cmd.ProcessState.ExitCode(); code != tt.code || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("answer %s: exit %d, want %d and %q:\n%s", tt.answer, code, tt.code, tt.want, stderr.String())
			}
		})
	}
}
