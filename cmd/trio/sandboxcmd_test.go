package main

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/sandbox/containerd"
)

const hangPolicy = `version: 1
mode: unattended
commands:
  allow: ["python3 **.py *", "go test *"]
  shell: false
`

// The worker starts a command that writes a beacon until it is killed.
const hangScript = `roles:
  planner:
    - output: {"steps": [{"title": "Hang", "description": "Run forever.", "files": ["go.mod"], "expected": "x", "acceptance": "x"}], "risks": [], "test_command": "go test ./...", "cli": [], "tests_dir": "acceptance"}
  test_designer:
    - output:
        notes: one test
        files:
          - path: acceptance/ok_test.go
            content: "package acceptance\n\nimport \"testing\"\n\nfunc TestOK(t *testing.T) {}\n"
  worker:
    - tool_calls:
        - {name: write_file, arguments: {path: hang.py, content: "import time\nwhile True:\n    open('beacon', 'a').write('x')\n    time.sleep(0.05)\n"}}
        - {name: run_command, arguments: {command: "python3 hang.py"}}
`

// trio killed with SIGKILL in the middle of a command in containerd
// leaves nothing writing to the workspace, and trio sandbox prune removes
// its container and gives the workspace back to its owner.
func TestSandboxPruneAfterKill(t *testing.T) {
	t.Parallel()
	if err := containerd.Available(context.Background(), ""); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but containerd is unreachable: %v", err)
		}
		t.Skipf("containerd unreachable: %v", err)
	}
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o755)
	script, pol := filepath.Join(dir, "script.yaml"), filepath.Join(dir, "policy.yaml")
	os.WriteFile(script, []byte(hangScript), 0o644)
	os.WriteFile(pol, []byte(hangPolicy), 0o644)
	cmd := exec.Command(bin, "run", "--goal", "x", "--sandbox", "containerd", "--workspace", ws, "--policy", pol, "--runs-dir", "runs", "--quiet")
	cmd.Dir = dir
	cmd.Env = cleanEnv(envScript + "=" + script)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	beacon := filepath.Join(ws, "beacon")
	size := func() int64 {
		st, err := os.Stat(beacon)
		if err != nil {
			return 0
		}
		return st.Size()
	}
	for i := 0; size() < 10; i++ {
		if i > 1200 {
			cmd.Process.Kill()
			t.Fatal("the worker's command never wrote its beacon")
		}
		time.Sleep(50 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	last := int64(-1)
	for i := 0; size() != last; i++ {
		if i > 50 {
			t.Fatalf("the killed run's command still writes (%d bytes)", size())
		}
		last = size()
		time.Sleep(200 * time.Millisecond)
	}
	r := trio(t, dir, nil, "sandbox", "prune", "--json")
	if r.code != exitOK {
		t.Fatalf("prune: exit %d:\n%s", r.code, r.stderr)
	}
	var removed struct{ Removed []sandbox.Leftover }
	if err := json.Unmarshal([]byte(r.stdout), &removed); err != nil {
		t.Fatalf("prune --json: %v:\n%s", err, r.stdout)
	}
	r = trio(t, dir, nil, "sandbox", "prune")
	if r.code != exitOK || !strings.Contains(r.stdout, "removed") && !strings.Contains(r.stdout, "nothing to prune") {
		t.Errorf("prune: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if os.Geteuid() != 0 {
		return
	}
	filepath.WalkDir(ws, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		st, _ := os.Lstat(p)
		if uid := st.Sys().(*syscall.Stat_t).Uid; uid != 0 {
			t.Errorf("after prune: %s belongs to uid %d, not to the workspace owner", p, uid)
		}
		return nil
	})
}

// Without containerd, trio sandbox prune still prunes: it removes the
// userns and landlock state folders of this user's dead processes, keeps
// a live one's, says which kinds it could not look at, and exits 0.
func TestSandboxPruneWithoutContainerd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tmp := filepath.Join(dir, "tmp")
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	deadLabel := host + "/" + strconv.Itoa(dead.Process.Pid) + "/1"
	liveLabel := host + "/" + strconv.Itoa(os.Getpid()) + "/"
	folders := map[string]string{
		"trio-landlock-dead": deadLabel, "trio-userns-dead": deadLabel,
		"trio-landlock-live": liveLabel, "trio-userns-live": liveLabel,
	}
	for name, label := range folders {
		p := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Join(p, "home"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "owner"), []byte(label+"\n"), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	env := cleanEnv("TMPDIR="+tmp, "TRIO_CONTAINERD_ADDRESS="+filepath.Join(dir, "no.sock"), "TRIO_WARM_CACHE="+filepath.Join(dir, "warm"))
	r := trio(t, dir, env, "sandbox", "prune", "--json")
	if r.code != exitOK {
		t.Fatalf("prune --json without containerd: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	var out struct {
		Looked  []string `json:"looked_at"`
		Removed []sandbox.Leftover
		Skipped []string
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("prune --json: %v:\n%s", err, r.stdout)
	}
	got := map[string]string{}
	for _, l := range out.Removed {
		got[filepath.Base(l.State)] = l.Kind
	}
	if len(got) != 2 || got["trio-landlock-dead"] != "landlock" || got["trio-userns-dead"] != "userns" {
		t.Errorf("removed %+v; want the dead landlock and userns state folders, by kind", out.Removed)
	}
	if !slices.Equal(out.Looked, []string{"landlock", "userns"}) {
		t.Errorf("looked at %q; want landlock and userns, the kinds that leave state and could be swept", out.Looked)
	}
	if len(out.Skipped) != 1 || !strings.Contains(out.Skipped[0], "containerd") {
		t.Errorf("skipped %q; want containerd named as not looked at", out.Skipped)
	}
	for name := range folders {
		_, err := os.Stat(filepath.Join(tmp, name))
		if gone := errors.Is(err, fs.ErrNotExist); gone != strings.HasSuffix(name, "dead") {
			t.Errorf("%s: gone=%v (%v)", name, gone, err)
		}
	}
	r = trio(t, dir, env, "sandbox", "prune")
	if r.code != exitOK || !strings.Contains(r.stdout, "looked at: landlock, userns\n") || !strings.Contains(r.stdout, "nothing to prune") || !strings.Contains(r.stdout, "not looked at: prune containerd sandbox: containerd unavailable") {
		t.Errorf("prune again: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
}
