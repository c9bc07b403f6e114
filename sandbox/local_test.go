package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

func newLocal(t *testing.T, limits Limits) (*Local, string) {
	t.Helper()
	dir := t.TempDir()
	l, err := NewLocal(dir, limits)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, l.Info().WorkspaceDir
}

func TestLocalExec(t *testing.T) {
	t.Parallel()
	l, ws := newLocal(t, Limits{Timeout: time.Minute})
	if err := os.MkdirAll(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		cmd        Command
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{"echo", Command{Argv: []string{"echo", "hi"}}, 0, "hi\n", ""},
		{"exit code", Command{Argv: []string{"sh", "-c", "echo oops >&2; exit 3"}}, 3, "", "oops\n"},
		{"dir", Command{Argv: []string{"pwd"}, Dir: "sub"}, 0, filepath.Join(ws, "sub") + "\n", ""},
		{"env added", Command{Argv: []string{"sh", "-c", "echo $FOO"}, Env: []string{"FOO=bar"}}, 0, "bar\n", ""},
		{"env overrides", Command{Argv: []string{"sh", "-c", "echo $TERM; env | grep -c ^TERM="}, Env: []string{"TERM=xterm"}}, 0, "xterm\n1\n", ""},
		{"toolchain pinned", Command{Argv: []string{"sh", "-c", "echo $GOTOOLCHAIN"}}, 0, "local\n", ""},
		{"no python bytecode", Command{Argv: []string{"sh", "-c", "echo $PYTHONDONTWRITEBYTECODE"}}, 0, "1\n", ""},
		{"not found", Command{Argv: []string{"no-such-program-trio"}}, 127, "", "trio: cannot run no-such-program-trio"},
		{"missing dir", Command{Argv: []string{"true"}, Dir: "nope"}, 127, "", "trio: cannot run true: working directory nope"},
		{"dir is a file", Command{Argv: []string{"true"}, Dir: "file"}, 126, "", "trio: cannot run true: working directory file"},
		{"killed by signal", Command{Argv: []string{"sh", "-c", "kill -9 $$"}}, 137, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := l.Exec(context.Background(), tt.cmd)
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != tt.wantCode {
				t.Errorf("exit code %d, want %d (stderr %q)", res.ExitCode, tt.wantCode, res.Stderr)
			}
			if res.Stdout != tt.wantStdout {
				t.Errorf("stdout %q, want %q", res.Stdout, tt.wantStdout)
			}
			if !strings.HasPrefix(res.Stderr, tt.wantStderr) {
				t.Errorf("stderr %q, want prefix %q", res.Stderr, tt.wantStderr)
			}
		})
	}
}

// A Python import leaves no __pycache__ stray in the workspace.
func TestLocalPythonLeavesNoBytecode(t *testing.T) {
	t.Parallel()
	if _, err := lookPath("python3", DefaultPath); err != nil {
		t.Skip("python3 not installed")
	}
	l, ws := newLocal(t, Limits{Timeout: time.Minute})
	if err := os.WriteFile(filepath.Join(ws, "mod.py"), []byte("X = 42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := l.Exec(context.Background(), Command{Argv: []string{"python3", "-c", "import mod; print(mod.X)"}})
	if err != nil || res.ExitCode != 0 || res.Stdout != "42\n" {
		t.Fatalf("python3: %v %+v", err, res)
	}
	if _, err := os.Stat(filepath.Join(ws, "__pycache__")); !os.IsNotExist(err) {
		t.Errorf("__pycache__ left in the workspace: %v", err)
	}
}

func TestLocalTimeoutKillsGroup(t *testing.T) {
	t.Parallel()
	l, ws := newLocal(t, Limits{Timeout: 300 * time.Millisecond})
	start := time.Now()
	// The grandchild writes its pid so the test can check it is gone.
	res, err := l.Exec(context.Background(), Command{Argv: []string{"sh", "-c", "sleep 600 & echo $! > bg.pid; sleep 600"}})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("Exec took %v after a 300ms timeout", el)
	}
	if !res.TimedOut || res.ExitCode != 137 {
		t.Errorf("TimedOut=%v ExitCode=%d, want true 137", res.TimedOut, res.ExitCode)
	}
	assertGone(t, filepath.Join(ws, "bg.pid"))
}

func TestLocalBackgroundChildDoesNotOutliveCommand(t *testing.T) {
	t.Parallel()
	l, ws := newLocal(t, Limits{Timeout: time.Minute})
	start := time.Now()
	res, err := l.Exec(context.Background(), Command{Argv: []string{"sh", "-c", "sleep 600 & echo $! > bg.pid; echo done"}})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("Exec took %v; a background child held it", el)
	}
	if res.Stdout != "done\n" || res.TimedOut {
		t.Errorf("got %+v", res)
	}
	assertGone(t, filepath.Join(ws, "bg.pid"))
}

func TestLocalEscapedChildHoldingPipes(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/usr/bin/setsid"); err != nil {
		t.Skip("setsid not installed")
	}
	l, ws := newLocal(t, Limits{Timeout: time.Minute})
	start := time.Now()
	// setsid leaves the process group; the child keeps stdout open.
	res, err := l.Exec(context.Background(), Command{Argv: []string{"sh", "-c", "setsid sh -c 'echo $$ > esc.pid; exec sleep 30' & sleep 0.2; echo out"}})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("Exec took %v; an escaped child held the pipes", el)
	}
	if !strings.HasPrefix(res.Stdout, "out") {
		t.Errorf("stdout %q", res.Stdout)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "esc.pid")); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
			p, _ := os.FindProcess(pid)
			p.Kill()
		}
	}
}

func TestLocalContextCancel(t *testing.T) {
	t.Parallel()
	l, _ := newLocal(t, Limits{})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	res, err := l.Exec(ctx, Command{Argv: []string{"sleep", "600"}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want deadline exceeded", err)
	}
	if res.TimedOut {
		t.Error("a cancelled context is not a command timeout")
	}
}

func TestLocalOutputCappedWithBoundedMemory(t *testing.T) {
	l, _ := newLocal(t, Limits{Timeout: time.Minute, Output: 64 << 10})
	const size = 50 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res, err := l.Exec(context.Background(), Command{Argv: []string{"head", "-c", "52428800", "/dev/zero"}})
	if err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if res.ExitCode != 0 || !res.StdoutTruncated || res.StderrTruncated {
		t.Fatalf("exit=%d stdoutTruncated=%v stderrTruncated=%v", res.ExitCode, res.StdoutTruncated, res.StderrTruncated)
	}
	if len(res.Stdout) > 64<<10+100 {
		t.Errorf("kept %d bytes of stdout", len(res.Stdout))
	}
	if !strings.Contains(res.Stdout, "bytes truncated") {
		t.Error("no truncation marker")
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size/10 {
		t.Errorf("allocated %d bytes for %d bytes of output", alloc, size)
	}
}

func TestLocalEnvScrubbed(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test-must-not-leak")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "must-not-leak")
	l, _ := newLocal(t, Limits{})
	res, err := l.Exec(context.Background(), Command{Argv: []string{"env"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Stdout, "must-not-leak") || strings.Contains(res.Stdout, "OPENAI_API_KEY") {
		t.Errorf("host secret in environment:\n%s", res.Stdout)
	}
	for _, want := range []string{"PATH=", "HOME=" + l.home, "GOTOOLCHAIN=local"} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("environment lacks %s:\n%s", want, res.Stdout)
		}
	}
}

func TestLocalDirEscapeRejected(t *testing.T) {
	t.Parallel()
	l, ws := newLocal(t, Limits{})
	if err := os.Symlink("/etc", filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"..", "../x", "/etc", "a/../../b", "link", "link/ssl"} {
		t.Run(dir, func(t *testing.T) {
			_, err := l.Exec(context.Background(), Command{Argv: []string{"true"}, Dir: dir})
			if !errors.Is(err, ErrOutsideWorkspace) {
				t.Errorf("Dir %q: err = %v, want ErrOutsideWorkspace", dir, err)
			}
		})
	}
}

func TestLocalClosed(t *testing.T) {
	t.Parallel()
	l, _ := newLocal(t, Limits{})
	home := l.home
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(home); !os.IsNotExist(err) {
		t.Errorf("HOME %s not removed: %v", home, err)
	}
	if _, err := l.Exec(context.Background(), Command{Argv: []string{"true"}}); !errors.Is(err, ErrClosed) {
		t.Errorf("err = %v, want ErrClosed", err)
	}
	if _, err := l.Exec(context.Background(), Command{}); err == nil {
		t.Error("empty command accepted")
	}
}

// assertGone reads a pid from file and checks the process no longer runs.
func assertGone(t *testing.T, file string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("pid file: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil || strings.Contains(string(st), ") Z ") {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("process %d still running", pid)
}
