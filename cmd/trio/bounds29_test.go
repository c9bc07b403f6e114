package main

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/llm/llmtest"
)

// endpointConfig writes a trio.yaml in dir whose endpoint is srv, with
// extra lines added under endpoint:, and returns the environment naming
// its key.
func endpointConfig(t *testing.T, dir string, srv *llmtest.Server, extra string) []string {
	t.Helper()
	y := fmt.Sprintf("endpoint:\n  base_url: %s\n  api_key_env: TRIO_TEST_KEY\n%smodels:\n  default: m\n", srv.URL(), extra)
	if err := os.WriteFile(filepath.Join(dir, "trio.yaml"), []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	return cleanEnv("TRIO_TEST_KEY=test-key-0123456789")
}

// dirSize is the bytes of the regular files under dir.
func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// A 10 MB reply is cut at endpoint.max_reply_bytes: each attempt is a
// model error the retry policy retries, the run stops with model_error
// (exit 1, resumable), and the run folder holds none of it.
func TestHugeReplyIsBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := llmtest.NewServer(t)
	huge := llmtest.Text(strings.Repeat("x", 10<<20))
	srv.Enqueue(huge, huge)
	env := endpointConfig(t, dir, srv, "  max_reply_bytes: 65536\n  max_retries: 1\n")
	r := trio(t, dir, env, "run", "--config", "trio.yaml", "--goal", "x", "--sandbox", "local", "--runs-dir", "runs", "--workspace", "ws")
	if r.code != exitFailed || !strings.Contains(r.stderr, "model_error") || !strings.Contains(r.stderr, "reply larger than the cap of 64 KiB") {
		t.Fatalf("exit %d, want 1 with model_error naming the cap:\n%s", r.code, r.stderr)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d requests, want 2 (one retry)", n)
	}
	if n := dirSize(t, filepath.Join(dir, "runs")); n > 256<<10 {
		t.Errorf("the run folder holds %d bytes after a 10 MB reply", n)
	}
}

// Deleting run.lock and the workspace's lock file while a session runs
// does not let a second session in: the run folder and the workspace are
// locked themselves. A second resume of the run and a second run on the
// workspace both exit 3, and the first finishes with every write done
// once.
func TestLocksHoldWithoutLockFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script, runs := filepath.Join(dir, "script.yaml"), filepath.Join(dir, "runs")
	os.WriteFile(script, []byte(filesScript), 0o644)
	env := cleanEnv(envScript + "=" + script)
	args := []string{"run", "--goal", "Write the files.", "--sandbox", "local", "--runs-dir", runs, "--workspace", "ws"}
	a := startTrio(t, dir, env, args...)
	a.until(t, agent.EventToolCall)
	a.cmd.Process.Signal(syscall.SIGSTOP) // A holds the run while the others try
	ids, _ := os.ReadDir(runs)
	if len(ids) != 1 {
		a.cmd.Process.Signal(syscall.SIGCONT)
		t.Fatalf("runs: %v", ids)
	}
	runDir := filepath.Join(runs, ids[0].Name())
	for _, p := range []string{filepath.Join(runDir, agent.LockFile), filepath.Join(dir, ".ws.trio-lock")} {
		if err := os.Remove(p); err != nil {
			t.Errorf("remove %s: %v", p, err)
		}
	}
	b := trio(t, dir, env, "resume", runDir)
	c := trio(t, dir, env, append(args, "--quiet")...)
	a.cmd.Process.Signal(syscall.SIGCONT)
	if want := "run " + ids[0].Name() + " is in use"; b.code != exitConfig || !strings.Contains(b.stderr, want) {
		t.Errorf("second resume: exit %d, want 3 with %q:\n%s", b.code, want, b.stderr)
	}
	if want := "workspace " + filepath.Join(dir, "ws") + " is in use"; c.code != exitConfig || !strings.Contains(c.stderr, want) {
		t.Errorf("second run: exit %d, want 3 with %q:\n%s", c.code, want, c.stderr)
	}
	if code := a.wait(); code != exitOK {
		t.Fatalf("first run: exit %d\n%s", code, a.stderr)
	}
	w := writes(t, runDir)
	for path, n := range w {
		if n != 1 {
			t.Errorf("the audit shows %s written %d times", path, n)
		}
	}
	if len(w) != 3 {
		t.Errorf("%d files written, want 3", len(w))
	}
	if ids, _ := os.ReadDir(runs); len(ids) != 1 {
		t.Errorf("runs %v: the refused run left a folder", ids)
	}
}

// A checkpoint cut in half, or a history whose last counted message is
// torn, does not end a run: resume falls back to the previous checkpoint
// (state.json.prev), says so in the trace, cuts the records to match, and
// the run completes with every write done once.
func TestDamagedCheckpointFallsBack(t *testing.T) {
	t.Parallel()
	for name, damage := range map[string]func(t *testing.T, runDir string){
		"state.json cut in half": func(t *testing.T, runDir string) {
			p := filepath.Join(runDir, agent.StateFile)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(p, b[:len(b)/2], 0o644)
		},
		"last history record torn": func(t *testing.T, runDir string) {
			p := filepath.Join(runDir, agent.HistoryFile)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
			last := lines[len(lines)-1]
			os.WriteFile(p, []byte(strings.Join(lines[:len(lines)-1], "")+last[:len(last)/2]), 0o644)
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			script, runs := filepath.Join(dir, "script.yaml"), filepath.Join(dir, "runs")
			os.WriteFile(script, []byte(filesScript), 0o644)
			env := cleanEnv(envScript + "=" + script)
			first := startTrio(t, dir, env, "run", "--goal", "Write the files.", "--sandbox", "local", "--runs-dir", runs, "--workspace", "ws")
			first.until(t, agent.EventToolCall)
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
			if _, err := os.Stat(filepath.Join(runDir, "state.json.prev")); err != nil {
				t.Fatalf("no previous checkpoint kept: %v", err)
			}
			damage(t, runDir)
			r := trio(t, dir, env, "resume", runDir)
			if r.code != exitOK {
				t.Fatalf("resume: exit %d, want 0\n%s", r.code, r.stderr)
			}
			trace, _ := os.ReadFile(filepath.Join(runDir, agent.TraceFile))
			var note string
			for _, l := range strings.Split(string(trace), "\n") {
				if strings.Contains(l, `"kind":"healed"`) && strings.Contains(l, "state.json.prev") {
					note = l
				}
			}
			if note == "" {
				t.Errorf("no healed note naming state.json.prev in the trace; stderr:\n%s", r.stderr)
			}
			w := writes(t, runDir)
			for path, n := range w {
				if n != 1 {
					t.Errorf("the audit shows %s written %d times", path, n)
				}
			}
			if len(w) != 3 {
				t.Errorf("%d files written, want 3", len(w))
			}
		})
	}
}

// A workspace the user cannot write is found before the first model call:
// exit 3 naming it, no request reaches the endpoint, no run folder is
// left. (Run as nobody: root writes anywhere.)
func TestUnwritableWorkspaceBeforeModel(t *testing.T) {
	t.Parallel()
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and no setpriv: %v", err)
		}
		t.Skipf("no setpriv: %v", err)
	}
	dir, err := os.MkdirTemp("/tmp", "trio-ro-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	srv := llmtest.NewServer(t)
	env := endpointConfig(t, dir, srv, "")
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "trio"), b, 0o755)
	ws := filepath.Join(dir, "ws")
	os.Mkdir(ws, 0o755) // root's: nobody cannot write it
	os.WriteFile(filepath.Join(ws, "existing.txt"), []byte("mine\n"), 0o644)
	for _, p := range []string{dir, filepath.Join(dir, "trio"), filepath.Join(dir, "trio.yaml")} {
		if err := os.Chown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(dir, 0o755)
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--", filepath.Join(dir, "trio"),
		"run", "--config", "trio.yaml", "--goal", "x", "--sandbox", "local", "--runs-dir", "runs", "--workspace", "ws")
	cmd.Dir, cmd.Env = dir, append(env, "HOME="+dir)
	out, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != exitConfig || !strings.Contains(string(out), "the workspace "+ws+" is not writable") {
		t.Errorf("exit %d, want 3 naming the workspace:\n%s", code, out)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d model requests before the workspace was found unwritable, want 0", n)
	}
	if ids, _ := os.ReadDir(filepath.Join(dir, "runs")); len(ids) != 0 {
		t.Errorf("run folders left: %v", ids)
	}
}

// A trio.yaml with several mistakes names all of them with their lines
// and exits 3 before any model request.
func TestConfigMistakesAllAtOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := llmtest.NewServer(t)
	env := endpointConfig(t, dir, srv, "  kindd: openai\n  timeout: 1x\nbudgets:\n  max_steps: abc\n  max_stepz: 3\n")
	r := trio(t, dir, env, "run", "--config", "trio.yaml", "--goal", "x", "--sandbox", "local", "--runs-dir", "runs")
	for _, want := range []string{`trio.yaml:4: unknown field "kindd"`, "trio.yaml:5: endpoint.timeout", "trio.yaml:7: cannot unmarshal", `trio.yaml:8: unknown field "max_stepz"`} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	if r.code != exitConfig {
		t.Errorf("exit %d, want 3", r.code)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d model requests, want 0", n)
	}
	if _, err := os.Stat(filepath.Join(dir, "runs")); err == nil {
		t.Error("a runs folder was made")
	}
	if t.Failed() {
		t.Logf("stderr:\n%s", r.stderr)
	}
}
