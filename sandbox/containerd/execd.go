package containerd

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/sandbox/containerd/internal/execd"
	"github.com/trioagent/trio/sandbox/internal/confine"
)

// execServer is the host's end of the container's init when that is the
// exec server (package execd): the executable bound into the container
// and the folder of its socket.
type execServer struct {
	exe string // this executable on the host, bound at execd.Path
	// helper is this executable for commands, execute-only, bound at
	// confine.Path: a trusted build's helpers (see trusted).
	helper string
	ctl    *os.File // the socket's folder, opened O_PATH: dialled through /proc/self/fd
}

// startTimeout bounds the wait for the server to say a command started.
const startTimeout = 30 * time.Second

// execServerCaps are all the server is given: enough to start commands
// as the sandbox user with an OOM score of their own, and CAP_SETPCAP to
// empty the bounding set of the thread that does (see package execd for
// why commands never get any).
// CAP_SYS_RESOURCE is among them only where this process has it: some
// machines' bounding sets lack it, and runc then fails to start init.
func execServerCaps() []string {
	caps := []string{"CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP"}
	if haveCap(unix.CAP_SYS_RESOURCE) {
		caps = append(caps, "CAP_SYS_RESOURCE")
	}
	return caps
}

// haveCap reports whether this process's effective set holds c.
func haveCap(c int) bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[c/32].Effective&(1<<(c%32)) != 0
}

// newExecServer readies the exec server: this executable's copies for
// init and for a trusted build's helpers (see initCopy and helperCopy),
// each box's server then has a socket folder of its own (ctlServer). It
// returns "" when this executable cannot run in the container: with an
// image as the root, a dynamically linked executable would not find its
// libraries there. Then commands go through runc's exec.
// The copies stay while the sandbox holds the returned files open (see
// exeCopy).
func newExecServer(cfg config, initUID uint32) (exe, helper string, held []*os.File, err error) {
	if cfg.noExecServer {
		return "", "", nil, nil
	}
	self, err := os.Executable()
	if err != nil {
		return "", "", nil, nil
	}
	if cfg.RootFS != RootFSHost && !static(self) {
		return "", "", nil, nil
	}
	exe, e, err := initCopy(self, cfg.StateDir, initUID)
	if err != nil {
		return "", "", nil, fmt.Errorf("exec server: %w", err)
	}
	helper, h, err := helperCopy(self, cfg.StateDir)
	if err != nil {
		e.Close()
		return "", "", nil, fmt.Errorf("exec server: %w", err)
	}
	return exe, helper, []*os.File{e, h}, nil
}

// ctlServer is the exec server exe whose socket's folder is dir, made
// here for init's uid alone.
func ctlServer(exe, dir string, initUID uint32) (*execServer, error) {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.Lchown(dir, int(initUID), int(initUID)); err != nil {
		return nil, err
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return &execServer{exe: exe, ctl: os.NewFile(uintptr(fd), dir)}, nil
}

// initCopy is a copy of the executable at self in stateDir that only
// init's uid may read (owned by it, mode 0500): commands must not read it
// (an embedder's program may have keys or configuration compiled in).
// Init must: a process whose program it cannot read is not dumpable from
// the start and cannot open its own /proc files to set itself up.
func initCopy(self, stateDir string, initUID uint32) (string, *os.File, error) {
	return exeCopy(self, stateDir, fmt.Sprintf("init-%d", initUID), int(initUID), 0o500)
}

// helperCopy is a copy of the executable at self in stateDir that
// everyone may execute and nobody but root may read (owned by root, mode
// 0111): the helpers of a trusted build (package confine) run from it as
// the sandbox user, who must not read the program (see initCopy). The
// helper refuses to run the program's main (confine's init).
func helperCopy(self, stateDir string) (string, *os.File, error) {
	return exeCopy(self, stateDir, "helper", 0, 0o111)
}

// exeCopy is a copy of the executable at self in stateDir named after
// name, owned by uid with mode, and the copy opened with a shared lock,
// which the caller holds while it may start containers that bind it. The
// copy is made once per executable (named by its size and modification
// time), and shared by the sandboxes of this host; the state folder is
// root's alone. Copies of other executables that no sandbox holds (an
// earlier trio's, a rebuilt test binary's) are removed.
func exeCopy(self, stateDir, name string, uid int, mode fs.FileMode) (string, *os.File, error) {
	for range 3 {
		dst, err := makeCopy(self, stateDir, name, uid, mode)
		if err != nil {
			return "", nil, err
		}
		f, err := os.Open(dst)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed by another sandbox's pruning meanwhile
		} else if err != nil {
			return "", nil, err
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_SH); err != nil {
			f.Close()
			return "", nil, err
		}
		held, herr := f.Stat()
		now, nerr := os.Stat(dst)
		if herr == nil && nerr == nil && os.SameFile(held, now) {
			pruneCopies(stateDir, name, dst)
			return dst, f, nil
		}
		f.Close()
	}
	return "", nil, fmt.Errorf("copy %s: removed while it was made", self)
}

// pruneCopies removes stateDir's copies named after name but for keep
// that no sandbox holds (see exeCopy).
func pruneCopies(stateDir, name, keep string) {
	old, _ := filepath.Glob(filepath.Join(stateDir, name+"-*"))
	for _, p := range old {
		if p == keep {
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
			os.Remove(p)
		}
		f.Close()
	}
}

// makeCopy makes exeCopy's copy unless it is there.
func makeCopy(self, stateDir, name string, uid int, mode fs.FileMode) (string, error) {
	st, err := os.Stat(self)
	if err != nil {
		return "", err
	}
	dst := filepath.Join(stateDir, fmt.Sprintf("%s-%d-%d", name, st.Size(), st.ModTime().UnixNano()))
	if got, err := os.Stat(dst); err == nil && got.Size() == st.Size() && got.Mode().Perm() == mode {
		return dst, nil
	}
	src, err := os.Open(self)
	if err != nil {
		return "", err
	}
	defer src.Close()
	tmp, err := os.CreateTemp(stateDir, "."+name+"-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	_, err = io.Copy(tmp, src)
	if err == nil {
		err = tmp.Chown(uid, uid)
	}
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	// Atomic: a sandbox starting meanwhile sees the whole copy or none.
	return dst, os.Rename(tmp.Name(), dst)
}

// static reports whether the ELF file at path needs no dynamic loader.
func static(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false
		}
	}
	return true
}

func (e *execServer) close() {
	if e != nil && e.ctl != nil {
		e.ctl.Close()
	}
}

// args is the container's init command line.
func (e *execServer) args() []string {
	return []string{execd.Path, execd.Flag, aliveDir + "/" + aliveFIFO}
}

// mounts bind the executable and the socket's folder into the container.
func (e *execServer) mounts() []specs.Mount {
	ms := []specs.Mount{
		{Destination: execd.Path, Type: "bind", Source: e.exe, Options: []string{"bind", "ro", "nosuid", "nodev"}},
		{Destination: execd.CtlDir, Type: "bind", Source: e.ctl.Name(), Options: []string{"bind", "rw", "nosuid", "nodev", "noexec"}},
	}
	if e.helper != "" {
		ms = append(ms, specs.Mount{Destination: confine.Path, Type: "bind", Source: e.helper, Options: []string{"bind", "ro", "nosuid", "nodev"}})
	}
	return ms
}

// dial connects to the server, waiting while a container that just
// started has not yet listened. The socket's path goes through this
// process's descriptor of its folder, so its length is never a problem.
func (s *Sandbox) dialExecServer() (*net.UnixConn, error) {
	return s.execd.dial(s.initAlive)
}

// dial connects to the server whose container's init is alive.
func (e *execServer) dial(alive func() bool) (*net.UnixConn, error) {
	addr := &net.UnixAddr{Net: "unix", Name: "/proc/self/fd/" + strconv.Itoa(int(e.ctl.Fd())) + "/" + execd.Socket}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialUnix("unix", nil, addr)
		if err == nil {
			return c, nil
		}
		if !errors.Is(err, syscall.ENOENT) && !errors.Is(err, syscall.ECONNREFUSED) {
			return nil, err
		}
		if !alive() {
			return nil, errors.New("the container's init exited")
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the container's exec server did not listen: %w", err)
		}
		time.Sleep(time.Millisecond)
	}
}

// startExecd starts cmd through the container's exec server: the command
// is a child of init, forked inside the container, with its stdout and
// stderr on pipes this process reads. A command that could not start
// comes back as a Result (126 or 127).
func (s *Sandbox) startExecd(cmd sandbox.Command, cwd string, trusted bool, stdout, stderr *sandbox.CappedBuffer) (*proc, *sandbox.Result, error) {
	fail := func(err error) (*proc, *sandbox.Result, error) {
		said := ""
		if !s.initAlive() {
			said = s.initSaid()
		}
		return nil, nil, fmt.Errorf("containerd sandbox: start %s: %w%s", cmd.Argv[0], err, said)
	}
	c, err := s.dialExecServer()
	if err != nil {
		return fail(err)
	}
	outR, outW, err := pipe()
	if err != nil {
		c.Close()
		return fail(err)
	}
	errR, errW, err := pipe()
	if err != nil {
		c.Close()
		outR.Close()
		unix.Close(outW)
		return fail(err)
	}
	req := execd.Request{Argv: cmd.Argv, Env: s.commandEnv(cmd), Dir: cwd, UID: s.uid, GID: s.gid}
	if trusted {
		req.Env = s.trustedEnv(cmd)
	}
	// The server answers at once (a fork); a server that does not is
	// wedged, and waiting longer would outlast every timeout.
	c.SetDeadline(time.Now().Add(startTimeout))
	err = execd.WriteRequest(c, req, outW, errW)
	// The command holds the write ends now (or never will): the reads end
	// when its processes are gone.
	unix.Close(outW)
	unix.Close(errW)
	var copies sync.WaitGroup
	copies.Add(2)
	go func() { io.Copy(stdout, outR); copies.Done() }()
	go func() { io.Copy(stderr, errR); copies.Done() }()
	release := func() {
		c.Close()
		outR.Close()
		errR.Close()
	}
	waitOut := func(grace time.Duration) {
		done := make(chan struct{})
		go func() { copies.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(grace):
			outR.Close()
			errR.Close()
			<-done
		}
	}
	if errors.Is(err, execd.ErrTooLarge) {
		release()
		fmt.Fprintf(stderr, "trio: cannot run %s: %v\n", cmd.Argv[0], err)
		return nil, &sandbox.Result{ExitCode: 126}, nil
	}
	if err != nil {
		release()
		return fail(err)
	}
	dec := json.NewDecoder(c)
	var first execd.Reply
	if err := dec.Decode(&first); err != nil {
		release()
		return fail(fmt.Errorf("the exec server: %w", err))
	}
	if !first.Started {
		waitOut(ioGrace)
		release()
		if first.Code == 0 {
			return fail(fmt.Errorf("the exec server: %s", first.Error))
		}
		fmt.Fprintf(stderr, "trio: cannot run %s: %s\n", cmd.Argv[0], first.Error)
		return nil, &sandbox.Result{ExitCode: first.Code}, nil
	}
	c.SetDeadline(time.Time{})
	exit := make(chan exitStatus, 1)
	go func() {
		var last execd.Reply
		if err := dec.Decode(&last); err != nil || !last.Exited {
			// The server went away mid-command: init died (the kernel's
			// OOM killer picked it), and every process with it.
			exit <- exitStatus{code: 128 + int(syscall.SIGKILL), initDied: true}
			return
		}
		exit <- exitStatus{code: last.Status}
	}()
	return &proc{exit: exit, waitIO: waitOut, release: release}, nil, nil
}

// pipe makes a pipe whose read end this process polls and whose write end,
// left blocking, goes to a command: a command must not find its stdout
// non-blocking (writes would fail with EAGAIN on a full pipe).
func pipe() (*os.File, int, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, -1, err
	}
	if err := unix.SetNonblock(p[0], true); err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return nil, -1, err
	}
	return os.NewFile(uintptr(p[0]), "|"+strconv.Itoa(p[0])), p[1], nil
}

// initSaid is the end of the init's log, for an error message: ": …" or "".
func (s *Sandbox) initSaid() string { return said(s.initLog()) }

// said is the end of the log at path, for an error message: ": …" or "".
func said(path string) string {
	b, _ := os.ReadFile(path)
	b = bytes.TrimSpace(b)
	if len(b) > 512 {
		b = b[len(b)-512:]
	}
	if len(b) == 0 {
		return ""
	}
	return ": " + string(b)
}
