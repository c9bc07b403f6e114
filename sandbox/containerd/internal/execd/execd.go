// Package execd is the containerd sandbox's init: a small server, the
// container's first process, that starts each command the host asks for.
// Starting a command this way costs a fork and an exec inside the
// container, against runc's exec (a new runc process, a setns into every
// namespace, a round trip through the shim) for every command.
//
// Its guarantees are the ones the shell init it replaces gave:
//   - It reads the run's liveness FIFO and exits when the host's writer is
//     gone, so a killed trio leaves nothing running (pid 1's exit ends the
//     pid namespace).
//   - It runs as a uid no command runs as, so no command can signal or
//     trace it, and it is not dumpable, so /proc/1 tells commands nothing.
//   - It reaps every orphan (pid 1's duty).
//
// Its capabilities are CAP_SETUID and CAP_SETGID, to start commands as
// the sandbox user, CAP_SYS_RESOURCE where the host has it, to fix their
// OOM score where the kernel kills them first (see withOOMScore), and
// CAP_SETPCAP, which the forking thread
// uses to empty its bounding set and then drops. Commands get none: that
// thread's bounding, inheritable and ambient sets are empty, so execve
// leaves the command without any (and no file capabilities apply:
// no_new_privs, nosuid).
//
// The host connects to a UNIX socket in a folder only this uid may enter,
// and the server also checks the peer's credentials: only uid 0, which no
// process in the container has, may start commands.
package execd

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Path is where the sandbox binds the running executable, read-only; Flag
// is the argument that, together with Path as argv[0], turns a process
// into the server, so no ordinary invocation becomes it by accident.
const (
	Path = "/.trio-init"
	Flag = "--trio-containerd-init"
	// CtlDir holds the server's socket, Socket, inside the container.
	CtlDir = "/.trio-ctl"
	Socket = "sock"
)

// MaxRequest bounds a request's size (argv and environment).
const MaxRequest = 16 << 20

// ErrTooLarge is WriteRequest's error for a request past MaxRequest.
var ErrTooLarge = errors.New("command too large")

// Request asks for one command. Its stdout and stderr travel with it as
// descriptors (SCM_RIGHTS), and its stdin when the host sends three
// (stdin first); with two, stdin is /dev/null.
type Request struct {
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir"`
	UID  uint32   `json:"uid"`
	GID  uint32   `json:"gid"`
}

// Reply is sent twice per command: once when it started (Started) or
// could not start (Code 126 or 127 and Error), and once when it ended
// (Exited, with Status as the shell reports it: 128+n for signal n, and
// Signaled then set).
type Reply struct {
	Started  bool   `json:"started,omitempty"`
	Code     int    `json:"code,omitempty"`
	Error    string `json:"error,omitempty"`
	Exited   bool   `json:"exited,omitempty"`
	Status   int    `json:"status,omitempty"`
	Signaled bool   `json:"signaled,omitempty"`
}

// WriteRequest sends req over c with stdout and stderr's descriptors:
// a 4-byte big-endian length, then the JSON, the descriptors riding on
// the first bytes. WriteRequestStdin sends stdin's too.
func WriteRequest(c *net.UnixConn, req Request, stdout, stderr int) error {
	return writeRequest(c, req, stdout, stderr)
}

// WriteRequestStdin is WriteRequest for a command whose stdin is the
// descriptor stdin rather than /dev/null.
func WriteRequestStdin(c *net.UnixConn, req Request, stdin, stdout, stderr int) error {
	return writeRequest(c, req, stdin, stdout, stderr)
}

func writeRequest(c *net.UnixConn, req Request, fds ...int) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if len(body) > MaxRequest {
		return fmt.Errorf("%w: %d bytes of arguments and environment, past %d", ErrTooLarge, len(body), MaxRequest)
	}
	msg := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(body)), uint32(len(body)))
	msg = append(msg, body...)
	n, _, err := c.WriteMsgUnix(msg, unix.UnixRights(fds...), nil)
	if err != nil {
		return err
	}
	if n < len(msg) {
		// Never a write of nothing: a command that already ended may have
		// closed the connection, and that write would fail.
		_, err = c.Write(msg[n:])
	}
	return err
}

// The hook: every binary that links this package is its own server when
// started at Path with Flag (see the package documentation). The argument
// after Flag is the liveness FIFO.
func init() {
	if len(os.Args) == 3 && os.Args[0] == Path && os.Args[1] == Flag {
		os.Exit(serve(os.Args[2]))
	}
}

func serve(fifo string) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "trio-init: "+format+"\n", args...)
		return 1
	}
	// Opened while this process may: a process that is not dumpable
	// cannot open its own /proc files for writing.
	var err error
	if oomScore, err = os.OpenFile("/proc/self/oom_score_adj", os.O_RDWR, 0); err != nil {
		return fail("oom score: %v", err)
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fail("not dumpable: %v", err)
	}
	// Opened before anything else: the host holds the FIFO's writer, so
	// this does not block, and once open, EOF means the host is gone.
	alive, err := os.Open(fifo)
	if err != nil {
		return fail("liveness fifo: %v", err)
	}
	go func() {
		io.Copy(io.Discard, alive)
		os.Exit(0)
	}()
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		return fail("%v", err)
	}
	r := &reaper{waiting: map[int]chan unix.WaitStatus{}, kick: make(chan struct{}, 1)}
	f := &forker{reaper: r, devNull: int(devNull.Fd()), jobs: make(chan job)}
	ready := make(chan error)
	go f.loop(ready)
	if err := <-ready; err != nil {
		return fail("drop capabilities from the forking thread: %v", err)
	}
	go r.loop()
	// An earlier container's server left its socket behind.
	sock := filepath.Join(CtlDir, Socket)
	if err := os.Remove(sock); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fail("%v", err)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return fail("listen: %v", err)
	}
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return fail("accept: %v", err)
			}
			continue
		}
		go f.handle(c)
	}
}

// reaper waits for every child of pid 1: the commands, whose status goes
// to whoever waits for it, and the orphans their processes leave.
type reaper struct {
	mu      sync.Mutex
	waiting map[int]chan unix.WaitStatus
	kick    chan struct{} // a child was started
}

func (r *reaper) loop() {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		switch {
		case errors.Is(err, unix.ECHILD):
			<-r.kick
			continue
		case err != nil:
			continue
		}
		r.mu.Lock()
		ch := r.waiting[pid]
		delete(r.waiting, pid)
		r.mu.Unlock()
		if ch != nil {
			ch <- ws
		}
	}
}

// forker starts commands from one OS thread, the one whose capabilities
// it narrowed (capabilities are per thread).
type forker struct {
	reaper  *reaper
	devNull int
	jobs    chan job
}

type job struct {
	req          Request
	in, out, err int // in is -1 for /dev/null
	done         chan started
}

type started struct {
	wait  chan unix.WaitStatus
	code  int
	error string
}

func (f *forker) loop(ready chan<- error) {
	runtime.LockOSThread() // never unlocked: this thread forks, and only it
	if err := narrowCaps(); err != nil {
		ready <- err
		return
	}
	ready <- nil
	for j := range f.jobs {
		j.done <- f.start(j)
	}
}

// narrowCaps leaves this thread CAP_SETUID, CAP_SETGID and (when it was
// given) CAP_SYS_RESOURCE, see withOOMScore, permitted and effective, and
// nothing else: runc gave it those and CAP_SETPCAP in every set, ambient
// included, so that they survived this program's execve. The bounding set is emptied (CAP_SETPCAP allows that, then goes)
// and the ambient and inheritable sets cleared, so a command execve'd from
// here has no capability in any set.
func narrowCaps() error {
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("bounding set: %w", err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("ambient set: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return err
	}
	keep := data[0].Permitted & (1<<unix.CAP_SETUID | 1<<unix.CAP_SETGID | 1<<unix.CAP_SYS_RESOURCE)
	data = [2]unix.CapUserData{{Effective: keep, Permitted: keep}}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return err
	}
	return nil
}

func (f *forker) start(j job) started {
	prog, code, err := lookPath(j.req.Argv[0], j.req.Env, j.req.Dir)
	if err != nil {
		return started{code: code, error: err.Error()}
	}
	in := f.devNull
	if j.in >= 0 {
		in = j.in
	}
	files := []uintptr{uintptr(in), uintptr(j.out), uintptr(j.err)}
	attr := &syscall.ProcAttr{
		Dir:   j.req.Dir,
		Env:   j.req.Env,
		Files: files,
		Sys: &syscall.SysProcAttr{
			Setsid:     true,
			Credential: &syscall.Credential{Uid: j.req.UID, Gid: j.req.GID, Groups: []uint32{}},
		},
	}
	ch := make(chan unix.WaitStatus, 1)
	r := f.reaper
	// Held across the fork, so the reaper cannot reap the child before it
	// is known.
	r.mu.Lock()
	var pid int
	err = withOOMScore(func() error {
		var err error
		pid, err = syscall.ForkExec(prog, j.req.Argv, attr)
		return err
	})
	if err == nil {
		r.waiting[pid] = ch
	}
	r.mu.Unlock()
	if err != nil {
		msg := err.Error()
		// The fork's error does not say whether chdir or exec failed.
		if st, serr := os.Stat(j.req.Dir); serr != nil {
			msg = fmt.Sprintf("working directory %s: %v", j.req.Dir, serr)
		} else if !st.IsDir() {
			msg = fmt.Sprintf("working directory %s: not a directory", j.req.Dir)
		}
		return started{code: startCode(err), error: msg}
	}
	select {
	case r.kick <- struct{}{}:
	default:
	}
	return started{wait: ch}
}

// withOOMScore runs fork with this process's OOM score adjustment at
// 1000, the most, then puts back what it was: a command inherits it, so
// when the container runs out of memory the kernel kills a command, never
// init (which the host also sets to -1000 where it may). With
// CAP_SYS_RESOURCE the written value is also the floor the child inherits:
// the command cannot lower its score at all. Without it (some machines'
// bounding sets lack it; then the host could not lower init's score
// either) a command may lower its own back to its inherited floor; if that
// lets the kernel pick init, the host reports the command as killed and
// the next command gets a new container.
func withOOMScore(fork func() error) error {
	buf := make([]byte, 16)
	n, err := oomScore.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("oom score: %w", err)
	}
	was := []byte(strings.TrimSpace(string(buf[:n])))
	if _, err := oomScore.WriteAt([]byte("1000"), 0); err != nil {
		return fmt.Errorf("oom score: %w", err)
	}
	ferr := fork()
	if _, err := oomScore.WriteAt(was, 0); err != nil {
		// Init is no longer protected: the next fork must not run.
		fmt.Fprintf(os.Stderr, "trio-init: restore oom score %s: %v\n", was, err)
		os.Exit(1)
	}
	return ferr
}

// oomScore is this process's /proc/self/oom_score_adj, open for reading
// and writing.
var oomScore *os.File

// startCode is the shell's status for a command that could not start:
// 127 when there is no such file, else 126.
func startCode(err error) int {
	if errors.Is(err, unix.ENOENT) {
		return 127
	}
	return 126
}

// lookPath finds name in env's PATH as the shell would (a name with a
// slash is taken as it is).
func lookPath(name string, env []string, dir string) (string, int, error) {
	if strings.Contains(name, "/") {
		return name, 0, nil
	}
	path := "/usr/local/bin:/usr/bin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	denied := false
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, name)
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		st, err := os.Stat(p)
		if err != nil || st.IsDir() {
			continue
		}
		if st.Mode()&0o111 == 0 {
			denied = true
			continue
		}
		return p, 0, nil
	}
	if denied {
		return "", 126, fmt.Errorf("exec: %q: permission denied", name)
	}
	return "", 127, fmt.Errorf("exec: %q: executable file not found in $PATH", name)
}

// handle serves one connection: one command from the host.
func (f *forker) handle(c *net.UnixConn) {
	defer c.Close()
	if !fromHostRoot(c) {
		return
	}
	req, in, out, errFD, err := readRequest(c)
	if err != nil {
		json.NewEncoder(c).Encode(Reply{Code: 126, Error: "bad request: " + err.Error()})
		return
	}
	st := started{code: 126, error: "empty command"}
	if len(req.Argv) > 0 && req.Argv[0] != "" {
		done := make(chan started, 1)
		f.jobs <- job{req: req, in: in, out: out, err: errFD, done: done}
		st = <-done
	}
	// This server's copies of the descriptors go now: the command's
	// output reaches EOF when the command's processes are gone.
	if in >= 0 {
		unix.Close(in)
	}
	unix.Close(out)
	unix.Close(errFD)
	enc := json.NewEncoder(c)
	if st.wait == nil {
		enc.Encode(Reply{Code: st.code, Error: st.error})
		return
	}
	if enc.Encode(Reply{Started: true}) != nil {
		<-st.wait
		return
	}
	ws := <-st.wait
	status := ws.ExitStatus()
	if ws.Signaled() {
		status = 128 + int(ws.Signal())
	}
	enc.Encode(Reply{Exited: true, Status: status, Signaled: ws.Signaled()})
}

// fromHostRoot reports whether the peer is uid 0: the host's trio. No
// process in the container runs as root.
func fromHostRoot(c *net.UnixConn) bool {
	raw, err := c.SyscallConn()
	if err != nil {
		return false
	}
	var cred *unix.Ucred
	raw.Control(func(fd uintptr) {
		cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	return err == nil && cred != nil && cred.Uid == 0
}

// readRequest reads one request and its descriptors: stdout and stderr,
// or stdin, stdout and stderr (in is -1 without stdin).
func readRequest(c *net.UnixConn) (req Request, in, out, errFD int, err error) {
	head := make([]byte, 4)
	oob := make([]byte, unix.CmsgSpace(3*4))
	n, oobn, _, _, err := c.ReadMsgUnix(head, oob)
	if err != nil {
		return req, -1, -1, -1, err
	}
	fds, err := rights(oob[:oobn])
	if err != nil {
		return req, -1, -1, -1, err
	}
	fail := func(err error) (Request, int, int, int, error) {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return req, -1, -1, -1, err
	}
	if len(fds) != 2 && len(fds) != 3 {
		return fail(fmt.Errorf("%d descriptors, want stdout and stderr (and stdin first)", len(fds)))
	}
	if _, err := io.ReadFull(c, head[n:]); err != nil {
		return fail(err)
	}
	size := binary.BigEndian.Uint32(head)
	if size > MaxRequest {
		return fail(fmt.Errorf("request of %d bytes, past %d", size, MaxRequest))
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(c, body); err != nil {
		return fail(err)
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return fail(err)
	}
	in = -1
	if len(fds) == 3 {
		in, fds = fds[0], fds[1:]
	}
	return req, in, fds[0], fds[1], nil
}

func rights(oob []byte) ([]int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	for _, m := range msgs {
		got, err := unix.ParseUnixRights(&m)
		if err != nil {
			return nil, err
		}
		fds = append(fds, got...)
	}
	return fds, nil
}
