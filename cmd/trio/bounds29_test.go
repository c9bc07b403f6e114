package main

import (
	"fmt"
	"io/fs"
	"os"
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
