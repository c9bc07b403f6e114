package landlock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/sandbox/internal/landlockexec"
)

var _ sandbox.Starter = (*Sandbox)(nil)

// diskPollMin is the shortest interval between two measurements of the
// run's disk use while a started process runs; a walk that takes longer
// stretches it, so measuring costs about a twentieth of the time at most.
const diskPollMin = 100 * time.Millisecond

// Start runs cmd confined as Exec's commands are (Landlock with the path
// rules planned from the workspace now, seccomp, the rlimits, no
// capabilities, the allow-listed environment, a session of its own), with
// its stdin and stdout on pipes to the caller and no timeout. It has a
// HOME, TMPDIR and build cache of its own, which Exec's commands cannot
// reach (nor it theirs), and from Landlock ABI 6 it can signal none of
// their processes, nor they its. The disk limit is watched while it runs.
//
// Its helper is a child subreaper: Stop, Close and trio's own death end
// every process it started, setsid children included, and Stop returns
// once they are gone. Start returns once the walls are up and the program
// found; ctx bounds only that.
//
// Its program may lie anywhere on the host (see sandbox.ResolveProgram):
// a bare name the commands' PATH does not find is looked up on the
// host's, and the program's folders, and its script's, are readable
// (never writable) for this process alone.
func (s *Sandbox) Start(ctx context.Context, cmd sandbox.Command) (sandbox.Process, error) {
	if len(cmd.Argv) == 0 || cmd.Argv[0] == "" {
		return nil, sandbox.ErrEmptyCommand
	}
	// Serialised with commands: nothing Exec runs changes the workspace
	// while this process's rules are planned.
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, sandbox.ErrClosed
	}
	fail := func(err error) (sandbox.Process, error) {
		return nil, fmt.Errorf("landlock sandbox: start %s: %w", cmd.Argv[0], err)
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
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
	if len(layout.Hidden) > 0 {
		return nil, CheckWorkspace(s.cfg.Workspace, s.cfg.PathRules)
	}
	left := int64(-1)
	if lim := s.cfg.Limits; lim.Disk > 0 {
		used := s.diskUsed()
		if used >= lim.Disk {
			return fail(fmt.Errorf("the run has already written %d bytes, at limits.disk (%d); delete files to go on", used, lim.Disk))
		}
		left = lim.Disk - used
	}
	dir, err := os.MkdirTemp(s.stateDir, "started-")
	if err != nil {
		return fail(err)
	}
	f := folders{filepath.Join(dir, "home"), filepath.Join(dir, "tmp"), filepath.Join(dir, "cache")}
	for _, d := range []string{f.home, f.tmp, filepath.Join(f.cache, "go-build")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			removeState(dir)
			return fail(err)
		}
	}
	spec, err := s.spec(layout, left, f)
	if err != nil {
		removeState(dir)
		return fail(err)
	}
	// The server's own program and folders, wherever the host has them
	// (nvm's node, a server under /opt), readable, never writable.
	env := sandbox.MergeEnv(s.commandEnv(f), cmd.Env)
	prog, err := sandbox.ResolveProgram(cmd.Argv, sandbox.EnvValue(env, "PATH"), s.cfg.Workspace, s.cfg.ToolchainDirs, []string{s.stateDir})
	if err != nil {
		removeState(dir)
		return fail(err)
	}
	spec.Read = append(spec.Read, prog.Dirs...)
	if len(prog.PathDirs) > 0 {
		env = sandbox.MergeEnv(env, []string{"PATH=" + strings.Join(append(prog.PathDirs, sandbox.EnvValue(env, "PATH")), string(filepath.ListSeparator))})
	}
	p := &process{s: s, layout: layout, dir: dir, stderr: sandbox.NewTail(s.cfg.Limits.Output), done: make(chan struct{})}
	if err := p.start(ctx, prog.Argv, wd, env, spec); err != nil {
		removeState(dir)
		return fail(err)
	}
	s.started.Add(p)
	return p, nil
}

// diskUsed is what the run has added to the host's disk since the sandbox
// opened: the workspace's growth and the state folder (caches, started
// processes' folders).
func (s *Sandbox) diskUsed() int64 {
	return sandbox.DiskUsage(s.cfg.Workspace) + sandbox.DiskUsage(s.stateDir) - s.diskBase
}

// process is a started process: its helper (the supervisor, a child
// subreaper) and what it left to clean up.
type process struct {
	s      *Sandbox
	layout sandbox.Layout // the rules' layout it started with (see Stop)
	dir    string         // its own HOME, TMPDIR and cache
	c      *exec.Cmd
	stop   context.CancelFunc
	stdin  *os.File
	stdout *os.File
	stderr *sandbox.Tail
	began  time.Time

	killed atomic.Bool   // Stop (or the disk watch) ended it
	done   chan struct{} // closed once the helper is reaped and res set
	res    sandbox.Result
	err    error

	stopOnce sync.Once
	stopErr  error
}

func (p *process) start(ctx context.Context, argv []string, wd string, env []string, spec landlockexec.Spec) error {
	closeAll := func(fs ...*os.File) {
		for _, f := range fs {
			f.Close()
		}
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return err
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return err
	}
	spec.Ready = 3 // ExtraFiles[0]
	// Stop cancels; the helper then gets SIGTERM and kills every process
	// below it, and is killed itself if it has not ended stopGrace later.
	pctx, stop := context.WithCancel(context.Background())
	c := exec.CommandContext(pctx, "/proc/self/exe", append([]string{landlockexec.SupervisorFlag}, spec.Args(argv)...)...)
	c.Args[0] = landlockexec.Arg0
	c.Env, c.Dir = env, wd
	c.Stdin, c.Stdout, c.Stderr, c.ExtraFiles = inR, outW, p.stderr, []*os.File{readyW}
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGTERM}
	c.Cancel = func() error { return c.Process.Signal(syscall.SIGTERM) }
	c.WaitDelay = stopGrace
	p.c, p.stop, p.stdin, p.stdout = c, stop, inW, outR

	// The helper dies with the thread that started it (Pdeathsig): this
	// goroutine keeps that thread until the helper is reaped.
	started := make(chan error, 1)
	waited := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := c.Start()
		started <- err
		if err == nil {
			waited <- c.Wait()
		}
	}()
	err = <-started
	closeAll(inR, outW, readyW)
	if err != nil {
		stop()
		closeAll(inW, outR, readyR)
		return err
	}
	p.began = time.Now()
	go p.wait(waited)

	// The helper writes "r" once the process is confined, and the exec
	// of its program closes the pipe; a failure leaves it empty (the
	// reason is on stderr) or follows the "r".
	confined := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(readyR)
		readyR.Close()
		confined <- string(b)
	}()
	select {
	case got := <-confined:
		if got == "r" {
			return nil
		}
		<-p.done
		p.stop()
		closeAll(inW, outR)
		msg := strings.TrimPrefix(got, "r")
		if msg == "" {
			msg = strings.TrimPrefix(strings.TrimSpace(p.stderr.String()), landlockexec.Marker)
		}
		if msg == "" {
			msg = fmt.Sprintf("its helper exited %d", p.res.ExitCode)
		}
		return fmt.Errorf("not started: %s", msg)
	case <-ctx.Done():
		p.kill()
		<-p.done
		closeAll(inW, outR)
		return ctx.Err()
	}
}

// wait reaps the helper, watching the disk limit meanwhile. The helper
// ends only once every process below it has been killed and reaped.
func (p *process) wait(waited <-chan error) {
	lim := p.s.cfg.Limits
	var poll <-chan time.Time
	if lim.Disk > 0 {
		poll = time.After(diskPollMin)
	}
	overDisk := false
	var err error
wait:
	for {
		select {
		case err = <-waited:
			break wait
		case <-poll:
			t0 := time.Now()
			if p.s.diskUsed() >= lim.Disk {
				overDisk = true
				fmt.Fprintf(p.stderr, "\ntrio: disk limit of %d bytes exceeded: the run's files may take no more\n", lim.Disk)
				p.kill()
				poll = nil
				continue
			}
			poll = time.After(max(diskPollMin, 20*time.Since(t0)))
		}
	}
	// Killed after stopGrace, the helper could not kill what it started:
	// what is left of its session goes (a setsid child escapes this).
	if ws, ok := p.c.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
		_ = syscall.Kill(-p.c.Process.Pid, syscall.SIGKILL)
	}
	code := exitCode(p.c.ProcessState)
	if p.killed.Load() {
		code = -1
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) && !errors.Is(err, exec.ErrWaitDelay) {
		p.err = fmt.Errorf("landlock sandbox: wait: %w", err)
	}
	p.res = sandbox.Result{ExitCode: code, Duration: time.Since(p.began),
		DiskExceeded: overDisk || code == 128+int(syscall.SIGXFSZ)}
	close(p.done)
}

// kill asks the helper to end every process it started (see start).
func (p *process) kill() {
	p.killed.Store(true)
	p.stop()
}

func (p *process) Stdin() io.WriteCloser { return p.stdin }
func (p *process) Stdout() io.ReadCloser { return p.stdout }
func (p *process) Stderr() string        { return p.stderr.String() }

func (p *process) Wait() (sandbox.Result, error) {
	<-p.done
	return p.res, p.err
}

// Stop ends the process and everything it started, waits until they are
// gone, and closes the pipes. Then, as after a command, what the path
// rules hide and appeared in the workspace while it ran (a .git with a
// hostile config) is removed, and so are its own folders.
func (p *process) Stop() error {
	p.stopOnce.Do(func() {
		select {
		case <-p.done:
		default:
			p.kill()
			<-p.done
		}
		p.stdin.Close()
		p.stdout.Close()
		removed, err := sandbox.RemoveNewHidden(p.s.cfg.Workspace, p.s.cfg.PathRules, p.layout)
		if err != nil {
			err = fmt.Errorf("landlock sandbox: after a started process: %w", err)
		}
		sandbox.NoteRemoved(p.stderr, removed)
		p.stopErr = errors.Join(err, removeState(p.dir))
		p.s.started.Remove(p)
	})
	return p.stopErr
}

// stopAll stops every started process (Close).
func (s *Sandbox) stopAll() error { return s.started.StopAll() }
