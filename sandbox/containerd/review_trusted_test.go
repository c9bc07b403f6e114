package containerd

// Adversarial review of the containerd kind's trusted builds (commit
// fb3fdbb). Each TestReviewTrusted* function is one attack, driven through
// New, Exec and Reset only, asserting what it did on the host: a row that
// fails is an attack that worked.

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trioagent/trio/internal/sandboxtest"
	"github.com/trioagent/trio/sandbox"
)

// reviewCheck resets the sandbox and runs argv as a Critic check.
func reviewCheck(t *testing.T, s *Sandbox, argv ...string) sandbox.Result {
	t.Helper()
	if err := s.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	res, err := s.Exec(context.Background(), sandbox.Command{Argv: argv, Check: true})
	if err != nil {
		t.Fatalf("check %q: %v", argv, err)
	}
	return res
}

func out(r sandbox.Result) string { return r.Stdout + r.Stderr }

// tracer is a Go program the Worker builds and runs as an ordinary
// command: it starts /.trio/init (execute-only, root's, mode 0111) under
// PTRACE_TRACEME and drives it by its registers, which ptrace still gives
// a tracer of a non-dumpable process (only PEEK/POKE and /proc/pid/mem
// check dumpability).
//
//	tracer read FILE: at each syscall stop of the helper's main thread,
//	  turn the syscall into write(1, addr, 64K) with stdout FILE, from
//	  0x400000 (the ELF header of a non-PIE Go executable) on: the
//	  helper writes its own program into the workspace.
//	tracer main ARGS: skip the helper's first exit_group (the refusal of
//	  confine's init), so os.Exit returns and the program's own main runs
//	  with ARGS.
const tracer = `package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
)

func main() {
	runtime.LockOSThread()
	mode := os.Args[1]
	cmd := exec.Command("/.trio/init")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if mode == "read" {
		f, err := os.Create(os.Args[2])
		if err != nil {
			panic(err)
		}
		cmd.Stdout = f
	} else {
		cmd.Args = append([]string{"/.trio/init"}, os.Args[2:]...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	if err := cmd.Start(); err != nil {
		fmt.Println("start:", err)
		os.Exit(1)
	}
	pid := cmd.Process.Pid
	var ws syscall.WaitStatus
	syscall.Wait4(pid, &ws, 0, nil)
	if err := syscall.PtraceSetOptions(pid, syscall.PTRACE_O_TRACESYSGOOD|0x100000 /* EXITKILL */); err != nil {
		fmt.Println("options:", err)
	}
	// next resumes to the main thread's next syscall stop, passing on
	// signals, and reports false when it exited.
	sig := 0
	next := func() bool {
		for {
			if err := syscall.PtraceSyscall(pid, sig); err != nil {
				fmt.Println("ptrace syscall:", err)
				return false
			}
			sig = 0
			if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil || ws.Exited() || ws.Signaled() {
				return false
			}
			if ws.StopSignal() == syscall.SIGTRAP|0x80 {
				return true
			}
			sig = int(ws.StopSignal())
		}
	}
	var regs syscall.PtraceRegs
	switch mode {
	case "read":
		addr, total := uint64(0x400000), 0
		for total < 1<<20 && next() { // a syscall's entry
			syscall.PtraceGetRegs(pid, &regs)
			saved := regs
			regs.Orig_rax, regs.Rdi, regs.Rsi, regs.Rdx = 1, 1, addr, 64<<10
			if err := syscall.PtraceSetRegs(pid, &regs); err != nil {
				fmt.Println("setregs:", err)
				break
			}
			if !next() { // its exit
				break
			}
			syscall.PtraceGetRegs(pid, &regs)
			if n := int64(regs.Rax); n <= 0 {
				fmt.Println("write:", n)
				break
			} else {
				addr, total = addr+uint64(n), total+int(n)
			}
			// Run the original syscall again: back over the syscall
			// instruction, with its number.
			saved.Rip -= 2
			saved.Rax = saved.Orig_rax
			syscall.PtraceSetRegs(pid, &saved)
		}
		fmt.Println("READ", total)
		syscall.Kill(pid, syscall.SIGKILL)
	case "main":
		for next() {
			syscall.PtraceGetRegs(pid, &regs)
			if regs.Orig_rax != 231 { // exit_group
				next()
				continue
			}
			regs.Orig_rax = ^uint64(0) // no syscall: exit_group returns -ENOSYS
			syscall.PtraceSetRegs(pid, &regs)
			next()
			fmt.Println("SKIPPED exit_group")
			syscall.PtraceDetach(pid)
			break
		}
		syscall.Wait4(pid, &ws, 0, nil)
	}
}
`

// The helper commands may execute but not read (TestHelperRunsNoMain) is
// read all the same: a command starts it traced (PTRACE_TRACEME before
// execve, which Yama does not stop here and containerd's seccomp profile
// allows) and, since a tracer keeps PTRACE_GETREGS/SETREGS on a
// non-dumpable tracee, rewrites one of its syscalls into write(1, text,
// n): the helper copies the embedder's program to the workspace. The
// premise: the direct read is refused.
func TestReviewTrustedPtraceReadsHelper(t *testing.T) {
	if os.Getenv("GOARCH") != "" && os.Getenv("GOARCH") != "amd64" {
		t.Skip("the tracer's registers are amd64's")
	}
	ws := t.TempDir()
	sandboxtest.WriteFiles(t, ws, map[string]string{"go.mod": "module m\n\ngo 1.21\n", "tracer/main.go": tracer})
	s := newSandbox(t, sandbox.RunSpec{Workspace: ws})
	if s.exe == "" || s.helper == "" {
		t.Fatal("no helper in the container")
	}
	if res := run(t, s, "sh", "-c", "cat /.trio/init > /workspace/direct"); res.ExitCode == 0 {
		t.Fatal("a command read the helper directly")
	}
	res := run(t, s, "sh", "-c", "go build -o /tmp/tracer ./tracer && /tmp/tracer read /workspace/dump")
	t.Logf("tracer: %s", out(res))
	dump, _ := os.ReadFile(filepath.Join(ws, "dump"))
	helper, err := os.ReadFile(s.helper)
	if err != nil {
		t.Fatal(err)
	}
	// The first segment maps file offset 0 at 0x400000, the text
	// segment file offset 0x2000 at 0x402000: memory and file agree.
	const from, to = 0x2000, 0x12000
	if len(dump) >= to && len(helper) >= to && bytes.HasPrefix(dump, []byte("\x7fELF")) && bytes.Equal(dump[from:to], helper[from:to]) {
		t.Errorf("a command read %d bytes of the execute-only helper (the trio executable) into the workspace, through ptrace of a traced exec", len(dump))
	} else if len(dump) > 0 {
		t.Errorf("a command got %d bytes out of the helper's memory (not matched to the file)", len(dump))
	}
}

// The same tracer skips the gate's exit_group in confine's init: os.Exit
// returns, and the program's main runs from /.trio/init with the
// Worker's arguments (here the test binary's -test.list, which prints
// this package's tests). The premise: untraced, the helper refuses.
func TestReviewTrustedPtraceRunsHelperMain(t *testing.T) {
	if os.Getenv("GOARCH") != "" && os.Getenv("GOARCH") != "amd64" {
		t.Skip("the tracer's registers are amd64's")
	}
	ws := t.TempDir()
	sandboxtest.WriteFiles(t, ws, map[string]string{"go.mod": "module m\n\ngo 1.21\n", "tracer/main.go": tracer})
	s := newSandbox(t, sandbox.RunSpec{Workspace: ws})
	if res := run(t, s, "/.trio/init", "-test.list=TestHelperRunsNoMain"); res.ExitCode != 125 || strings.Contains(res.Stdout, "TestHelperRunsNoMain") {
		t.Fatalf("untraced, the helper did not refuse (the premise): %+v", res)
	}
	res := run(t, s, "sh", "-c", "go build -o /tmp/tracer ./tracer && /tmp/tracer main -test.list=TestHelperRunsNoMain")
	if strings.Contains(res.Stdout, "SKIPPED exit_group") && strings.Contains(res.Stdout, "TestHelperRunsNoMain") {
		t.Errorf("the helper ran the program's main under a tracer that skipped the gate's exit:\n%s", out(res))
	} else {
		t.Logf("tracer: %s", out(res))
	}
}

// nestTmp is the shell expression of the TMPDIR runNest gives the test
// binary of package folder dir (in the container) named bin: a fixed
// name under /tmp, which the Worker's ordinary commands share.
func nestTmp(dir, bin string) string {
	return `/tmp/trio-test-$(printf '` + dir + `\000/` + bin + `' | sha256sum | cut -c1-16)`
}

// The nest's TMPDIR is /tmp/trio-test-<hash of the package folder and
// the binary's name>, made with os.MkdirAll and given to Landlock by
// path: both follow a symlink. An ordinary command (same uid, same /tmp:
// the container lives on between commands) plants that name as a symlink
// to /workspace first, and the next trusted build's test binary may write
// the whole workspace (Landlock's rule lands on the symlink's target).
// The premise: without the symlink the same write is refused.
func TestReviewTrustedNestTmpSymlink(t *testing.T) {
	sb, ws, _ := trustedOpener(t, map[string]string{
		"go.mod": "module m\n\ngo 1.21\n",
		"p/p.go": "package p\n",
		"p/p_test.go": `package p

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	for _, p := range []string{"/workspace/direct", filepath.Join(os.Getenv("TMPDIR"), "viatmp")} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err == nil {
			fmt.Println("WROTE", p)
		}
	}
}
`})
	s := sb.(*Sandbox)
	res := run(t, s, "go", "test", "-count=1", "-v", "./p")
	if res.ExitCode != 0 || !strings.Contains(res.Stdout, "WROTE /tmp/") || strings.Contains(res.Stdout, "WROTE /workspace") {
		t.Fatalf("premise: the nest did not hold without the symlink: %s", out(res))
	}
	if res := run(t, s, "sh", "-c", "t="+nestTmp("/workspace/p", "p.test")+"; rm -rf $t && ln -s /workspace $t"); res.ExitCode != 0 {
		t.Fatalf("plant: %s", out(res))
	}
	res = run(t, s, "go", "test", "-count=1", "-v", "./p")
	t.Logf("%s", out(res))
	if _, err := os.Stat(filepath.Join(ws, "viatmp")); err == nil {
		t.Errorf("a trusted build's test binary wrote the workspace through a TMPDIR symlink planted by an ordinary command:\n%s", out(res))
	}
}

// The false pass the TMPDIR symlink buys. Package b is wrong (B returns
// 2, its test wants 1); package a imports b, and a's test (run through
// the nest, whose TMPDIR the Worker pointed at /workspace) rewrites
// b/b.go to the right code. With -p 1 the go command compiled b for a
// first, so it holds b.go's hash (the wrong code's: cache.FileHash
// remembers a file's hash for the process's life), and then compiles
// b's test variant from the right code under the wrong code's action
// ID: b's test passes and its result is stored for the wrong code. The
// Worker puts the wrong b.go back; after Reset the Critic's go test
// prints "ok m/b (cached)", and a fresh run fails (the premise).
func TestReviewTrustedFalsePassThroughNestTmp(t *testing.T) {
	bad := "package b\n\nfunc B() int { return 2 }\n"
	good := "package b\n\nfunc B() int { return 1 }\n"
	sb, ws, _ := trustedOpener(t, map[string]string{
		"go.mod":      "module m\n\ngo 1.21\n",
		"b/b.go":      bad,
		"b/b_test.go": "package b\n\nimport \"testing\"\n\nfunc TestB(t *testing.T) {\n\tif B() != 1 {\n\t\tt.Fatal(B())\n\t}\n}\n",
		"a/a.go":      "package a\n\nimport \"m/b\"\n\nvar A = b.B\n",
	})
	s := sb.(*Sandbox)
	// a_test.go's literal: a Go string of good.
	sandboxtest.WriteFiles(t, ws, map[string]string{"a/a_test.go": "package a\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestA(t *testing.T) {\n\tos.WriteFile(os.Getenv(\"TMPDIR\")+\"/b/b.go\", []byte(" + goQuote(good) + "), 0o644)\n}\n"})
	if res := run(t, s, "sh", "-c", "t="+nestTmp("/workspace/a", "a.test")+"; rm -rf $t && ln -s /workspace $t"); res.ExitCode != 0 {
		t.Fatalf("plant: %s", out(res))
	}
	res := run(t, s, "go", "test", "-p", "1", "./...")
	t.Logf("Worker's trusted go test:\n%s", out(res))
	sandboxtest.WriteFiles(t, ws, map[string]string{"b/b.go": bad})
	if res := run(t, s, "sh", "-c", "go test -count=1 ./b"); res.ExitCode == 0 {
		t.Fatalf("premise: b's test passes on its own:\n%s", out(res))
	}
	res = reviewCheck(t, s, "go", "test", "./...")
	if strings.Contains(res.Stdout, "ok  \tm/b\t(cached)") {
		t.Errorf("the Critic's check passed b, whose source fails its test, from the store:\n%s", out(res))
	}
	// The compiled package is poisoned too: without the cached result,
	// the check still links the right code for the wrong source.
	if res := reviewCheck(t, s, "go", "test", "-count=1", "./b"); res.ExitCode == 0 {
		t.Errorf("the Critic's go test -count=1 passed b from a compiled package of other sources:\n%s", out(res))
	}
}

func goQuote(s string) string {
	return "\"" + strings.NewReplacer("\\", `\\`, "\"", `\"`, "\n", `\n`, "\t", `\t`).Replace(s) + "\""
}

// TrustedGoWorkspace walks the workspace on the host, and a symlink whose
// target does not resolve there is "dangling: nothing to compile",
// whatever its name. A symlink to /workspace/... dangles on the host and
// resolves in the container: p/v_amd64.s -> /workspace/q/a.txt is an
// assembly file to the go command, and it #includes /workspace/q/v.txt,
// which the go command does not hash. The Worker's trusted go test
// compiles V with VAL 1; the Worker changes v.txt to VAL 2 (the
// premise: a fresh build now fails); the Critic's check reuses the
// package and the result.
func TestReviewTrustedHostDanglingSymlink(t *testing.T) {
	files := map[string]string{
		"go.mod":      "module m\n\ngo 1.21\n",
		"p/p.go":      "package p\n\nfunc V() int\n",
		"p/p_test.go": "package p\n\nimport \"testing\"\n\nfunc TestV(t *testing.T) {\n\tif V() != 1 {\n\t\tt.Fatal(V())\n\t}\n}\n",
		"q/a.txt":     "#include \"textflag.h\"\n#include \"/workspace/q/v.txt\"\n\nTEXT ·V(SB),NOSPLIT,$0-8\n\tMOVQ $VAL, ret+0(FP)\n\tRET\n",
		"q/v.txt":     "#define VAL 1\n",
	}
	ws := t.TempDir()
	sandboxtest.WriteFiles(t, ws, files)
	if err := os.Symlink("/workspace/q/a.txt", filepath.Join(ws, "p", "v_amd64.s")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/workspace/q/a.txt"); err == nil {
		t.Skip("the host has /workspace: the symlink would not dangle")
	}
	s := newSandbox(t, sandbox.RunSpec{Workspace: ws})
	if res := run(t, s, "go", "test", "./..."); res.ExitCode != 0 {
		t.Fatalf("the Worker's trusted go test: %s", out(res))
	}
	sandboxtest.WriteFiles(t, ws, map[string]string{"q/v.txt": "#define VAL 2\n"})
	// New assembler flags for p alone: p is assembled again, with VAL 2.
	if res := run(t, s, "sh", "-c", "go test -count=1 -asmflags=m/p=-D=FRESH ./p"); res.ExitCode == 0 {
		t.Fatalf("premise: with VAL 2 the test passes:\n%s", out(res))
	}
	res := reviewCheck(t, s, "go", "test", "./...")
	if strings.Contains(res.Stdout, "ok  \tm/p\t(cached)") {
		t.Errorf("the Critic's check reused a package compiled from a header that changed since:\n%s", out(res))
	}
}

// go test caches a result with the files the test opened, each known by
// its size, mode and modification time only (cmd/go's hashOpen), not its
// content. The Worker's trusted go test reads testdata/want.txt ("1");
// the Worker writes "2" into it and sets its modification time back (an
// ordinary command could, with touch -d); a fresh run fails. Before
// the change the check passes; after it, the check must not take the old
// result from the go command's cache: a check runs every test again
// (sandbox.CheckEnv's -count=1), and fails.
func TestReviewTrustedTestInputByStat(t *testing.T) {
	sb, ws, _ := trustedOpener(t, map[string]string{
		"go.mod":              "module m\n\ngo 1.21\n",
		"p/p.go":              "package p\n",
		"p/testdata/want.txt": "1",
		"p/p_test.go":         "package p\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestWant(t *testing.T) {\n\tb, _ := os.ReadFile(\"testdata/want.txt\")\n\tif string(b) != \"1\" {\n\t\tt.Fatalf(\"%q\", b)\n\t}\n}\n",
	})
	s := sb.(*Sandbox)
	want := filepath.Join(ws, "p", "testdata", "want.txt")
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(want, old, old); err != nil {
		t.Fatal(err)
	}
	// Set back on the host, that is re-dated by the first trusted build's
	// walk (sandbox.TrustedGoWorkspace); the go command caches no result
	// for an input changed in the last two seconds.
	sandbox.TrustedGoWorkspace(ws)
	time.Sleep(2100 * time.Millisecond)
	if res := run(t, s, "go", "test", "./..."); res.ExitCode != 0 {
		t.Fatalf("the Worker's trusted go test: %s", out(res))
	}
	if res := reviewCheck(t, s, "go", "test", "./..."); res.ExitCode != 0 {
		t.Fatalf("premise: the check passes before the change:\n%s", out(res))
	}
	if res := run(t, s, "sh", "-c", "printf 2 > p/testdata/want.txt && touch -d '@"+strconv.FormatInt(old.Unix(), 10)+"' p/testdata/want.txt && ! go test -count=1 ./p >/dev/null"); res.ExitCode != 0 {
		t.Fatalf("the Worker's change, or the premise (a fresh run fails): %s", out(res))
	}
	res := reviewCheck(t, s, "go", "test", "./...")
	t.Logf("check:\n%s", out(res))
	if strings.Contains(res.Stdout, "(cached)") || res.ExitCode == 0 {
		t.Errorf("the Critic's check reused a result for a test input whose content changed (size and time kept), or passed:\n%s", out(res))
	}
}

// A trusted go build of a main package in a git repository stamps VCS
// information: the go command runs git status in the workspace, and git
// runs the repository's core.fsmonitor hook (or one from ~/.gitconfig in
// HOME, which lives on between commands). Both are the Worker's: the hook
// runs as a child of the go command, outside any Landlock domain, where
// it could write the build's cache (the overlay the run's trusted builds
// keep, or the store's descriptor it had before). It runs go
// test itself, with a -toolexec wrapper that passes -V=full through (so
// every action ID is as without it) and compiles b from the right code
// while the go command hashed the wrong code: the store gets b's test
// result for the wrong code. After Reset the Critic's check prints "ok
// m/b (cached)"; a fresh run fails (the premise).
func TestReviewTrustedGitHookGetsStore(t *testing.T) {
	bad := "package b\n\nfunc B() int { return 2 }\n"
	good := "package b\n\nfunc B() int { return 1 }\n"
	sb, ws, _ := trustedOpener(t, map[string]string{
		"go.mod":      "module m\n\ngo 1.21\n",
		"main.go":     "package main\n\nimport _ \"m/b\"\n\nfunc main() {}\n",
		"b/b.go":      bad,
		"b/b_test.go": "package b\n\nimport \"testing\"\n\nfunc TestB(t *testing.T) {\n\tif B() != 1 {\n\t\tt.Fatal(B())\n\t}\n}\n",
		"good.txt":    good,
		"bad.txt":     bad,
		"tx.sh": `#!/bin/sh
case "$1" in
*/compile) for a; do case "$a" in *b.go)
	cp /workspace/good.txt /workspace/b/b.go; "$@"; s=$?; cp /workspace/bad.txt /workspace/b/b.go; exit $s;; esac; done;;
esac
exec "$@"
`,
		"hook.sh": `#!/bin/sh
[ -e /tmp/hook-done ] && exit 1
touch /tmp/hook-done
{ echo "fd 100: $(readlink /proc/self/fd/100)"; cat /proc/self/attr/current 2>/dev/null; cd /workspace && go test -toolexec=/workspace/tx.sh ./b; } >/workspace/hook.out 2>&1
exit 1
`,
	})
	s := sb.(*Sandbox)
	if res := run(t, s, "sh", "-c", "command -v git || exit 3; chmod +x tx.sh hook.sh && git init -q . && git config core.fsmonitor /workspace/hook.sh"); res.ExitCode != 0 {
		if res.ExitCode == 3 && os.Getenv("CI") != "true" {
			t.Skip("no git in the container")
		}
		t.Fatalf("setup: %s", out(res))
	}
	res := run(t, s, "go", "build", "./...")
	hook, _ := os.ReadFile(filepath.Join(ws, "hook.out"))
	t.Logf("trusted go build: %s\nhook: %s", out(res), hook)
	if len(hook) > 0 {
		t.Errorf("the Worker's git hook ran inside a trusted build:\n%s", hook)
	}
	if res := run(t, s, "sh", "-c", "rm -rf .git; go test -count=1 ./b"); res.ExitCode == 0 {
		t.Fatalf("premise: b's test passes:\n%s", out(res))
	}
	if res := reviewCheck(t, s, "go", "test", "./..."); strings.Contains(res.Stdout, "ok  \tm/b\t(cached)") {
		t.Errorf("the Critic's check passed b, whose source fails its test, from what the hook stored:\n%s", out(res))
	}
}
