package confine

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/trioagent/trio/sandbox/internal/syscallfilter"
)

// The landlock kind's helper has two stages, both this executable started
// through /proc/self/exe with LandlockArg0 as argv[0]:
//
//   - the supervisor (LandlockFlag) becomes a child subreaper, starts the
//     second stage, and when that ends (or on SIGTERM) kills and reaps
//     every process left below it, setsid children included, which the
//     kernel hands to a subreaper. It confines nothing of its own: it is
//     Trio's code, as trio is, and outside every Landlock domain a command
//     can signal (from ABI 6);
//   - the second stage (LandlockExecFlag) confines the thread that execs
//     the command, and only that one (the exec ends the others): no new
//     privileges, the Landlock domain of LandlockSpec with its signal and
//     abstract-socket scope, the seccomp filter, the rlimits, no
//     capability (trio run as root); then it execs the command.
//
// Two stages, not one: the command must start in a domain that no thread
// of its supervisor is in, or it could kill the supervisor (tgkill of
// that thread) and leave its background processes behind. A Go process
// cannot fork without exec, so a domain only the child has needs a
// program of its own between fork and exec: this second stage. Each
// stage restricts single threads (no broadcast to every thread, which
// go-landlock's AllThreads calls make through libcap's psx and which cost
// more than a millisecond each on a loaded machine).
const (
	LandlockArg0     = "trio-landlock-helper"
	LandlockFlag     = "--trio-landlock-init"
	LandlockExecFlag = "--trio-landlock-exec"
)

// LandlockSpec is what the landlock kind's helper applies. Paths are the
// host's: this kind has no mounts.
type LandlockSpec struct {
	// Read are folders and files commands may read and execute (symlinks
	// followed: host toolchain folders such as /bin -> usr/bin).
	Read []string `json:"r,omitempty"`
	// Write are folders (and files) commands may also change, symlinks
	// followed: the sandbox's own HOME, TMPDIR and cache.
	Write []string `json:"w,omitempty"`
	// WriteEntries are workspace entries commands may change, opened
	// without following a symlink; one that is a symlink is skipped.
	WriteEntries []string `json:"we,omitempty"`
	// DevFiles are device files commands may read and write (/dev/null).
	DevFiles []string `json:"dev,omitempty"`
	// NoNetwork denies TCP bind and connect through Landlock (ABI 4) and
	// every socket family but AF_UNIX through seccomp.
	NoNetwork bool     `json:"nonet,omitempty"`
	Rlimits   []Rlimit `json:"rl,omitempty"`
	// Ready, when positive, is a descriptor of the supervisor that the
	// second stage writes "r" to once the command is confined and its
	// program found, just before the exec, which closes it; when the
	// exec fails, the reason follows. A caller that reads it to its end
	// (a started process) knows the walls are up and the program runs.
	// The supervisor hands it to the second stage as descriptor 3 and
	// closes its own.
	Ready int `json:"ready,omitempty"`
}

// LandlockABIMin is the oldest Landlock ABI the landlock kind runs on.
const LandlockABIMin = 1

// Access rights by the ABI that introduced them.
const (
	fsRightsV1 = ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSReadFile | ll.AccessFSReadDir |
		ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeChar | ll.AccessFSMakeDir | ll.AccessFSMakeReg |
		ll.AccessFSMakeSock | ll.AccessFSMakeFifo | ll.AccessFSMakeBlock | ll.AccessFSMakeSym
	fsRead      = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir
	fsFileOnly  = ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSReadFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev
	fsReadWrite = fsRead | ll.AccessFSWriteFile | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeDir |
		ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo | ll.AccessFSMakeSym | ll.AccessFSRefer | ll.AccessFSTruncate
)

// handledFS is every file system right the kernel's ABI knows: a right
// not granted below is denied everywhere.
func handledFS(abi int) uint64 {
	h := uint64(fsRightsV1)
	if abi >= 2 {
		h |= ll.AccessFSRefer
	}
	if abi >= 3 {
		h |= ll.AccessFSTruncate
	}
	if abi >= 5 {
		h |= ll.AccessFSIoctlDev
	}
	return h
}

// LandlockEnforces says what the landlock kind's Landlock domain holds on
// a kernel of ABI abi: the walls that depend on the ABI.
func LandlockEnforces(abi int) (yes, no []string) {
	yes = append(yes, "landlock ABI "+strconv.Itoa(abi)+": reads only the workspace, toolchain and system folders; writes only the workspace (less its read-only paths), its own HOME, TMPDIR and cache")
	if abi < 3 {
		no = append(no, "truncate(2) of readable files: Landlock ABI 3 needed")
	}
	if abi >= 4 {
		yes = append(yes, "no TCP bind or connect (landlock ABI 4)")
	}
	if abi >= 6 {
		yes = append(yes, "signals and abstract UNIX sockets only within the command (landlock ABI 6)")
	} else {
		no = append(no, "signals to this user's other processes and abstract UNIX sockets: Landlock ABI 6 needed; a command can kill its supervisor, and then its background processes outlive it")
	}
	return yes, no
}

// runSupervisor is the first stage (see LandlockArg0). It returns the
// command's exit status, or ExitCode with Marker on stderr when it could
// not start the second stage.
func runSupervisor(specJSON string, argv []string) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, Marker+format+"\n", args...)
		return ExitCode
	}
	if len(argv) < 2 || argv[0] != "--" {
		return fail("usage: %s %s SPEC -- PROGRAM [ARG...]", LandlockArg0, LandlockFlag)
	}
	var spec LandlockSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		return fail("spec: %v", err)
	}
	// Orphans of the command (setsid children whose parent exited) come
	// to this process, not to init, so none escapes the kill below.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fail("subreaper: %v", err)
	}
	// SIGTERM (timeout, cancellation, trio's own death) kills everything.
	// SIGCHLD wakes the loop below to reap.
	stop, chld := make(chan os.Signal, 1), make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	signal.Notify(chld, syscall.SIGCHLD)
	// The second stage gets the ready descriptor as its descriptor 3.
	files, ready := []uintptr{0, 1, 2}, spec.Ready
	if ready > 0 {
		files, spec.Ready = append(files, uintptr(ready)), 3
	}
	next, err := json.Marshal(spec)
	if err != nil {
		return fail("spec: %v", err)
	}
	pid, err := syscall.ForkExec("/proc/self/exe", append([]string{LandlockArg0, LandlockExecFlag, string(next)}, argv...),
		&syscall.ProcAttr{Env: os.Environ(), Files: files})
	if ready > 0 {
		// Only the second stage's copy may say ready; with it gone, the
		// caller reads end of file.
		unix.Close(ready)
	}
	if err != nil {
		return fail("start: %v", err)
	}
	return supervise(pid, stop, chld, fail)
}

// supervise reaps every process below this one until the command's
// (pid) has ended and none is left, killing them all once it has ended
// or a signal on stop came; it returns the command's exit status.
func supervise(pid int, stop, chld <-chan os.Signal, fail func(string, ...any) int) int {
	code, stopping := -1, false
	for {
		for {
			var ws syscall.WaitStatus
			got, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if err != nil { // ECHILD: nothing is left
				if code < 0 {
					return fail("the command's process was lost")
				}
				return code
			}
			if got <= 0 {
				break
			}
			if got == pid {
				code = ws.ExitStatus()
				if ws.Signaled() {
					code = 128 + int(ws.Signal())
				}
			}
		}
		if code >= 0 || stopping {
			killChildren()
		}
		select {
		case <-chld:
		case <-stop:
			stopping = true
		}
	}
}

// killChildren sends SIGKILL to every child of this process; the
// children of those come here when they die (subreaper) and are killed
// on the next round.
func killChildren() {
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join("/proc/self/task", t.Name(), "children"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

// restrictLandlock enforces spec's file system and network rules, and
// the scopes, on the calling thread (locked to it), whose exec passes
// them on; the process's other threads stay as they were.
func restrictLandlock(spec LandlockSpec, abi int) error {
	handled := handledFS(abi)
	attr := ll.RulesetAttr{HandledAccessFS: handled}
	if spec.NoNetwork && abi >= 4 {
		attr.HandledAccessNet = ll.AccessNetBindTCP | ll.AccessNetConnectTCP
	}
	if abi >= 6 {
		attr.Scoped = ll.ScopeAbstractUnixSocket | ll.ScopeSignal
	}
	fd, err := ll.LandlockCreateRuleset(&attr, 0)
	if err != nil {
		return fmt.Errorf("create ruleset: %w", err)
	}
	defer unix.Close(fd)
	add := func(path string, rights uint64, follow bool) error {
		flags := unix.O_PATH | unix.O_CLOEXEC
		if !follow {
			flags |= unix.O_NOFOLLOW
		}
		pfd, err := unix.Open(path, flags, 0)
		if errors.Is(err, unix.ENOENT) {
			return nil // missing on this host, or gone since it was planned
		}
		if err != nil {
			return fmt.Errorf("open %s: %w", path, err)
		}
		defer unix.Close(pfd)
		var st unix.Stat_t
		if err := unix.Fstat(pfd, &st); err != nil {
			return fmt.Errorf("stat %s: %w", path, err)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			return nil // a workspace symlink grants nothing
		case unix.S_IFDIR:
		default:
			rights &= fsFileOnly
		}
		rights &= handled
		if rights == 0 {
			return nil
		}
		if err := ll.LandlockAddPathBeneathRule(fd, &ll.PathBeneathAttr{AllowedAccess: rights, ParentFd: pfd}, 0); err != nil {
			return fmt.Errorf("rule for %s: %w", path, err)
		}
		return nil
	}
	// This executable, so that the go command can start the cache
	// program.
	if err := add("/proc/self/exe", ll.AccessFSExecute|ll.AccessFSReadFile, true); err != nil {
		return err
	}
	if err := add("/proc", fsRead, true); err != nil {
		return err
	}
	for _, p := range spec.Read {
		if err := add(p, fsRead, true); err != nil {
			return err
		}
	}
	for _, p := range spec.Write {
		if err := add(p, fsReadWrite, true); err != nil {
			return err
		}
	}
	for _, p := range spec.WriteEntries {
		if err := add(p, fsReadWrite, false); err != nil {
			return err
		}
	}
	for _, p := range spec.DevFiles {
		if err := add(p, ll.AccessFSReadFile|ll.AccessFSWriteFile, true); err != nil {
			return err
		}
	}
	if err := ll.LandlockRestrictSelf(fd, 0); err != nil {
		return fmt.Errorf("restrict: %w", err)
	}
	return nil
}

// runLandlockExec is the second stage (see LandlockArg0): it returns only
// on failure. Everything it applies binds the thread it runs on, which
// execs the command.
func runLandlockExec(specJSON string, argv []string) int {
	fail := func(code int, format string, args ...any) int {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
		return code
	}
	if len(argv) < 2 || argv[0] != "--" {
		return fail(ExitCode, Marker+"usage: %s %s SPEC -- PROGRAM [ARG...]", LandlockArg0, LandlockExecFlag)
	}
	argv = argv[1:]
	// No new privileges, Landlock and capabilities belong to a thread:
	// they are set on the one that execs. (Init functions run on the main
	// thread, locked to it; this keeps it so.)
	runtime.LockOSThread()
	var spec LandlockSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		return fail(ExitCode, Marker+"spec: %v", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fail(ExitCode, Marker+"no_new_privs: %v", err)
	}
	abi := ABI()
	if abi < LandlockABIMin {
		return fail(ExitCode, Marker+"landlock: not supported by this kernel")
	}
	if err := restrictLandlock(spec, abi); err != nil {
		return fail(ExitCode, Marker+"landlock: %v", err)
	}
	prog, err := syscallfilter.Program(syscallfilter.Options{UnixSocketsOnly: spec.NoNetwork})
	if err == nil {
		err = syscallfilter.Install(prog)
	}
	if err != nil {
		return fail(ExitCode, Marker+"%v", err)
	}
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fail(ExitCode, Marker+"close descriptors: %v", err)
	}
	// Resolved after Landlock, so that a program Landlock would not let
	// run is reported as such.
	path, err := exec.LookPath(argv[0])
	if err != nil {
		code := 126
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, exec.ErrNotFound) {
			code = 127
		}
		return fail(code, "trio: cannot run %s: %v", argv[0], err)
	}
	for _, rl := range spec.Rlimits {
		lim := unix.Rlimit{Cur: rl.Value, Max: rl.Value}
		if err := unix.Setrlimit(rl.Resource, &lim); err != nil {
			return fail(ExitCode, Marker+"rlimit %d: %v", rl.Resource, err)
		}
	}
	if err := dropCapabilities(); err != nil {
		return fail(ExitCode, Marker+"capabilities: %v", err)
	}
	if spec.Ready > 0 {
		// Closed by the exec (close-on-exec, above): the caller reads
		// "r" and then end of file once the program runs, or what
		// follows the "r" when it could not be run.
		if _, err := unix.Write(spec.Ready, []byte{'r'}); err != nil {
			return fail(ExitCode, Marker+"ready: %v", err)
		}
	}
	err = syscall.Exec(path, argv, os.Environ())
	code := 126
	if errors.Is(err, fs.ErrNotExist) {
		code = 127
	}
	if spec.Ready > 0 {
		_, _ = unix.Write(spec.Ready, []byte(fmt.Sprintf("cannot run %s: %v", argv[0], err)))
	}
	return fail(code, "trio: cannot run %s: %v", argv[0], err)
}

// dropCapabilities leaves a process of root without any capability, now
// and after exec (securebits keep uid 0 from regaining them), so it can
// neither raise its rlimits nor pass file permissions. An ordinary user's
// process has none to drop.
func dropCapabilities() error {
	if os.Geteuid() != 0 {
		return nil
	}
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("bounding set: %w", err)
		}
	}
	// NOROOT, NO_SETUID_FIXUP and NO_CAP_AMBIENT_RAISE set, KEEP_CAPS
	// clear, each locked.
	const bits = 1<<0 | 1<<1 | 1<<2 | 1<<3 | 1<<5 | 1<<6 | 1<<7
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, bits, 0, 0, 0); err != nil {
		return fmt.Errorf("securebits: %w", err)
	}
	_ = unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}
