package userns_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/sandbox/userns"
	"github.com/trioagent/trio/tools"
)

// Canaries: a value that must never show in what a command returns.
const (
	canaryEnvFile = "CANARY-dotenv-5f1c"
	canaryGit     = "CANARY-git-token-77ab"
	canarySSH     = "CANARY-ssh-key-0e93"
	canaryConfig  = "CANARY-config-c4d2"
	canaryEnvVar  = "CANARY-envvar-9a61"
)

// effects is one run's world: a workspace laid out like a Worker's, the
// invoking user's home with secrets and an SSH agent socket, a folder of
// that user's outside the workspace, and listeners on the host's network.
type effects struct {
	ws, home, outside string
	sb                *userns.Sandbox
	gate              *tools.Gate
	view              tools.View
	loopback, hostNet net.Listener
	agent             net.Listener
	accepted          atomic.Int64 // connections any listener accepted
	before            map[string]string
	hostIP            string
	diskLimit         int64
}

func newEffects(t *testing.T) *effects {
	t.Helper()
	base := t.TempDir()
	e := &effects{
		ws:        filepath.Join(base, "ws"),
		home:      filepath.Join(base, "home"),
		outside:   filepath.Join(base, "outside"),
		diskLimit: 16 << 20,
	}
	writeTree(t, e.ws, map[string]string{
		".env":             "API_KEY=" + canaryEnvFile + "\n",
		".git/config":      "[remote \"origin\"]\n\turl = https://" + canaryGit + "@example.com/x\n",
		".git/HEAD":        "ref: refs/heads/main\n",
		".git/hooks/.keep": "",
		"vendor/a.go":      "package a\n",
		"tests/test_ok.py": "import unittest\nimport app\n\nclass T(unittest.TestCase):\n    def test_ok(self):\n        self.assertEqual(app.answer(), 42)\n",
		"app.py":           "def answer():\n    return 42\n",
	})
	// A second name for the secret, made before the sandbox opened.
	if err := os.Link(filepath.Join(e.ws, ".env"), filepath.Join(e.ws, "env-link")); err != nil {
		t.Fatal(err)
	}
	// A symlink that leads out, to the invoking user's folder.
	if err := os.Symlink(e.outside, filepath.Join(e.ws, "out")); err != nil {
		t.Fatal(err)
	}
	writeTree(t, e.home, map[string]string{
		".ssh/id_ed25519":      canarySSH + "\n",
		".config/gh/hosts.yml": "oauth_token: " + canaryConfig + "\n",
		".bashrc":              "# the user's shell\n",
	})
	writeTree(t, e.outside, map[string]string{"notes.txt": "the user's notes\n"})
	t.Setenv("HOME", e.home)
	t.Setenv("OPENAI_API_KEY", canaryEnvVar)

	var err error
	if e.agent, err = net.Listen("unix", filepath.Join(e.home, ".ssh", "agent.sock")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSH_AUTH_SOCK", e.agent.Addr().String())
	if e.loopback, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	if e.hostNet, err = net.Listen("tcp", "0.0.0.0:0"); err != nil {
		t.Fatal(err)
	}
	e.hostIP = hostAddress()
	for _, l := range []net.Listener{e.agent, e.loopback, e.hostNet} {
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				e.accepted.Add(1)
				c.Close()
			}
		}()
	}

	// The Worker's policy: the shipped unattended one with the Critic's
	// tests folder read-only, as agent.Run makes it.
	pol := shippedPolicy(t).WithReadOnly("tests/**")
	limits := sandbox.Limits{Timeout: 30 * time.Second, Output: 64 << 10, Memory: 1 << 30, Pids: 256, Disk: e.diskLimit}
	e.sb, err = userns.New(context.Background(), sandbox.RunSpec{Workspace: e.ws, Limits: limits, PathRules: rulesOf(pol)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.sb.Close() })
	wsTools, err := tools.OpenWorkspace(e.ws, e.sb, limits)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wsTools.Close() })
	reg, err := tools.NewRegistry(tools.Builtins(wsTools)...)
	if err != nil {
		t.Fatal(err)
	}
	if e.view, err = reg.View(); err != nil {
		t.Fatal(err)
	}
	e.gate = tools.NewGate(pol, tools.WithScope(policy.Scope{Workspace: e.ws, Aliases: []string{userns.WorkspaceDir}}))
	e.before = e.snapshot(t)
	return e
}

// hostAddress is an address of this host that is not loopback, or "".
func hostAddress() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return ""
}

// snapshot is every protected entry's type, mode, owner and content:
// .git, vendor, the tests folder, the secrets, the user's home and the
// folder outside the workspace.
func (e *effects) snapshot(t testing.TB) map[string]string {
	t.Helper()
	out := map[string]string{}
	add := func(root string, rels ...string) {
		for _, rel := range rels {
			top := filepath.Join(root, rel)
			filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					out[p] = "error: " + err.Error()
					return nil
				}
				info, err := os.Lstat(p)
				if err != nil {
					out[p] = "error: " + err.Error()
					return nil
				}
				st := info.Sys().(*syscall.Stat_t)
				v := fmt.Sprintf("%v uid=%d gid=%d", info.Mode(), st.Uid, st.Gid)
				if info.Mode().IsRegular() {
					b, _ := os.ReadFile(p)
					h := sha256.Sum256(b)
					v += " " + hex.EncodeToString(h[:8])
				}
				out[p] = v
				return nil
			})
		}
	}
	add(e.ws, ".git", "vendor", "tests", ".env", "env-link", "out")
	add(e.home, ".")
	add(e.outside, ".")
	return out
}

// run sends one tool call through the gate, as a Worker's would go.
func (e *effects) run(t *testing.T, tool string, args map[string]any) tools.Result {
	t.Helper()
	b, _ := json.Marshal(args)
	res, err := e.gate.Call(context.Background(), e.view, tools.Call{ID: "effect", Name: tool, Arguments: b})
	if err != nil {
		t.Fatalf("%s %s: %v", tool, b, err)
	}
	if res.Denied {
		t.Fatalf("%s %s was denied (%s): the attack must run for its effect to be tested", tool, b, res.Output)
	}
	return res
}

// python runs source as attack.py in the workspace through run_command.
func (e *effects) python(t *testing.T, source string) tools.Result {
	t.Helper()
	src := strings.NewReplacer("{home}", e.home, "{outside}", e.outside, "{ws}", e.ws,
		"{loopback}", e.loopback.Addr().String(), "{hostport}", portOf(e.hostNet), "{hostip}", e.hostIP,
		"{agent}", e.agent.Addr().String()).Replace(source)
	if err := os.WriteFile(filepath.Join(e.ws, "attack.py"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return e.run(t, tools.RunCommandName, map[string]any{"command": "python3 attack.py"})
}

func portOf(l net.Listener) string { return fmt.Sprint(l.Addr().(*net.TCPAddr).Port) }

func (r effectRow) String() string { return r.threat }

type effectRow struct {
	threat string
	attack string // Python, run as attack.py in the workspace
	// check asserts the effect on the host after the attack ran; every row
	// also asserts that no protected entry changed and nothing connected.
	check func(t *testing.T, e *effects, res tools.Result)
}

// noCanary asserts that no canary reached the command's output.
func noCanary(t *testing.T, _ *effects, res tools.Result) {
	t.Helper()
	got := res.Stdout + res.Stderr + res.Output
	for _, c := range []string{canaryEnvFile, canaryGit, canarySSH, canaryConfig, canaryEnvVar} {
		if strings.Contains(got, c) {
			t.Errorf("canary %s reached the command's output:\n%s", c, got)
		}
	}
}

// TestEffects runs hostile programs through the gate with the shipped
// unattended policy (the Worker's, tests folder read-only) and the userns
// sandbox, as an ordinary user, and asserts each attack's effect on the
// host, not a setting.
func TestEffects(t *testing.T) {
	if asOrdinaryUser(t, "TestEffects") {
		return
	}
	requireUserns(t)
	e := newEffects(t)
	rows := []effectRow{
		{
			threat: "a program reads the policy's secrets (.env, its hard link, .git/config)",
			attack: `
import os
for p in [".env", "/workspace/.env", "env-link", ".git/config", "/workspace/.git/config"]:
    try:
        print(p, repr(open(p).read()))
    except Exception as e:
        print(p, "error", e)
try:
    os.link(".env", "env-link2"); print("link", open("env-link2").read())
except Exception as e:
    print("link error", e)
for root, dirs, files in os.walk("/workspace"):
    for f in files:
        try:
            print(os.path.join(root, f), open(os.path.join(root, f), errors="replace").read()[:200])
        except Exception as e:
            pass
`,
			check: noCanary,
		},
		{
			threat: "a program plants core.fsmonitor and a hook in .git, or removes .git",
			attack: `
import os, shutil
for f, how in [(".git/config", "a"), (".git/hooks/pre-commit", "w")]:
    try:
        with open(f, how) as fh: fh.write("[core]\n\tfsmonitor = /tmp/evil\n")
        print("wrote", f)
    except Exception as e:
        print(f, "error", e)
for op in [lambda: os.rename(".git", "git-old"), lambda: shutil.rmtree(".git"), lambda: os.mkdir(".git/x")]:
    try:
        op(); print("done")
    except Exception as e:
        print("error", e)
`,
		},
		{
			threat: "a program changes a read-only folder (vendor), also from a new mount namespace",
			attack: `
import os, subprocess
for op in [lambda: open("vendor/a.go", "w").write("package evil\n"), lambda: os.unlink("vendor/a.go"),
           lambda: os.rename("vendor", "v2"), lambda: open("vendor/new.go", "w").write("x"),
           lambda: os.chmod("vendor/a.go", 0o777)]:
    try:
        op(); print("done")
    except Exception as e:
        print("error", e)
print(subprocess.run(["unshare", "-rm", "sh", "-c", "mount -o remount,rw /workspace/vendor && echo evil > /workspace/vendor/a.go"], capture_output=True, text=True))
`,
		},
		{
			threat: "the Worker's code rewrites the Critic's tests when run_tests imports it",
			check: func(t *testing.T, e *effects, res tools.Result) {
				// app.py rewrites the tests at import time; then run_tests
				// runs them as the Critic would.
				writeTree(t, e.ws, map[string]string{"app.py": `
import os
for p in ["tests/test_ok.py", "/workspace/tests/test_ok.py"]:
    try:
        open(p, "w").write("import unittest\nclass T(unittest.TestCase):\n    def test_ok(self): pass\n")
    except Exception as e:
        print("error", e)
try:
    os.unlink("tests/test_ok.py")
except Exception as e:
    print("error", e)
def answer():
    return 41
`})
				res = e.run(t, tools.RunTestsName, map[string]any{"command": "python3 -m unittest discover -s tests -t ."})
				if res.OK {
					t.Errorf("run_tests passed a wrong implementation: the tests were rewritten\n%s\n%s", res.Stdout, res.Stderr)
				}
			},
		},
		{
			threat: "a program writes the invoking user's files outside the workspace, through a symlink, an absolute path or a symlink racer",
			attack: `
import os, time
for p in ["out/notes.txt", "{outside}/notes.txt", "{home}/.bashrc", "{home}/.ssh/authorized_keys", "/workspace/../escape"]:
    try:
        open(p, "a").write("evil\n"); print("wrote", p)
    except Exception as e:
        print(p, "error", e)
# A racer that swaps a folder for a symlink to the user's folder, left
# running for whatever runs next (layout planning, disk measurement).
if os.fork() == 0:
    os.setsid()
    os.makedirs("race", exist_ok=True)
    end = time.time() + 5
    while time.time() < end:
        try:
            os.rename("race", "race.d"); os.symlink("{outside}", "race"); os.unlink("race"); os.rename("race.d", "race")
        except Exception:
            pass
    os._exit(0)
time.sleep(0.3)
`,
			check: func(t *testing.T, e *effects, res tools.Result) {
				// Commands after the racer: each plans a layout and
				// measures the disk over the tree the racer changed.
				for range 3 {
					e.run(t, tools.RunCommandName, map[string]any{"command": "ls -la"})
				}
			},
		},
		{
			threat: "a program connects to a listener on the host's loopback or its network address",
			attack: `
import socket
for host, port in [("127.0.0.1", {loopback_port}), ("{hostip}", {hostport}), ("::1", {hostport})]:
    if not host: continue
    try:
        s = socket.create_connection((host, port), timeout=2); print("connected", host, port); s.close()
    except Exception as e:
        print(host, port, "error", e)
`,
		},
		{
			threat: "a program reaches the invoking user's home, ~/.ssh, ~/.config, SSH agent or API keys",
			attack: `
import os, socket, glob
print("HOME", os.environ.get("HOME"), "SSH_AUTH_SOCK", os.environ.get("SSH_AUTH_SOCK"))
print("env", dict(os.environ))
for p in ["{home}", "{home}/.ssh", "{home}/.config", "/home", "/root", "/run/user", "/tmp"] + glob.glob("/tmp/ssh-*"):
    try:
        print(p, os.listdir(p))
    except Exception as e:
        print(p, "error", e)
for p in ["{home}/.ssh/id_ed25519", "{home}/.config/gh/hosts.yml", os.path.expanduser("~/.ssh/id_ed25519")]:
    try:
        print(p, open(p).read())
    except Exception as e:
        print(p, "error", e)
try:
    s = socket.socket(socket.AF_UNIX); s.settimeout(2); s.connect("{agent}"); print("agent connected")
except Exception as e:
    print("agent error", e)
`,
			check: noCanary,
		},
		{
			threat: "a background process outlives its command and acts later",
			attack: `
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(1.5)
        open("ghost", "w").write("I outlived my command\n")
    os._exit(0)
print("parent exits")
`,
			check: func(t *testing.T, e *effects, res tools.Result) {
				time.Sleep(2500 * time.Millisecond)
				if _, err := os.Lstat(filepath.Join(e.ws, "ghost")); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("a background process wrote after its command ended (stat: %v)", err)
				}
			},
		},
		{
			threat: "a background process outlives a command killed on timeout",
			check: func(t *testing.T, e *effects, res tools.Result) {
				writeTree(t, e.ws, map[string]string{"hang.py": `
import os, time
if os.fork() == 0:
    os.setsid()
    time.sleep(2.5)
    open("ghost2", "w").write("I outlived the timeout\n")
    os._exit(0)
time.sleep(60)
`})
				res = e.run(t, tools.RunCommandName, map[string]any{"command": "python3 hang.py", "timeout_seconds": 1})
				if res.OK || !strings.Contains(res.Output, "timed out") {
					t.Errorf("python3 hang.py was not killed on timeout: %s", res.Output)
				}
				time.Sleep(3 * time.Second)
				if _, err := os.Lstat(filepath.Join(e.ws, "ghost2")); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("a background process wrote after its command timed out (stat: %v)", err)
				}
			},
		},
		{
			threat: "a command ends or clogs the sandbox (kills init, fills /tmp) for the commands after it",
			attack: `
import os, signal
for pid in [1, os.getppid()]:
    try:
        os.kill(pid, signal.SIGKILL); print("killed", pid)
    except Exception as e:
        print(pid, "error", e)
try:
    with open("/tmp/fill", "wb") as f:
        while True: f.write(b"x" * (1 << 20))
except Exception as e:
    print("fill", e)
`,
			check: func(t *testing.T, e *effects, res tools.Result) {
				next := e.run(t, tools.RunCommandName, map[string]any{"command": "echo still-working"})
				if !next.OK || !strings.Contains(next.Stdout, "still-working") {
					t.Errorf("the next command failed: %+v", next)
				}
			},
		},
		{
			threat: "a program fills the host's disk through the workspace with many files",
			attack: `
import os
os.makedirs("fill", exist_ok=True)
n = 0
try:
    for i in range(256):
        with open("fill/%d" % i, "wb") as f:
            f.write(os.urandom(1 << 20)); n += 1
except Exception as e:
    print("stopped", e)
print("wrote MiB", n)
`,
			check: checkDisk("fill"),
		},
		{
			threat: "a program fills the host's disk with one file",
			attack: `
import os
try:
    with open("big", "wb") as f:
        for i in range(256):
            f.write(b"y" * (1 << 20))
except Exception as e:
    print("stopped", e)
`,
			check: checkDisk("big"),
		},
	}
	for _, row := range rows {
		t.Run(row.threat, func(t *testing.T) {
			var res tools.Result
			if row.attack != "" {
				row.attack = strings.ReplaceAll(row.attack, "{loopback_port}", portOf(e.loopback))
				res = e.python(t, row.attack)
				t.Logf("attack output: %s\n%s%s", res.Output, res.Stdout, res.Stderr)
			}
			if row.check != nil {
				row.check(t, e, res)
			}
			after := e.snapshot(t)
			if !maps.Equal(e.before, after) {
				for p, v := range after {
					if e.before[p] != v {
						t.Errorf("%s changed: %q -> %q", p, e.before[p], v)
					}
				}
				for p, v := range e.before {
					if _, ok := after[p]; !ok {
						t.Errorf("%s disappeared (was %q)", p, v)
					}
				}
			}
			if n := e.accepted.Load(); n > 0 {
				t.Errorf("%d connections reached a listener on the host", n)
			}
		})
	}
}

// checkDisk asserts that the command was stopped for the disk limit, that
// what it left stays near the limit, and that the next command can free
// the space: the host disk never fills.
func checkDisk(leftover string) func(t *testing.T, e *effects, res tools.Result) {
	return func(t *testing.T, e *effects, res tools.Result) {
		t.Helper()
		if !strings.Contains(res.Stdout+res.Stderr+res.Output, "disk limit") {
			t.Errorf("the result does not say disk limit: %s\n%s", res.Output, res.Stderr)
		}
		var written int64
		filepath.WalkDir(filepath.Join(e.ws, leftover), func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				if info, err := d.Info(); err == nil {
					written += info.Size()
				}
			}
			return nil
		})
		// One poll interval of writing past the limit at most; 256 MiB
		// were attempted.
		if written > 4*e.diskLimit {
			t.Errorf("%d MiB written against a limit of %d MiB", written>>20, e.diskLimit>>20)
		}
		t.Logf("%d MiB written against a limit of %d MiB", written>>20, e.diskLimit>>20)
		os.RemoveAll(filepath.Join(e.ws, leftover))
	}
}
