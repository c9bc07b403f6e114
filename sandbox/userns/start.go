package userns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/sandbox/internal/confine"
)

var _ sandbox.Starter = (*Sandbox)(nil)

// Start runs cmd confined as Exec's commands are (its own bubblewrap
// sandbox: user, pid, IPC and, without Limits.Network, network
// namespaces; the path rules planned from the workspace now; Landlock,
// seccomp and the rlimits), with its stdin and stdout on pipes to the
// caller and no timeout. It has a pid namespace of its own, so no command
// Exec runs can see, signal or trace it, nor it them. The disk limit is
// watched while it runs, as during a command.
//
// Its program may lie anywhere on the host (see sandbox.ResolveProgram):
// a bare name the commands' PATH does not find is looked up on the
// host's, and the program's folders, and its script's, are bound
// read-only at their host paths for this process alone.
//
// Stop kills the namespace's first process, which takes every process
// in it, and waits until they are gone; so does Close. A killed trio
// takes them too (bwrap dies with it, the namespace with bwrap).
func (s *Sandbox) Start(ctx context.Context, cmd sandbox.Command) (sandbox.Process, error) {
	if len(cmd.Argv) == 0 || cmd.Argv[0] == "" {
		return nil, sandbox.ErrEmptyCommand
	}
	// Serialised with commands: nothing Exec starts runs while this
	// process's layout is planned and mounted.
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, sandbox.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("userns sandbox: start %s: %w", cmd.Argv[0], err)
	}
	fail := func(err error) (sandbox.Process, error) {
		return nil, fmt.Errorf("userns sandbox: start %s: %w", cmd.Argv[0], err)
	}
	wd, err := s.workdir(cmd.Dir)
	if err != nil {
		return fail(err)
	}
	layout, err := sandbox.PlanLayout(s.cfg.Workspace, s.cfg.PathRules)
	if err == nil {
		err = layout.CheckSize()
	}
	if err != nil {
		return fail(err)
	}
	lim := s.cfg.Limits
	spec := s.confineSpec()
	spec.Ready = fdReady
	if lim.Disk > 0 {
		used := s.diskUsed()
		if used >= lim.Disk {
			return fail(fmt.Errorf("the run has already written %s, at limits.disk (%s); delete files to go on", formatBytes(used), formatBytes(lim.Disk)))
		}
		spec.Rlimits = append(spec.Rlimits, confine.Rlimit{Resource: unix.RLIMIT_FSIZE, Value: uint64(lim.Disk - used)})
	}
	// The server's own program and folders, wherever the host has them
	// (nvm's node, a server under /opt), bound read-only at their host
	// paths for this process alone.
	// argv names the sandbox's own paths (/workspace/server) as they are
	// inside: those it shows already.
	own := []string{WorkspaceDir, HomeDir, CacheDir, ModCacheDir, "/proc", "/dev", "/.trio"}
	prog, err := sandbox.ResolveProgram(cmd.Argv, sandbox.EnvValue(sandbox.MergeEnv(s.env, cmd.Env), "PATH"),
		s.cfg.Workspace, append(own, s.cfg.ToolchainDirs...), []string{s.stateDir})
	if err != nil {
		return fail(err)
	}
	for _, d := range prog.Dirs {
		if rel, err := filepath.Rel("/etc", d); err == nil && (rel == "." || filepath.IsLocal(rel)) {
			return fail(fmt.Errorf("the program's folder %s is in /etc, which this sandbox makes of its own: install it elsewhere", d))
		}
	}
	cmd.Argv = prog.Argv
	if len(prog.PathDirs) > 0 {
		path := sandbox.EnvValue(sandbox.MergeEnv(s.env, cmd.Env), "PATH")
		cmd.Env = sandbox.MergeEnv(cmd.Env, []string{"PATH=" + strings.Join(append(prog.PathDirs, path), string(filepath.ListSeparator))})
	}
	args, err := s.bwrapArgs(cmd, wd, layout, spec, false, prog.Dirs...)
	if err != nil {
		return fail(err)
	}
	p := &process{s: s, layout: layout, stderr: sandbox.NewTail(lim.Output), done: make(chan struct{}), pidfd: -1}
	if err := p.start(ctx, args); err != nil {
		return fail(err)
	}
	s.procs.Add(p)
	return p, nil
}

// process is a started process: its bwrap, and a pidfd of its pid
// namespace's first process.
type process struct {
	s *Sandbox
	// layout is the path rules' layout it started with: what they hide
	// and appeared since is removed when it stops, as after a command.
	layout  sandbox.Layout
	stopErr error
	stdin   *os.File
	stdout  *os.File
	stderr  *sandbox.Tail
	c       *exec.Cmd
	// pidfd is the namespace's first process (bwrap's child, its pid 1):
	// when it has exited, every process of the namespace has. -1 once
	// closed; fdMu guards it.
	fdMu   sync.Mutex
	pidfd  int
	began  time.Time
	killed chan struct{} // closed by kill
	kOnce  sync.Once
	done   chan struct{} // closed when it ended and res is set
	res    sandbox.Result
	sOnce  sync.Once
}

func (p *process) start(ctx context.Context, args []string) error {
	inR, inW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return fmt.Errorf("pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return fmt.Errorf("pipe: %w", err)
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW, errR, errW)
		return fmt.Errorf("pipe: %w", err)
	}
	p.stdin, p.stdout, p.killed = inW, outR, make(chan struct{})
	type begun struct {
		c    *exec.Cmd
		info *os.File
		err  error
	}
	ready := make(chan begun, 1)
	waited := make(chan error, 1)
	// bwrap dies with the thread that started it (Pdeathsig): this
	// goroutine keeps that thread until bwrap is reaped.
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		c, info, err := p.s.startBwrap(args, inR, outW, errW, readyW)
		ready <- begun{c, info, err}
		if err == nil {
			waited <- c.Wait()
		}
	}()
	b := <-ready
	closeAll(inR, outW, errW, readyW)
	if b.err != nil {
		closeAll(inW, outR, errR, readyR)
		return b.err
	}
	p.c = b.c
	go func() { io.Copy(p.stderr, errR); errR.Close() }()
	// bwrap writes its info once the sandbox is set up, before the helper
	// runs; without it, the failure is bwrap's.
	var info struct {
		ChildPid int `json:"child-pid"`
	}
	ierr := json.NewDecoder(b.info).Decode(&info)
	b.info.Close()
	if ierr != nil || info.ChildPid <= 0 {
		p.kill()
		<-waited
		closeAll(inW, outR, readyR)
		return fmt.Errorf("bwrap failed before the command started: %s", tail(p.stderr.String()))
	}
	fd := openChild(info.ChildPid, p.c.Process.Pid)
	p.fdMu.Lock()
	p.pidfd = fd
	p.fdMu.Unlock()
	p.began = time.Now()
	go p.wait(waited)
	// bwrap wrote its info before mounting; the helper says when it is
	// confined, so that no layout (nor a Reset) changes under a process
	// still being set up.
	confined := make(chan bool, 1)
	go func() {
		var b [1]byte
		n, _ := readyR.Read(b[:])
		readyR.Close()
		confined <- n == 1
	}()
	select {
	case ok := <-confined:
		if ok {
			return nil
		}
		p.kill()
		<-p.done
		closeAll(inW, outR)
		return fmt.Errorf("the sandbox was not set up: %s", tail(p.stderr.String()))
	case <-ctx.Done():
		p.kill()
		<-p.done
		closeAll(inW, outR)
		return ctx.Err()
	}
}

// openChild is a pidfd of pid, if it is still parent's child, else -1.
func openChild(pid, parent int) int {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return -1
	}
	// The pidfd names this process for good: if its pid is still
	// parent's child now, it is the one bwrap made.
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err == nil {
		if i := strings.LastIndexByte(string(b), ')'); i > 0 {
			if f := strings.Fields(string(b[i+1:])); len(f) > 1 && f[1] == strconv.Itoa(parent) {
				return fd
			}
		}
	}
	unix.Close(fd)
	return -1
}

// wait waits for bwrap, watching the disk limit meanwhile, then for the
// whole namespace to be gone.
func (p *process) wait(waited <-chan error) {
	lim := p.s.cfg.Limits
	var poll <-chan time.Time
	if lim.Disk > 0 {
		poll = time.After(diskPollMin)
	}
	overDisk := false
	var waitErr error
wait:
	for {
		select {
		case waitErr = <-waited:
			break wait
		case <-poll:
			t0 := time.Now()
			if p.s.diskUsed() >= lim.Disk {
				overDisk = true
				p.kill()
				poll = nil
				continue
			}
			poll = time.After(max(diskPollMin, 20*time.Since(t0)))
		}
	}
	// The namespace's first process took every other with it; bwrap may
	// have gone first (killed): end the namespace and wait for it.
	p.endNamespace()
	code := exitCode(p.c.ProcessState)
	select {
	case <-p.killed:
		code = -1
	default:
		if ws, ok := p.c.ProcessState.Sys().(syscall.WaitStatus); waitErr != nil && ok && ws.Signaled() {
			code = -1
		}
	}
	p.res = sandbox.Result{ExitCode: code, Duration: time.Since(p.began),
		DiskExceeded: overDisk || code == 128+int(syscall.SIGXFSZ)}
	close(p.done)
}

// endNamespace kills the namespace's first process, if it still runs,
// and waits until it has exited: the kernel ends every other process of
// the namespace before its first one.
func (p *process) endNamespace() {
	p.fdMu.Lock()
	fd := p.pidfd
	p.fdMu.Unlock()
	if fd < 0 {
		return
	}
	_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		if _, err := unix.Poll(fds, -1); !errors.Is(err, unix.EINTR) {
			break
		}
	}
	p.fdMu.Lock()
	unix.Close(fd)
	p.pidfd = -1
	p.fdMu.Unlock()
}

// kill kills bwrap and the namespace's first process: every process of
// the namespace dies with it. Both are signalled through pidfds (os.Process
// holds one for bwrap), so a pid reused after they were reaped is never
// hit.
func (p *process) kill() {
	p.kOnce.Do(func() {
		close(p.killed)
		_ = p.c.Process.Kill()
		p.fdMu.Lock()
		if p.pidfd >= 0 {
			_ = unix.PidfdSendSignal(p.pidfd, unix.SIGKILL, nil, 0)
		}
		p.fdMu.Unlock()
	})
}

func (p *process) Stdin() io.WriteCloser { return p.stdin }
func (p *process) Stdout() io.ReadCloser { return p.stdout }
func (p *process) Stderr() string        { return p.stderr.String() }

func (p *process) Wait() (sandbox.Result, error) {
	<-p.done
	return p.res, nil
}

// Stop kills the process and its whole pid namespace, waits until they
// are gone, and closes the pipes. Then, as after a command, what the path
// rules hide and appeared in the workspace while it ran (a .git with a
// hostile config) is removed.
func (p *process) Stop() error {
	p.sOnce.Do(func() {
		p.kill()
		<-p.done
		closeAll(p.stdin, p.stdout)
		// A .git with a hostile config it wrote would act on the host.
		removed, err := sandbox.RemoveNewHidden(p.s.cfg.Workspace, p.s.cfg.PathRules, p.layout)
		if err != nil {
			p.stopErr = fmt.Errorf("userns sandbox: after a started process: %w", err)
		}
		sandbox.NoteRemoved(p.stderr, removed)
		p.s.procs.Remove(p)
	})
	return p.stopErr
}

// stopAll stops every started process (Close).
func (s *Sandbox) stopAll() error { return s.procs.StopAll() }
