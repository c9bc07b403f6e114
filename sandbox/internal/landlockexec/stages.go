package landlockexec

import (
	"errors"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"unsafe"
)

// Linux constants this package needs, which syscall lacks (same numbers
// on every architecture: the generic system call table).
const (
	sysCloseRange         = 436
	sysLandlockCreate     = 444
	sysLandlockAddRule    = 445
	sysLandlockRestrict   = 446
	landlockVersion       = 1 // LANDLOCK_CREATE_RULESET_VERSION
	landlockPathBeneath   = 1
	prSetNoNewPrivs       = 38
	prSetChildSubreaper   = 36
	prSetSeccomp          = 22
	seccompModeFilter     = 2
	prCapbsetDrop         = 24
	prSetSecurebits       = 28
	prCapAmbient          = 47
	prCapAmbientClearAll  = 4
	closeRangeCloexec     = 1 << 2
	capabilityV3          = 0x20080522
	oPath                 = 0x200000
	accessNetBindTCP      = 1 << 0
	accessNetConnectTCP   = 1 << 1
	scopeAbstractUnixSock = 1 << 0
	scopeSignal           = 1 << 1
)

// File system access rights (Landlock ABI 1, then the ABI that added each).
const (
	fsExecute    = 1 << 0
	fsWriteFile  = 1 << 1
	fsReadFile   = 1 << 2
	fsReadDir    = 1 << 3
	fsRemoveDir  = 1 << 4
	fsRemoveFile = 1 << 5
	fsMakeChar   = 1 << 6
	fsMakeDir    = 1 << 7
	fsMakeReg    = 1 << 8
	fsMakeSock   = 1 << 9
	fsMakeFifo   = 1 << 10
	fsMakeBlock  = 1 << 11
	fsMakeSym    = 1 << 12
	fsRefer      = 1 << 13 // ABI 2
	fsTruncate   = 1 << 14 // ABI 3
	fsIoctlDev   = 1 << 15 // ABI 5

	fsRightsV1 = fsExecute | fsWriteFile | fsReadFile | fsReadDir | fsRemoveDir | fsRemoveFile | fsMakeChar |
		fsMakeDir | fsMakeReg | fsMakeSock | fsMakeFifo | fsMakeBlock | fsMakeSym
	fsRead      = fsExecute | fsReadFile | fsReadDir
	fsFileOnly  = fsExecute | fsWriteFile | fsReadFile | fsTruncate | fsIoctlDev
	fsReadWrite = fsRead | fsWriteFile | fsRemoveDir | fsRemoveFile | fsMakeDir | fsMakeReg | fsMakeSock |
		fsMakeFifo | fsMakeSym | fsRefer | fsTruncate
)

// ABI is the kernel's Landlock ABI version, 0 without Landlock.
func ABI() int {
	v, _, errno := syscall.Syscall(sysLandlockCreate, 0, 0, landlockVersion)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// handledFS is every file system right the kernel's ABI knows: a right
// not granted below is denied everywhere.
func handledFS(abi int) uint64 {
	h := uint64(fsRightsV1)
	if abi >= 2 {
		h |= fsRefer
	}
	if abi >= 3 {
		h |= fsTruncate
	}
	if abi >= 5 {
		h |= fsIoctlDev
	}
	return h
}

func prctl(option, arg2, arg3 uintptr) error {
	_, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, option, arg2, arg3, 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

func fail(code int, msg string) int {
	os.Stderr.WriteString(msg + "\n")
	return code
}

// runSupervisor is the first stage. It returns the command's exit status,
// or ExitCode with Marker on stderr when it could not start the second
// stage.
func runSupervisor(args []string) int {
	spec, argv, err := parse(args)
	if err != nil {
		return fail(ExitCode, Marker+"usage: "+Arg0+" "+SupervisorFlag+" SPEC... -- PROGRAM [ARG...]: "+err.Error())
	}
	// Orphans of the command (setsid children whose parent exited) come
	// to this process, not to init, so none escapes the kill below.
	if err := prctl(prSetChildSubreaper, 1, 0); err != nil {
		return fail(ExitCode, Marker+"subreaper: "+err.Error())
	}
	// SIGTERM (timeout, cancellation, trio's own death) kills everything.
	// SIGCHLD wakes the loop below to reap.
	stop, chld := make(chan os.Signal, 1), make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	signal.Notify(chld, syscall.SIGCHLD)
	// The second stage gets the ready or the request descriptor as its
	// descriptor 3.
	files, ready, request := []uintptr{0, 1, 2}, spec.Ready, spec.Request
	switch {
	case ready > 0 && request > 0:
		return fail(ExitCode, Marker+"usage: both ready and req")
	case ready > 0:
		files, spec.Ready = append(files, uintptr(ready)), 3
	case request > 0:
		files, spec.Request = append(files, uintptr(request)), 3
	}
	pid, err := syscall.ForkExec("/proc/self/exe", append([]string{Arg0, ExecFlag}, spec.Args(argv)...),
		&syscall.ProcAttr{Env: os.Environ(), Files: files})
	if ready > 0 {
		// Only the second stage's copy may say ready; with it gone, the
		// caller reads end of file.
		syscall.Close(ready)
	}
	if request > 0 {
		syscall.Close(request)
	}
	if err != nil {
		return fail(ExitCode, Marker+"start: "+err.Error())
	}
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
					return fail(ExitCode, Marker+"the command's process was lost")
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
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		pid := 0
		for _, c := range append(b, ' ') {
			if c >= '0' && c <= '9' {
				pid = pid*10 + int(c-'0')
				continue
			}
			if pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			pid = 0
		}
	}
}

// runExec is the second stage: it returns only on failure. Everything it
// applies binds the thread it runs on, which execs the command.
func runExec(args []string) int {
	spec, argv, err := parse(args)
	if err != nil {
		return fail(ExitCode, Marker+"usage: "+Arg0+" "+ExecFlag+" SPEC... -- PROGRAM [ARG...]: "+err.Error())
	}
	env := os.Environ()
	if spec.Request > 0 {
		// Started ahead of its command: wait for it, then go on as
		// one started with it.
		var dir string
		if dir, env, spec, argv, err = readRequest(spec.Request); err != nil {
			return fail(ExitCode, Marker+"request: "+err.Error())
		}
		if err := syscall.Chdir(dir); err != nil {
			return fail(126, "trio: cannot run "+argv[0]+": working directory "+dir+": "+err.Error())
		}
	}
	// No new privileges, Landlock, seccomp and capabilities belong to a
	// thread: they are set on the one that execs. (Init functions run on
	// the main thread, locked to it; this keeps it so.)
	runtime.LockOSThread()
	if err := prctl(prSetNoNewPrivs, 1, 0); err != nil {
		return fail(ExitCode, Marker+"no_new_privs: "+err.Error())
	}
	abi := ABI()
	if abi < 1 {
		return fail(ExitCode, Marker+"landlock: not supported by this kernel")
	}
	if err := restrict(spec, abi); err != nil {
		return fail(ExitCode, Marker+"landlock: "+err.Error())
	}
	if len(spec.Filter) == 0 || len(spec.Filter)%8 != 0 {
		return fail(ExitCode, Marker+"seccomp: no filter")
	}
	prog := struct {
		n      uint16
		filter unsafe.Pointer
	}{uint16(len(spec.Filter) / 8), unsafe.Pointer(&spec.Filter[0])}
	if err := prctl(prSetSeccomp, seccompModeFilter, uintptr(unsafe.Pointer(&prog))); err != nil {
		return fail(ExitCode, Marker+"seccomp: load filter: "+err.Error())
	}
	runtime.KeepAlive(spec.Filter)
	if _, _, errno := syscall.RawSyscall(sysCloseRange, 3, ^uintptr(0), closeRangeCloexec); errno != 0 {
		return fail(ExitCode, Marker+"close descriptors: "+errno.Error())
	}
	// Resolved after Landlock, so that a program Landlock would not let
	// run is reported as such.
	path, code, err := lookPath(argv[0], envValue(env, "PATH"))
	if err != nil {
		return fail(code, "trio: cannot run "+argv[0]+": "+err.Error())
	}
	for _, rl := range spec.Rlimits {
		lim := syscall.Rlimit{Cur: rl.Value, Max: rl.Value}
		if err := syscall.Setrlimit(rl.Resource, &lim); err != nil {
			return fail(ExitCode, Marker+"rlimit "+itoa(uint64(rl.Resource))+": "+err.Error())
		}
	}
	if err := dropCapabilities(); err != nil {
		return fail(ExitCode, Marker+"capabilities: "+err.Error())
	}
	if spec.Ready > 0 {
		// Closed by the exec (close-on-exec, above): the caller reads
		// "r" and then end of file once the program runs, or what
		// follows the "r" when it could not be run.
		if _, err := syscall.Write(spec.Ready, []byte{'r'}); err != nil {
			return fail(ExitCode, Marker+"ready: "+err.Error())
		}
	}
	err = syscall.Exec(path, argv, env)
	code = 126
	if errors.Is(err, syscall.ENOENT) {
		code = 127
	}
	if spec.Ready > 0 {
		_, _ = syscall.Write(spec.Ready, []byte("cannot run "+argv[0]+": "+err.Error()))
	}
	return fail(code, "trio: cannot run "+argv[0]+": "+err.Error())
}

// readRequest reads the command from descriptor fd to its end, and
// closes it.
func readRequest(fd int) (dir string, env []string, spec Spec, argv []string, err error) {
	var b []byte
	buf := make([]byte, 64<<10)
	for {
		n, err := syscall.Read(fd, buf)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return "", nil, spec, nil, err
		}
		if n == 0 {
			break
		}
		b = append(b, buf[:n]...)
	}
	syscall.Close(fd)
	return parseRequest(b)
}

// envValue is the value of key in env, the first one as getenv finds.
func envValue(env []string, key string) string {
	for _, e := range env {
		if len(e) > len(key) && e[len(key)] == '=' && e[:len(key)] == key {
			return e[len(key)+1:]
		}
	}
	return ""
}

// lookPath finds prog as the shell would (a name with a slash as it is,
// else in path, the command's $PATH), and the exit status for a
// failure: 127 not found, 126 found but not executable.
func lookPath(prog, path string) (string, int, error) {
	isExec := func(p string) error {
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			return err
		}
		if st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
			return syscall.EISDIR
		}
		return syscall.Access(p, 1) // X_OK
	}
	for i := 0; i < len(prog); i++ {
		if prog[i] == '/' {
			if err := isExec(prog); err != nil {
				if errors.Is(err, syscall.ENOENT) {
					return "", 127, err
				}
				return "", 126, err
			}
			return prog, 0, nil
		}
	}
	var denied error
	start := 0
	for i := 0; i <= len(path); i++ {
		if i < len(path) && path[i] != ':' {
			continue
		}
		dir := path[start:i]
		start = i + 1
		if dir == "" || dir[0] != '/' {
			continue
		}
		p := dir + "/" + prog
		err := isExec(p)
		if err == nil {
			return p, 0, nil
		}
		if !errors.Is(err, syscall.ENOENT) && !errors.Is(err, syscall.ENOTDIR) && denied == nil {
			denied = err
		}
	}
	if denied != nil {
		return "", 126, denied
	}
	return "", 127, errors.New("executable file not found in $PATH")
}

// restrict enforces spec's file system and network rules, and the
// scopes, on the calling thread, whose exec passes them on.
func restrict(spec Spec, abi int) error {
	handled := handledFS(abi)
	attr := struct{ fs, net, scoped uint64 }{fs: handled}
	if spec.NoNetwork && abi >= 4 {
		attr.net = accessNetBindTCP | accessNetConnectTCP
	}
	size := unsafe.Sizeof(attr)
	if abi >= 6 {
		attr.scoped = scopeAbstractUnixSock | scopeSignal
	} else if abi < 4 {
		size = 8 // only handled_access_fs
	} else {
		size = 16
	}
	fd, _, errno := syscall.Syscall(sysLandlockCreate, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return errors.New("create ruleset: " + errno.Error())
	}
	defer syscall.Close(int(fd))
	add := func(path string, rights uint64, follow bool) error {
		flags := oPath | syscall.O_CLOEXEC
		if !follow {
			flags |= syscall.O_NOFOLLOW
		}
		pfd, err := syscall.Open(path, flags, 0)
		if errors.Is(err, syscall.ENOENT) {
			return nil // missing on this host, or gone since it was planned
		}
		if err != nil {
			return errors.New("open " + path + ": " + err.Error())
		}
		defer syscall.Close(pfd)
		var st syscall.Stat_t
		if err := syscall.Fstat(pfd, &st); err != nil {
			return errors.New("stat " + path + ": " + err.Error())
		}
		switch st.Mode & syscall.S_IFMT {
		case syscall.S_IFLNK:
			return nil // a workspace symlink grants nothing
		case syscall.S_IFDIR:
		default:
			rights &= fsFileOnly
		}
		rights &= handled
		if rights == 0 {
			return nil
		}
		// struct landlock_path_beneath_attr is packed: the descriptor at
		// offset 8.
		rule := struct {
			allowed uint64
			fd      int32
			_       [4]byte
		}{allowed: rights, fd: int32(pfd)}
		if _, _, errno := syscall.Syscall6(sysLandlockAddRule, fd, landlockPathBeneath, uintptr(unsafe.Pointer(&rule)), 0, 0, 0); errno != 0 {
			return errors.New("rule for " + path + ": " + errno.Error())
		}
		return nil
	}
	// This executable, so that the go command can start the cache
	// program.
	if err := add("/proc/self/exe", fsExecute|fsReadFile, true); err != nil {
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
		if err := add(p, fsReadFile|fsWriteFile, true); err != nil {
			return err
		}
	}
	if _, _, errno := syscall.RawSyscall(sysLandlockRestrict, fd, 0, 0); errno != 0 {
		return errors.New("restrict: " + errno.Error())
	}
	return nil
}

// dropCapabilities leaves this thread of root without any capability, now
// and after exec (securebits keep uid 0 from regaining them), so it can
// neither raise its rlimits nor pass file permissions. An ordinary user's
// process has none to drop.
func dropCapabilities() error {
	if syscall.Geteuid() != 0 {
		return nil
	}
	for c := uintptr(0); c < 64; c++ {
		if err := prctl(prCapbsetDrop, c, 0); err != nil && !errors.Is(err, syscall.EINVAL) {
			return errors.New("bounding set: " + err.Error())
		}
	}
	// NOROOT, NO_SETUID_FIXUP and NO_CAP_AMBIENT_RAISE set, KEEP_CAPS
	// clear, each locked.
	const bits = 1<<0 | 1<<1 | 1<<2 | 1<<3 | 1<<5 | 1<<6 | 1<<7
	if err := prctl(prSetSecurebits, bits, 0); err != nil {
		return errors.New("securebits: " + err.Error())
	}
	_ = prctl(prCapAmbient, prCapAmbientClearAll, 0)
	hdr := struct {
		version uint32
		pid     int32
	}{version: capabilityV3}
	var data [2]struct{ effective, permitted, inheritable uint32 }
	if _, _, errno := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); errno != 0 {
		return errors.New("capset: " + errno.Error())
	}
	return nil
}
