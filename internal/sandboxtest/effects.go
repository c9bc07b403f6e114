// Package sandboxtest holds the effect table every isolating sandbox kind
// must pass: hostile programs run through the same path an agent run takes
// (the gate with the shipped unattended policy, run_command), and each row
// checks what happened on the host, never a setting.
package sandboxtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/tools"
)

// Opener opens the sandbox under test on the workspace folder dir, laying
// out rules and enforcing limits. It registers the sandbox's Close with
// t.Cleanup. It may change dir's owner (to the uid its commands run as).
type Opener func(t testing.TB, dir string, rules sandbox.PathRules, limits sandbox.Limits) sandbox.Sandbox

// Canary is the secret every row plants; it must never reach an output.
const Canary = "TRIO-CANARY-7f3a9c"

// Row is one threat and the effect that must hold.
type Row struct {
	Name   string
	Threat string
	// Files are written into the workspace before the sandbox opens.
	Files map[string]string
	// Limits adjusts the shipped policy's limits for this row.
	Limits func(*sandbox.Limits)
	// Run drives the sandbox through the gate and checks the host.
	Run func(t *testing.T, e *Env)
}

// Env is one row's workspace, gate and sandbox.
type Env struct {
	Dir     string
	Sandbox sandbox.Sandbox
	Gate    *tools.Gate
	View    tools.View
	Policy  *policy.Policy
	calls   atomic.Int64
}

// Call runs a tool through the gate and returns its result; a Go error
// (the sandbox failed) fails the test.
func (e *Env) Call(t testing.TB, tool string, args map[string]any) tools.Result {
	t.Helper()
	b, _ := json.Marshal(args)
	id := fmt.Sprintf("call-%d", e.calls.Add(1))
	res, err := e.Gate.Call(context.Background(), e.View, tools.Call{ID: id, Name: tool, Arguments: b})
	if err != nil {
		t.Fatalf("%s %s: %v", tool, b, err)
	}
	return res
}

// Command runs one command line with run_command.
func (e *Env) Command(t testing.TB, line string) tools.Result {
	t.Helper()
	return e.Call(t, tools.RunCommandName, map[string]any{"command": line})
}

// Python writes a script into the workspace and runs it with python3, as
// an allowed `python3 x.py` of the Worker would.
func (e *Env) Python(t testing.TB, name, src string) tools.Result {
	t.Helper()
	if err := os.WriteFile(filepath.Join(e.Dir, name), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	res := e.Command(t, "python3 "+name)
	if res.Denied {
		t.Fatalf("python3 %s denied by the shipped policy: %s", name, res.Output)
	}
	return res
}

// Everything is the text of a result a model or a person could see.
func Everything(r tools.Result) string {
	return r.Output + "\n" + r.Stdout + "\n" + r.Stderr
}

// PolicyEnv names a variable that replaces the path of the shipped
// unattended policy, for a test that re-runs itself as a user who cannot
// read the repository.
const PolicyEnv = "TRIO_SANDBOXTEST_POLICY"

// ShippedPolicy loads configs/policy.unattended.yaml of this repository
// (or $TRIO_SANDBOXTEST_POLICY), with the tests folder "tests" read-only
// as the Worker's gate makes it.
func ShippedPolicy(t testing.TB) *policy.Policy {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(file), "..", "..", "configs", "policy.unattended.yaml")
	if v := os.Getenv(PolicyEnv); v != "" {
		path = v
	}
	p, err := policy.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return p.WithReadOnly("tests/**")
}

// Limits are the shipped policy's limits as the agent hands them over,
// with a shorter timeout so a hanging row fails fast.
func Limits(p *policy.Policy) sandbox.Limits {
	l := p.Limits()
	return sandbox.Limits{Timeout: 60 * time.Second, Memory: l.Memory, CPUs: l.CPUs, Pids: l.Pids, Output: l.Output, Network: l.Network, Disk: l.Disk}
}

// Run runs every row against open. skip names rows this kind cannot
// enforce, each with the reason; a skipped row is logged, never silent.
func Run(t *testing.T, open Opener, skip map[string]string) {
	RunWith(t, open, Options{Skip: skip})
}

// Options say how a kind runs the table.
type Options struct {
	// Skip names rows this kind cannot enforce, each with the reason.
	Skip map[string]string
	// WithoutDenied plants no file the policy denies (.env, .git), for a
	// kind that refuses a workspace holding one (the landlock kind): its
	// rows then test every other wall on a workspace it accepts, and the
	// kind proves the refusal in a test of its own.
	WithoutDenied bool
}

// RunWith is Run with options.
func RunWith(t *testing.T, open Opener, o Options) {
	for _, row := range Rows() {
		t.Run(row.Name, func(t *testing.T) {
			if why, ok := o.Skip[row.Name]; ok {
				t.Skipf("not enforced by this kind: %s", why)
			}
			e := newEnv(t, open, row.Files, row.Limits, o.WithoutDenied)
			row.Run(t, e)
		})
	}
}

// NewEnv makes a workspace with files and the standard secrets, and opens
// the sandbox and the gate on it.
func NewEnv(t *testing.T, open Opener, files map[string]string, adjust func(*sandbox.Limits)) *Env {
	t.Helper()
	return newEnv(t, open, files, adjust, false)
}

func newEnv(t *testing.T, open Opener, files map[string]string, adjust func(*sandbox.Limits), withoutDenied bool) *Env {
	t.Helper()
	dir := Workspace(t)
	all := map[string]string{
		".env":              "API_KEY=" + Canary + "\n",
		".git/config":       "[core]\n\tbare = false\n",
		".git/HEAD":         "ref: refs/heads/main\n",
		"vendor/lib/lib.go": "package lib\n",
		"tests/test_app.py": "def test_ok():\n    assert True\n",
		"app.py":            "print('hi')\n",
	}
	for k, v := range files {
		all[k] = v
	}
	p := ShippedPolicy(t)
	for name, content := range all {
		if withoutDenied && tools.PathRules(p)(name) == sandbox.Hidden {
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	limits := Limits(p)
	if adjust != nil {
		adjust(&limits)
	}
	sb := open(t, dir, tools.PathRules(p), limits)
	ws, err := tools.OpenWorkspace(dir, sb, limits)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	reg, err := tools.NewRegistry(tools.Builtins(ws)...)
	if err != nil {
		t.Fatal(err)
	}
	view, err := reg.View(reg.Names()...)
	if err != nil {
		t.Fatal(err)
	}
	return &Env{Dir: dir, Sandbox: sb, Gate: tools.NewGate(p), View: view, Policy: p}
}

// Workspace is a fresh folder under the system's temporary folder that
// any uid may enter (t.TempDir's parent is private to the test's user),
// removed when the test ends.
func Workspace(t testing.TB) string {
	t.Helper()
	base, err := os.MkdirTemp("", "trio-effects-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	dir := filepath.Join(base, "ws")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return real
}

// TreeHash is a hash of every entry under dir: names, modes, owners, sizes
// and contents, without following symlinks. Unreadable entries count by
// name and error.
func TreeHash(t testing.TB, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(dir, p)
		if err != nil {
			fmt.Fprintf(h, "%s err %v\n", rel, err)
			return nil
		}
		info, err := d.Info()
		if err != nil {
			fmt.Fprintf(h, "%s gone\n", rel)
			return nil
		}
		st := info.Sys().(*syscall.Stat_t)
		fmt.Fprintf(h, "%s %v %d:%d %d\n", rel, info.Mode(), st.Uid, st.Gid, info.Size())
		if info.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			h.Write(b)
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			l, _ := os.Readlink(p)
			fmt.Fprintf(h, "-> %s\n", l)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ContentHash is TreeHash without owners, for folders whose files the
// sandbox may legitimately give to its own uid.
func ContentHash(t testing.TB, dir string) string {
	t.Helper()
	h := sha256.New()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(dir, p)
		if err != nil {
			return nil
		}
		fmt.Fprintf(h, "%s %v\n", rel, d.Type())
		if d.Type().IsRegular() {
			b, _ := os.ReadFile(p)
			h.Write(b)
		}
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))
}

// Rows is the effect table.
func Rows() []Row {
	return []Row{
		{
			Name:   "canary-secret-unreadable",
			Threat: "code run by an allowed program reads .env (directly, through a symlink, a hard link or a copy) and prints the key into the tool result",
			Run: func(t *testing.T, e *Env) {
				res := e.Python(t, "leak.py", `import os, shutil, sys
for f in [".env", "./.env", "/workspace/.env", os.path.join(os.getcwd(), ".env")]:
    try: print(open(f).read())
    except Exception as ex: print("read", f, ex, file=sys.stderr)
for how in ("link", "symlink", "copy"):
    try:
        dst = "got_" + how
        getattr(os, how, None)(".env", dst) if how != "copy" else shutil.copy(".env", dst)
        print(open(dst).read())
    except Exception as ex: print(how, ex, file=sys.stderr)
for root, dirs, files in os.walk("."):
    for f in files:
        try: sys.stdout.write(open(os.path.join(root, f), errors="replace").read())
        except Exception: pass
`)
				if strings.Contains(Everything(res), Canary) {
					t.Fatalf("the canary reached the tool result:\n%s", Everything(res))
				}
				// A second command sees whatever the first left behind.
				res = e.Command(t, "cat got_link got_symlink got_copy")
				if strings.Contains(Everything(res), Canary) {
					t.Fatalf("a file the first command made carries the canary:\n%s", Everything(res))
				}
				// A symlink to .env is fine (the file tools judge it by where
				// it leads); a regular file holding the key is not.
				for _, f := range []string{"got_link", "got_symlink", "got_copy"} {
					p := filepath.Join(e.Dir, f)
					if st, err := os.Lstat(p); err != nil || !st.Mode().IsRegular() {
						continue
					}
					if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(Canary)) {
						t.Fatalf("%s on the host holds the canary", f)
					}
				}
			},
		},
		{
			Name:   "git-unchanged",
			Threat: "code appends core.fsmonitor to .git/config or installs a hook, which runs on the host at the next git status",
			Run: func(t *testing.T, e *Env) {
				before := TreeHash(t, filepath.Join(e.Dir, ".git"))
				res := e.Python(t, "git.py", `import os, sys
def tryit(what, f):
    try: f(); print("did", what)
    except Exception as ex: print(what, ex, file=sys.stderr)
tryit("config", lambda: open(".git/config", "a").write("[core]\n\tfsmonitor = touch /tmp/pwned\n"))
tryit("hook", lambda: (os.makedirs(".git/hooks", exist_ok=True), open(".git/hooks/pre-commit", "w").write("#!/bin/sh\ntouch /tmp/pwned\n")))
tryit("rename", lambda: os.rename(".git", "git-old"))
tryit("rmtree", lambda: __import__("shutil").rmtree(".git"))
`)
				if after := TreeHash(t, filepath.Join(e.Dir, ".git")); after != before {
					t.Fatalf(".git changed on the host:\n%s", Everything(res))
				}
			},
		},
		{
			Name:   "new-git-quarantined",
			Threat: "code creates a .git folder where there was none, with a config whose fsmonitor runs on the host",
			Run: func(t *testing.T, e *Env) {
				os.RemoveAll(filepath.Join(e.Dir, ".git"))
				// The sandbox saw .git when it opened; let the next command's
				// layout see the workspace without it.
				e.Command(t, "true")
				res := e.Python(t, "mkgit.py", `import os
os.makedirs(".git/hooks", exist_ok=True)
open(".git/config", "w").write("[core]\n\tfsmonitor = touch /tmp/pwned\n")
open(".git/HEAD", "w").write("ref: refs/heads/main\n")
`)
				if _, err := os.Lstat(filepath.Join(e.Dir, ".git", "config")); err == nil {
					t.Fatalf(".git/config made inside the sandbox is on the host:\n%s", Everything(res))
				}
			},
		},
		{
			Name:   "read-only-unchanged",
			Threat: "code rewrites vendored code (paths.read_only) that the file tools may not write",
			Run: func(t *testing.T, e *Env) {
				before := ContentHash(t, filepath.Join(e.Dir, "vendor"))
				res := e.Python(t, "ro.py", `import os, sys
for what, f in [("write", lambda: open("vendor/lib/lib.go", "w").write("package evil\n")),
                ("new", lambda: open("vendor/lib/new.go", "w").write("package lib\n")),
                ("remove", lambda: os.remove("vendor/lib/lib.go")),
                ("rename", lambda: os.rename("vendor", "vendor2"))]:
    try: f(); print("did", what)
    except Exception as ex: print(what, ex, file=sys.stderr)
`)
				if after := ContentHash(t, filepath.Join(e.Dir, "vendor")); after != before {
					t.Fatalf("vendor/ changed on the host:\n%s", Everything(res))
				}
			},
		},
		{
			Name:   "tests-folder-read-only",
			Threat: "the Worker's code rewrites the Critic's acceptance tests into ones that always pass",
			Run: func(t *testing.T, e *Env) {
				before := ContentHash(t, filepath.Join(e.Dir, "tests"))
				res := e.Python(t, "tamper.py", `import os, sys
for what, f in [("write", lambda: open("tests/test_app.py", "w").write("def test_ok():\n    pass\n")),
                ("new", lambda: open("tests/conftest.py", "w").write("")),
                ("remove", lambda: os.remove("tests/test_app.py"))]:
    try: f(); print("did", what)
    except Exception as ex: print(what, ex, file=sys.stderr)
`)
				if after := ContentHash(t, filepath.Join(e.Dir, "tests")); after != before {
					t.Fatalf("tests/ changed on the host:\n%s", Everything(res))
				}
			},
		},
		{
			Name:   "no-change-outside-with-symlink-racer",
			Threat: "a process that outlives its command swaps a workspace folder for a symlink to a host folder while the sandbox adjusts ownership",
			Run: func(t *testing.T, e *Env) {
				outside := filepath.Join(filepath.Dir(e.Dir), "outside")
				os.MkdirAll(outside, 0o755)
				for i := range 50 {
					os.WriteFile(filepath.Join(outside, fmt.Sprintf("f%02d", i)), []byte("host file\n"), 0o644)
				}
				before := TreeHash(t, outside)
				os.MkdirAll(filepath.Join(e.Dir, "sub"), 0o755)
				res := e.Python(t, "race.py", fmt.Sprintf(`import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        end = time.time() + 20
        while time.time() < end:
            try:
                os.rename("sub", "sub.d"); os.symlink(%q, "sub")
                os.remove("sub"); os.rename("sub.d", "sub")
            except Exception: pass
        os._exit(0)
    os._exit(0)
print("racer started")
`, outside))
				// The Worker keeps writing files with the file tools (as root
				// when trio is root), so an ownership walk has work at every
				// command.
				for i := range 15 {
					for j := range 5 {
						e.Call(t, tools.WriteFileName, map[string]any{"path": fmt.Sprintf("sub/h%d-%d", i, j), "content": "x"})
					}
					e.Command(t, "true")
				}
				if after := TreeHash(t, outside); after != before {
					t.Fatalf("files outside the workspace changed (owner or content):\n%s", Everything(res))
				}
			},
		},
		{
			Name:   "no-connection-to-host-loopback",
			Threat: "code connects to a service listening on the host's loopback (a database, a metadata proxy, the model endpoint)",
			Run: func(t *testing.T, e *Env) {
				ln, err := net.Listen("tcp4", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				defer ln.Close()
				var got atomic.Int64
				go func() {
					for {
						c, err := ln.Accept()
						if err != nil {
							return
						}
						got.Add(1)
						c.Close()
					}
				}()
				port := ln.Addr().(*net.TCPAddr).Port
				hosts := []string{"127.0.0.1", "localhost"}
				if addrs, err := net.InterfaceAddrs(); err == nil {
					for _, a := range addrs {
						if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && !ipn.IP.IsLoopback() {
							hosts = append(hosts, ipn.IP.String())
						}
					}
				}
				src := fmt.Sprintf(`import socket, sys
for h in %s:
    try:
        s = socket.create_connection((h, %d), timeout=2); print("connected", h); s.close()
    except Exception as ex: print(h, ex, file=sys.stderr)
`, pyList(hosts), port)
				res := e.Python(t, "net.py", src)
				time.Sleep(100 * time.Millisecond)
				if n := got.Load(); n > 0 {
					t.Fatalf("%d connections reached the host listener:\n%s", n, Everything(res))
				}
			},
		},
		{
			Name:   "background-process-dead-after-command",
			Threat: "a setsid child outlives its command and tampers with later commands and the Critic's checks",
			Run: func(t *testing.T, e *Env) {
				e.Python(t, "bg.py", `import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        while True:
            with open("beacon", "a") as f: f.write("x")
            time.sleep(0.02)
    os._exit(0)
time.sleep(0.3)
`)
				e.Command(t, "true")
				size := func() int64 {
					st, err := os.Stat(filepath.Join(e.Dir, "beacon"))
					if err != nil {
						return -1
					}
					return st.Size()
				}
				a := size()
				if a <= 0 {
					t.Fatal("the background child never wrote its beacon: the row proves nothing")
				}
				time.Sleep(500 * time.Millisecond)
				if b := size(); b != a {
					t.Fatalf("a background process kept writing after its command ended (%d -> %d bytes)", a, b)
				}
			},
		},
		{
			Name:   "init-kill-survived",
			Threat: "code signals the sandbox's init (or every process it can), ending the sandbox for the rest of the run",
			Run: func(t *testing.T, e *Env) {
				e.Python(t, "kill.py", `import os, signal
for sig in (signal.SIGTERM, signal.SIGKILL, signal.SIGINT, signal.SIGHUP):
    for pid in (1, -1):
        try: os.kill(pid, sig)
        except Exception: pass
`)
				res := e.Command(t, "echo alive")
				if res.ExitCode != 0 || !strings.Contains(res.Stdout, "alive") {
					t.Fatalf("the next command failed after an init kill: %s", Everything(res))
				}
			},
		},
		{
			Name:   "tmpfs-fill-survived",
			Threat: "code fills /tmp and HOME, whose memory counts against the limit, so an OOM kill takes the sandbox down",
			Run: func(t *testing.T, e *Env) {
				e.Python(t, "fill.py", `import os
for d in ("/tmp", os.environ.get("HOME", "/tmp")):
    try:
        with open(os.path.join(d, "fill"), "wb") as f:
            while True: f.write(b"\0" * (1 << 20))
    except Exception as ex: print(d, ex)
`)
				res := e.Command(t, "echo alive")
				if res.ExitCode != 0 || !strings.Contains(res.Stdout, "alive") {
					t.Fatalf("the next command failed after a tmpfs fill: %s", Everything(res))
				}
			},
		},
		{
			Name:   "info-lists-every-limit",
			Threat: "a run believes a limit holds that the kind does not enforce (cpus above all), because the enforced line of its report leaves the limit out",
			Limits: func(l *sandbox.Limits) { l.CPUs = 1 },
			Run: func(t *testing.T, e *Env) {
				info := e.Sandbox.Info()
				all := slices.Concat(info.Enforced, info.NotEnforced)
				for _, name := range []string{sandbox.LimitTimeout, sandbox.LimitOutput, sandbox.LimitMemory, sandbox.LimitCPUs,
					sandbox.LimitPids, sandbox.LimitDisk, sandbox.LimitNetwork} {
					n := 0
					for _, entry := range all {
						if strings.HasPrefix(entry, name+" ") || strings.HasPrefix(entry, name+":") {
							n++
						}
					}
					if n != 1 {
						t.Errorf("%s is listed %d times, want once, in %q", name, n, info.Summary())
					}
				}
				notCPUs := slices.ContainsFunc(info.NotEnforced, func(e string) bool { return strings.HasPrefix(e, sandbox.LimitCPUs+":") })
				warned := slices.ContainsFunc(info.Unenforced(sandbox.Limits{CPUs: 1}), func(e string) bool { return strings.HasPrefix(e, sandbox.LimitCPUs+":") })
				if notCPUs != warned {
					t.Errorf("cpus not enforced = %v but a run setting cpus is warned = %v: %q", notCPUs, warned, info.Summary())
				}
				if !strings.Contains(info.Summary(), "cpus") {
					t.Errorf("the report's line says nothing of cpus: %q", info.Summary())
				}
			},
		},
		{
			Name:   "disk-limit-honoured",
			Threat: "code fills the host disk through the workspace",
			Limits: func(l *sandbox.Limits) { l.Disk = 64 << 20 },
			Run: func(t *testing.T, e *Env) {
				res := e.Python(t, "disk.py", `import os
with open("big.bin", "wb") as f:
    for i in range(400):
        f.write(os.urandom(1 << 20)); f.flush()
print("wrote 400 MiB")
`)
				if !strings.Contains(res.Output, "disk limit") {
					t.Errorf("the result does not say the disk limit stopped it:\n%s", Everything(res))
				}
				if st, err := os.Stat(filepath.Join(e.Dir, "big.bin")); err == nil && st.Size() > 128<<20 {
					t.Fatalf("big.bin grew to %d MiB past a 64 MiB limit", st.Size()>>20)
				}
			},
		},
	}
}

func pyList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = fmt.Sprintf("%q", x)
	}
	return "[" + strings.Join(slices.Clip(q), ", ") + "]"
}
