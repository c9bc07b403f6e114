package containerd

// Attacks an adversarial review of the sandbox found, each run through the
// gate with the shipped unattended policy, each checking what happened on
// the host. Every one of them broke a promise before its fix.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trioagent/trio/internal/sandboxtest"
	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/tools"
)

func attackOpen(t *testing.T) sandboxtest.Opener {
	requireContainerd(t)
	return openForEffects
}

// pyNoFatal is Env.Python that returns the gate's Go error instead of
// failing the test.
func pyNoFatal(t *testing.T, e *sandboxtest.Env, name, src string) (tools.Result, error) {
	if err := os.WriteFile(filepath.Join(e.Dir, name), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"command": "python3 " + name})
	return e.Gate.Call(context.Background(), e.View, tools.Call{ID: "nf-" + name, Name: tools.RunCommandName, Arguments: b})
}

func size(p string) int64 {
	st, err := os.Stat(p)
	if err != nil {
		return -1
	}
	return st.Size()
}

// A thread group whose leader thread exited (SYS_exit, not exit_group)
// shows "Z (zombie)" in /proc/<tgid>/status while its other threads run.
// The reaper skips zombies.
func TestAttackZombieLeaderSurvives(t *testing.T) {
	e := sandboxtest.NewEnv(t, attackOpen(t), nil, nil)
	res := e.Python(t, "zl.py", `import os, threading, time, ctypes
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        def loop():
            while True:
                with open("/workspace/beacon", "a") as f: f.write("x")
                time.sleep(0.02)
        threading.Thread(target=loop).start()
        time.sleep(0.1)
        ctypes.CDLL(None).syscall(60, 0)  # SYS_exit: only the main thread ends
    os._exit(0)
time.sleep(0.5)
print("started")
`)
	t.Logf("first: %s", sandboxtest.Everything(res))
	r2 := e.Command(t, "echo second")
	t.Logf("second: exit %d %q", r2.ExitCode, r2.Output)
	a := size(filepath.Join(e.Dir, "beacon"))
	time.Sleep(time.Second)
	b := size(filepath.Join(e.Dir, "beacon"))
	t.Logf("beacon %d -> %d", a, b)
	if a > 0 && b > a {
		t.Errorf("a process survived two commands' reaping (beacon %d -> %d bytes)", a, b)
	}
}

// A folder whose name is not UTF-8 makes every os.Root FS walk fail
// (fs.ValidPath), so afterCommand cannot remove a hostile new .git and
// every later Exec fails; Close's give-back stops early.
func TestAttackNonUTF8Dir(t *testing.T) {
	e := sandboxtest.NewEnv(t, attackOpen(t), nil, nil)
	os.RemoveAll(filepath.Join(e.Dir, ".git"))
	e.Command(t, "true")
	res, gerr := pyNoFatal(t, e, "bad.py", `import os
os.makedirs("sub/.git/hooks", exist_ok=True)
os.makedirs(".git/hooks", exist_ok=True)
open(".git/config", "w").write("[core]\n\tfsmonitor = touch /tmp/pwned-by-sandbox\n")
open(".git/HEAD", "w").write("ref: refs/heads/main\n")
os.mkdir(b"\x01\xff")
open("zz-late.txt", "w").write("mine")
`)
	t.Logf("bad.py: %s (gate error: %v)", sandboxtest.Everything(res), gerr)
	if b, err := os.ReadFile(filepath.Join(e.Dir, ".git", "config")); err == nil {
		t.Errorf("hostile .git/config is on the host:\n%s", b)
	}
	r, err := e.Sandbox.Exec(context.Background(), sandbox.Command{Argv: []string{"echo", "next"}})
	t.Logf("next Exec: %+v err=%v", r.ExitCode, err)
	if err != nil {
		t.Errorf("every later command fails: %v", err)
	}
	e.Sandbox.Close()
	var nobody []string
	filepath.WalkDir(e.Dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if info, err := d.Info(); err == nil && info.Sys().(*syscall.Stat_t).Uid == NobodyID {
			nobody = append(nobody, p)
		}
		return nil
	})
	if len(nobody) > 0 {
		t.Errorf("after Close %d entries still belong to nobody: %v", len(nobody), nobody)
	}
}

// More hidden entries than maxLayoutEntries: PlanLayout fails, so the
// new .git is not removed and every later Exec fails.
func TestAttackLayoutTooLarge(t *testing.T) {
	e := sandboxtest.NewEnv(t, attackOpen(t), nil, nil)
	os.RemoveAll(filepath.Join(e.Dir, ".git"))
	e.Command(t, "true")
	res, gerr := pyNoFatal(t, e, "many.py", `import os
os.makedirs(".git/hooks", exist_ok=True)
open(".git/config", "w").write("[core]\n\tfsmonitor = touch /tmp/pwned-by-sandbox\n")
open(".git/HEAD", "w").write("ref: refs/heads/main\n")
os.makedirs(".git/objects", exist_ok=True); os.makedirs(".git/refs/heads", exist_ok=True)
os.makedirs("k", exist_ok=True)
for i in range(4200): open("k/%d.pem" % i, "w").close()
`)
	t.Logf("many.py: %s (gate error: %v)", sandboxtest.Everything(res), gerr)
	if b, err := os.ReadFile(filepath.Join(e.Dir, ".git", "config")); err == nil {
		t.Errorf("hostile .git/config is on the host:\n%s", b)
	}
	_, err := e.Sandbox.Exec(context.Background(), sandbox.Command{Argv: []string{"rm", "-rf", "k"}})
	if err != nil {
		t.Errorf("later commands (even the rm that would repair it) fail: %v", err)
	}
	// The run stops (sandbox_error); the person looks at the result.
	e.Sandbox.Close()
	marker := filepath.Join(os.TempDir(), "pwned-by-sandbox")
	os.Remove(marker)
	out, gerr2 := exec.Command("git", "-C", e.Dir, "status", "--short").CombinedOutput()
	t.Logf("host git status: %v\n%s", gerr2, out)
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("host `git status` in the workspace ran the sandbox's core.fsmonitor (%s exists)", marker)
		os.Remove(marker)
	}
}

// SysV shared memory outlives every process and is charged to the
// container's memory cgroup: the rest of the run's commands OOM.
func TestAttackSysVShmPersists(t *testing.T) {
	e := sandboxtest.NewEnv(t, attackOpen(t), nil, func(l *sandbox.Limits) { l.Memory = 512 << 20 })
	res := e.Python(t, "shm.py", `import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
n = 0
for i in range(16):
    sz = 32 << 20
    id = libc.shmget(0, ctypes.c_size_t(sz), 0o1600)  # IPC_PRIVATE|IPC_CREAT|0600
    if id < 0: print("shmget", ctypes.get_errno()); break
    p = libc.shmat(id, None, 0)
    if p in (None, ctypes.c_void_p(-1).value): print("shmat", ctypes.get_errno()); break
    ctypes.memset(p, 1, sz)
    libc.shmdt(ctypes.c_void_p(p))
    n += sz
    print("segment", i, flush=True)
print("held MiB", n >> 20)
`)
	t.Logf("shm.py: %s", sandboxtest.Everything(res))
	r := e.Python(t, "use.py", `b = bytearray(200 << 20)
for i in range(0, len(b), 4096): b[i] = 1
print("allocated 200 MiB")
`)
	t.Logf("later command: exit %d oom? %s", r.ExitCode, sandboxtest.Everything(r))
	if !strings.Contains(r.Stdout, "allocated 200 MiB") {
		t.Errorf("a later 200 MiB command cannot run in a 512 MiB sandbox after shm was left behind")
	}
	r = e.Command(t, "cat /proc/sysvipc/shm")
	t.Logf("shm left: %s", r.Stdout)
}

// Many small files make each usage() walk slow, so the 100 ms poll falls
// behind the writes.
func TestAttackDiskSlowWalk(t *testing.T) {
	e := sandboxtest.NewEnv(t, attackOpen(t), nil, func(l *sandbox.Limits) { l.Disk = 256 << 20; l.Timeout = 5 * time.Minute })
	// 100k entries at the 4 KiB each they count for pass the 256 MiB
	// limit (at 64k): the command is killed on the way, and every later
	// walk has a tree that big to cover.
	res := e.Python(t, "files.py", `import os
for d in range(100):
    os.makedirs("f/%d" % d, exist_ok=True)
    for i in range(1000): open("f/%d/%d" % (d, i), "w").close()
print("100k empty files")
`)
	t.Logf("files: %s %v", sandboxtest.Everything(res), res.Output)
	start := time.Now()
	u0 := usage(e.Dir)
	t.Logf("one usage() walk of the workspace: %v, %d MiB", time.Since(start), u0>>20)
	res = e.Python(t, "write.py", `import os, threading
def w(i):
    with open("big%d.bin" % i, "wb") as f:
        buf = b"\1" * (1 << 20)
        for _ in range(250): f.write(buf)
ts = [threading.Thread(target=w, args=(i,)) for i in range(8)]
[t.start() for t in ts]; [t.join() for t in ts]
print("wrote")
`)
	var total int64
	for i := range 8 {
		if n := size(filepath.Join(e.Dir, fmt.Sprintf("big%d.bin", i))); n > 0 {
			total += n
		}
	}
	t.Logf("write.py: %q; big files total %d MiB against a 256 MiB limit (base usage %d MiB)", res.Output, total>>20, u0>>20)
	// Creating the files overshoots by what a command makes during one
	// walk, which takes longer as files pile up (seconds under -race):
	// bounded, not exact. Once past the limit, nothing more is written.
	if total+u0 > 1<<30 {
		t.Errorf("disk limit overshot by more than 4x: %d MiB written", (total+u0)>>20)
	}
	if u0 > 256<<20 && total > 0 {
		t.Errorf("a run past its disk limit wrote %d MiB more", total>>20)
	}
}

// A run already over its disk limit still gets one poll interval of
// writes per command.
func TestAttackDiskPerCommandCreep(t *testing.T) {
	e := sandboxtest.NewEnv(t, attackOpen(t), nil, func(l *sandbox.Limits) { l.Disk = 32 << 20 })
	for i := range 6 {
		res := e.Python(t, fmt.Sprintf("w%d.py", i), fmt.Sprintf(`import os
with open("c%d.bin", "wb") as f:
    while True: f.write(b"\1" * (1 << 20))
`, i))
		_ = res
	}
	u := usage(e.Dir)
	t.Logf("after 6 commands the workspace holds %d MiB against a 32 MiB limit", u>>20)
	if u > 64<<20 {
		t.Errorf("disk limit creeps: %d MiB after 6 commands, limit 32 MiB", u>>20)
	}
}

// A file in a root-owned workspace that is a hard link to a host file
// outside (uv's and pnpm's link mode, cp -al): adoptTree gives the inode
// to nobody, and the sandbox writes the host file.
func TestAttackOutsideHardLinkAdopted(t *testing.T) {
	base, _ := os.MkdirTemp("", "trio-hl-")
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	outside := filepath.Join(base, "uv-cache-file.py")
	os.WriteFile(outside, []byte("# trusted cache file\n"), 0o644)
	e := sandboxtest.NewEnv(t, func(t testing.TB, dir string, rules sandbox.PathRules, limits sandbox.Limits) sandbox.Sandbox {
		os.MkdirAll(filepath.Join(dir, ".venv", "lib"), 0o755)
		if err := os.Link(outside, filepath.Join(dir, ".venv", "lib", "mod.py")); err != nil {
			t.Fatal(err)
		}
		return attackOpen(t.(*testing.T))(t, dir, rules, limits)
	}, nil, nil)
	res := e.Python(t, "hl.py", `open(".venv/lib/mod.py", "a").write("import os; os.system('id > /tmp/x')\n")
print("appended")`)
	t.Logf("hl.py: %s", sandboxtest.Everything(res))
	b, _ := os.ReadFile(outside)
	var st syscall.Stat_t
	syscall.Stat(outside, &st)
	t.Logf("outside file now uid %d:\n%s", st.Uid, b)
	if strings.Contains(string(b), "os.system") {
		t.Errorf("a host file outside the workspace was rewritten through a pre-existing hard link")
	}
}

// State in HOME (tmpfs), /tmp and /cache survives from one command to the
// next, so a Worker command can plant code that runs inside every later
// command, the Critic's checks included.
func TestAttackHomePersistence(t *testing.T) {
	e := sandboxtest.NewEnv(t, attackOpen(t), nil, nil)
	res := e.Python(t, "plant.py", `import os, site, sys
d = site.getusersitepackages()
os.makedirs(d, exist_ok=True)
open(os.path.join(d, "zz.pth"), "w").write("import sys; sys.stdout.write('PLANTED\\n')\n")
cfg = os.path.join(os.environ["HOME"], ".config", "go")
os.makedirs(cfg, exist_ok=True)
open(os.path.join(cfg, "env"), "w").write("GOFLAGS=-run=^$\n")
print(d)
`)
	t.Logf("plant: %s", sandboxtest.Everything(res))
	r := e.Command(t, "python3 app.py")
	t.Logf("later python3 app.py: %q", r.Stdout)
	if strings.Contains(r.Stdout, "PLANTED") {
		t.Errorf("code planted by one command ran inside a later command")
	}
	r = e.Command(t, "go env GOFLAGS")
	t.Logf("later go env GOFLAGS: %q", r.Stdout)
	if strings.Contains(r.Stdout, "-run") {
		t.Errorf("GOFLAGS planted in $HOME/.config/go/env by one command applies to later go commands")
	}
}

// A survivor (the zombie-leader trick) renames the parent of a hidden file
// back and forth while the host plans the next layout; the layout change
// (a new node_modules) makes the host recreate the container with mounts
// planned from a stale view, so the real file is visible to the next
// command.
func TestAttackLayoutRaceBySurvivor(t *testing.T) {
	e := sandboxtest.NewEnv(t, attackOpen(t), map[string]string{"backend/.env": "DB_PASSWORD=" + sandboxtest.Canary + "\n"}, nil)
	won := false
	for attempt := range 6 {
		res := e.Python(t, fmt.Sprintf("race%d.py", attempt), `import os, threading, time, ctypes
os.makedirs("node_modules/x%d" % time.time_ns(), exist_ok=True)  # a new read-only match: the next command recreates the container
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        def loop():
            names = [d for d in ("backend", "backend2") if os.path.isdir(d)]
            cur = names[0]
            while True:
                nxt = "backend2" if cur == "backend" else "backend"
                try: os.rename(cur, nxt); cur = nxt
                except Exception: pass
                time.sleep(0.0005)
        threading.Thread(target=loop).start()
        time.sleep(0.05)
        ctypes.CDLL(None).syscall(60, 0)
    os._exit(0)
time.sleep(0.2)
`)
		_ = res
		r := e.Python(t, fmt.Sprintf("read%d.py", attempt), `import glob
for f in glob.glob("backend*/.env"):
    print(f, repr(open(f).read()))
`)
		t.Logf("attempt %d: %s", attempt, r.Stdout)
		if strings.Contains(sandboxtest.Everything(r), sandboxtest.Canary) {
			won = true
			break
		}
	}
	if won {
		t.Errorf("the hidden backend/.env was read by a command")
	}
	var envs []string
	filepath.WalkDir(e.Dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == ".env" {
			b, _ := os.ReadFile(p)
			envs = append(envs, fmt.Sprintf("%s=%q", p, b))
		}
		return nil
	})
	t.Logf("host .env files now: %v", envs)
}

// Renaming the parent of a hidden file makes afterCommand delete the
// user's real file as "created by this command".
func TestAttackRenameParentDeletesHidden(t *testing.T) {
	e := sandboxtest.NewEnv(t, attackOpen(t), map[string]string{"backend/.env": "DB_PASSWORD=" + sandboxtest.Canary + "\n", "backend/main.py": "x=1\n"}, nil)
	r := e.Command(t, "mv backend backend2")
	t.Logf("mv: %s", sandboxtest.Everything(r))
	r = e.Command(t, "ls -la backend2")
	t.Logf("ls: %s", sandboxtest.Everything(r))
	var envs []string
	filepath.WalkDir(e.Dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == ".env" {
			envs = append(envs, p)
		}
		return nil
	})
	t.Logf("host .env files now: %v", envs)
	if len(envs) < 2 {
		t.Errorf("the user's backend/.env is gone from the host")
	}
}

// A survivor churns entries in the folder that holds a hidden file. The
// host's os.Root ReadDir fails with ENOENT when an entry vanishes between
// getdents and lstatat; PlanLayout takes that for "removed while we
// walked" and skips the whole folder, so the new layout omits the hidden
// file, differs, and the container is recreated without its mount.
func TestAttackChurnSkipsHiddenFolder(t *testing.T) {
	e := sandboxtest.NewEnv(t, attackOpen(t), map[string]string{"backend/.env": "DB_PASSWORD=" + sandboxtest.Canary + "\n"}, nil)
	for attempt := range 10 {
		e.Python(t, fmt.Sprintf("churn%d.py", attempt), `import os, threading, time, ctypes
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        def loop(k):
            i = 0
            while True:
                p = "backend/c%d_%d" % (k, i % 64)
                try: open(p, "w").close(); os.unlink(p)
                except Exception: pass
                i += 1
        for k in range(4): threading.Thread(target=loop, args=(k,)).start()
        time.sleep(0.05)
        ctypes.CDLL(None).syscall(60, 0)
    os._exit(0)
time.sleep(0.2)
`)
		r := e.Command(t, "cat backend/.env")
		t.Logf("attempt %d: %q", attempt, r.Stdout)
		if strings.Contains(sandboxtest.Everything(r), sandboxtest.Canary) {
			t.Errorf("attempt %d: the hidden backend/.env was read: %q", attempt, r.Stdout)
			return
		}
	}
}

// Held checks: links out of read-only binds, a fork bomb left behind,
// writers in D state while the reaper freezes.
func TestAttackHeld(t *testing.T) {
	e := sandboxtest.NewEnv(t, attackOpen(t), nil, nil)
	res := e.Python(t, "links.py", `import os
for src, dst in [("vendor/lib/lib.go", "x.key"), ("tests/test_app.py", "t.pem"), ("vendor/lib/lib.go", "v2.go")]:
    try: os.link(src, dst); print("linked", src, dst)
    except Exception as ex: print("link", src, ex)
for a, b in [("vendor", "v"), ("tests", "t2"), (".git", "g")]:
    try: os.rename(a, b); print("renamed", a)
    except Exception as ex: print("rename", a, ex)
`)
	t.Logf("links: %s", res.Stdout)
	res = e.Python(t, "bomb.py", `import os, time
if os.fork() == 0:
    os.setsid()
    for i in range(2000):
        try:
            if os.fork() == 0:
                f = open("/workspace/w%d" % (i % 50), "ab")
                while True:
                    f.write(b"\0" * 65536); os.fsync(f.fileno())
        except Exception: time.sleep(0.001)
    os._exit(0)
time.sleep(1)
`)
	t.Logf("bomb: exit %d %q", res.ExitCode, res.Output)
	for i := range 3 {
		r, err := e.Sandbox.Exec(context.Background(), sandbox.Command{Argv: []string{"echo", "alive"}})
		t.Logf("after bomb %d: %q err=%v", i, r.Stdout, err)
		if err != nil || !strings.Contains(r.Stdout, "alive") {
			t.Errorf("sandbox unusable after a fork bomb of fsync writers: %v", err)
		}
	}
}

// The survivor attaches with ptrace to a later command (the Critic's
// check would be the same uid in the same container).
func TestAttackSurvivorPtracesLaterCommand(t *testing.T) {
	e := sandboxtest.NewEnv(t, attackOpen(t), nil, nil)
	e.Python(t, "spy.py", `import os, threading, time, ctypes
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        def loop():
            me = os.getpid()
            while True:
                for p in os.listdir("/proc"):
                    if not p.isdigit() or int(p) == me: continue
                    try: cmd = open("/proc/%s/cmdline" % p).read()
                    except Exception: continue
                    if "victim.py" in cmd:
                        r = libc.ptrace(16, int(p), None, None)  # PTRACE_ATTACH
                        open("/workspace/spied", "a").write("attach %s -> %d errno %d\n" % (cmd.replace("\0", " "), r, ctypes.get_errno()))
                        return
                time.sleep(0.005)
        threading.Thread(target=loop).start()
        time.sleep(0.05)
        ctypes.CDLL(None).syscall(60, 0)
    os._exit(0)
time.sleep(0.2)
`)
	r := e.Python(t, "victim.py", "import time\ntime.sleep(1)\nprint('victim done')\n")
	b, _ := os.ReadFile(filepath.Join(e.Dir, "spied"))
	t.Logf("victim: %q; spied: %s", r.Output, b)
	if strings.Contains(string(b), "-> 0 ") {
		t.Errorf("a process left by an earlier command ptrace-attached to a later command")
	}
}

// A command goes for the container's init, the exec server that starts
// every later command (the Critic's checks too): it connects to the
// server's socket to start a process of its own, signals pid 1 to bring
// the container down, reads what pid 1 holds, and makes itself immune to
// the OOM killer as init is. None of it may work:
// the next command runs in the same container (its /tmp is still there)
// and nothing the attack started runs on.
func TestAttackExecServer(t *testing.T) {
	e := sandboxtest.NewEnv(t, attackOpen(t), nil, nil)
	r := e.Python(t, "init.py", `import os, signal, socket
open("/tmp/marker", "w").write("same container")
out = []
try:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect("/.trio-ctl/sock")
    out.append("CONNECTED")
    r, w = os.pipe()
    body = b'{"argv":["sh","-c","while :; do echo z >> /workspace/survivor; sleep 0.05; done"],"dir":"/workspace","uid":65534,"gid":65534}'
    socket.send_fds(s, [len(body).to_bytes(4, "big") + body], [w, w])
    out.append("SENT " + s.recv(100).decode())
except Exception as ex:
    out.append("connect: %r" % ex)
for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGSEGV, signal.SIGKILL, signal.SIGSTOP):
    try:
        os.kill(1, sig)
        out.append("SIGNALLED %s" % sig.name)
    except Exception as ex:
        out.append("kill %s: %r" % (sig.name, ex))
out.append("adj=" + open("/proc/self/oom_score_adj").read().strip())
try:
    with open("/proc/self/oom_score_adj", "w") as f:
        f.write("-1000")
    out.append("OOM-IMMUNE")
except Exception as ex:
    out.append("oom_score_adj -1000: %r" % ex)
for f in ("environ", "mem", "maps"):
    try:
        open("/proc/1/" + f, "rb").read(64)
        out.append("READ /proc/1/" + f)
    except Exception as ex:
        out.append("%s: %r" % (f, ex))
print("\n".join(out))
`)
	t.Logf("attack: %s", sandboxtest.Everything(r))
	if strings.Contains(r.Output+r.Stdout, "adj=-") {
		t.Errorf("the command starts as protected from the OOM killer as init:\n%s", sandboxtest.Everything(r))
	}
	for _, bad := range []string{"CONNECTED", "SIGNALLED", "READ ", "OOM-IMMUNE"} {
		if strings.Contains(r.Output+r.Stdout, bad) {
			t.Errorf("the attack got through (%s):\n%s", bad, sandboxtest.Everything(r))
		}
	}
	after := e.Python(t, "marker.py", "print(open('/tmp/marker').read())\n")
	if !strings.Contains(after.Stdout+after.Output, "same container") {
		t.Errorf("the next command ran in a new container: the attack brought init down:\n%s", sandboxtest.Everything(after))
	}
	before := size(filepath.Join(e.Dir, "survivor"))
	time.Sleep(300 * time.Millisecond)
	if now := size(filepath.Join(e.Dir, "survivor")); now != before {
		t.Errorf("a process the attack started through the exec server still runs (survivor grew %d -> %d)", before, now)
	}
}
