package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// defaultStderrTail is what a started process keeps of its stderr when
// Limits.Output is zero.
const defaultStderrTail = 4 << 10

var _ Starter = (*Local)(nil)

// Start starts cmd as a host process in its own process group, with the
// environment and working folder Exec would give it, and its stdin and
// stdout connected to the caller. Like everything Local runs, it is NOT
// isolated: it runs as this user and can do what this user can. It has no
// timeout; Stop, or Close of the sandbox, kills its whole process group
// (a child that makes its own group or session escapes, as with Exec).
// ctx bounds only the start.
func (l *Local) Start(ctx context.Context, cmd Command) (Process, error) {
	if len(cmd.Argv) == 0 || cmd.Argv[0] == "" {
		return nil, ErrEmptyCommand
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("local sandbox: start %s: %w", cmd.Argv[0], err)
	}
	wd, err := l.workdir(cmd.Dir)
	if err != nil {
		return nil, fmt.Errorf("local sandbox: start %s: %w", cmd.Argv[0], err)
	}
	limit := int(l.limits.Output)
	if limit <= 0 {
		limit = defaultStderrTail
	}
	p, err := startProcess(cmd.Argv, wd, MergeEnv(l.env, cmd.Env), limit, l)
	if err != nil {
		return nil, fmt.Errorf("local sandbox: %w", err)
	}
	return p, nil
}

// StartHost starts argv on this machine, outside any sandbox, in dir and
// with exactly env, as Local.Start does: its own process group (killed
// whole by Stop), stdin and stdout on pipes, the last tail bytes of its
// stderr kept (4 KiB when tail is zero). It is for what the user declared
// to run on the host (an MCP server with host: true); nothing confines it.
func StartHost(argv []string, dir string, env []string, tail int) (Process, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, ErrEmptyCommand
	}
	if tail <= 0 {
		tail = defaultStderrTail
	}
	return startProcess(argv, dir, env, tail, nil)
}

// startProcess starts argv in wd with env; l, when not nil, is the Local
// whose Close stops it.
func startProcess(argv []string, wd string, env []string, limit int, l *Local) (*localProcess, error) {
	var err error
	path := argv[0]
	if !strings.Contains(path, "/") {
		if path, err = lookPath(path, EnvValue(env, "PATH")); err != nil {
			return nil, fmt.Errorf("start: %w", err)
		}
	} else if !filepath.IsAbs(path) {
		path = filepath.Join(wd, path)
	}
	p := &localProcess{stderr: NewTail(int64(limit)), done: make(chan struct{}), forget: func() {}}
	var files []*os.File // the child's ends, closed once it started
	closeAll := func(fs ...*os.File) {
		for _, f := range fs {
			f.Close()
		}
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, fmt.Errorf("pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, fmt.Errorf("pipe: %w", err)
	}
	files = []*os.File{inR, outW, errW}
	c := &exec.Cmd{Path: path, Args: argv, Dir: wd, Env: env, Stdin: inR, Stdout: outW, Stderr: errW,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}

	if l != nil {
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			closeAll(append(files, inW, outR, errR)...)
			return nil, ErrClosed
		}
	}
	err = c.Start()
	if l != nil {
		if err == nil {
			if l.procs == nil {
				l.procs = map[*localProcess]bool{}
			}
			l.procs[p] = true
		}
		l.mu.Unlock()
	}
	closeAll(files...)
	if err != nil {
		closeAll(inW, outR, errR)
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	p.stdin, p.stdout, p.pgid, p.start = inW, outR, c.Process.Pid, time.Now()
	if l != nil {
		p.forget = func() {
			l.mu.Lock()
			delete(l.procs, p)
			l.mu.Unlock()
		}
	}
	p.copied = make(chan struct{})
	go func() { defer close(p.copied); io.Copy(p.stderr, errR); errR.Close() }()
	go func() {
		err := c.Wait()
		p.res = Result{ExitCode: c.ProcessState.ExitCode(), Duration: time.Since(p.start)}
		// Stderr() is complete once Wait returns, unless a process that
		// left the group still holds the pipe.
		select {
		case <-p.copied:
		case <-time.After(pipeGrace):
		}
		if err != nil && c.ProcessState == nil {
			p.err = fmt.Errorf("wait %s: %w", argv[0], err)
		}
		close(p.done)
	}()
	return p, nil
}

func (l *Local) stopAll() {
	l.mu.Lock()
	ps := make([]*localProcess, 0, len(l.procs))
	for p := range l.procs {
		ps = append(ps, p)
	}
	l.mu.Unlock()
	for _, p := range ps {
		p.Stop()
	}
}

// localProcess is a process Local.Start started.
type localProcess struct {
	stdin  *os.File
	stdout *os.File
	stderr *Tail
	pgid   int
	start  time.Time
	forget func()

	done   chan struct{} // closed when Wait returned
	copied chan struct{} // closed when stderr reached EOF
	res    Result
	err    error

	stopOnce sync.Once
}

func (p *localProcess) Stdin() io.WriteCloser { return p.stdin }
func (p *localProcess) Stdout() io.ReadCloser { return p.stdout }
func (p *localProcess) Stderr() string        { return p.stderr.String() }

// Wait waits for the process to end; ExitCode is -1 when a signal ended it.
func (p *localProcess) Wait() (Result, error) {
	<-p.done
	return p.res, p.err
}

// Stop kills the process group and waits until no process of it is left
// running, then closes the pipes.
func (p *localProcess) Stop() error {
	p.stopOnce.Do(func() {
		_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
		<-p.done
		waitGroupGone(p.pgid)
		p.stdin.Close()
		p.stdout.Close()
		p.forget()
	})
	return nil
}

// waitGroupGone kills what is left of process group pgid until none of
// its processes runs (zombies waiting for their reaper do not run), for a
// few seconds at most: SIGKILL is not synchronous.
func waitGroupGone(pgid int) {
	for i := 0; i < 500; i++ {
		if !groupRunning(pgid) {
			return
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		time.Sleep(10 * time.Millisecond)
	}
}

// groupRunning reports whether a process of group pgid is alive and not a
// zombie, from /proc.
func groupRunning(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		if state, group, ok := procStat(e.Name()); ok && group == pgid && state != 'Z' && state != 'X' {
			return true
		}
	}
	return false
}

// procStat reads the state and process group of /proc/<pid>/stat.
func procStat(pid string) (state byte, pgid int, ok bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// pid (comm) state ppid pgrp ...; comm may hold spaces and parens.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 {
		return 0, 0, false
	}
	g, err := strconv.Atoi(f[2])
	if err != nil {
		return 0, 0, false
	}
	return f[0][0], g, true
}

// Tail keeps the last bytes written to it: a started process's stderr
// (Process.Stderr). It is safe to read while it is written.
type Tail struct {
	mu  sync.Mutex
	buf []byte
	max int
}

// NewTail keeps limit bytes, 4 KiB when limit is not positive.
func NewTail(limit int64) *Tail {
	if limit <= 0 {
		limit = defaultStderrTail
	}
	return &Tail{max: int(limit)}
}

func (b *Tail) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	if len(p) >= b.max {
		b.buf = append(b.buf[:0], p[len(p)-b.max:]...)
		return n, nil
	}
	if over := len(b.buf) + len(p) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	b.buf = append(b.buf, p...)
	return n, nil
}

func (b *Tail) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
