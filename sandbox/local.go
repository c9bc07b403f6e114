package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// pipeGrace bounds how long Exec waits for output after the command's process
// group is gone; a process that left the group may still hold the pipes.
const pipeGrace = time.Second

// Local runs commands as plain host processes. It does NOT isolate: see the
// package documentation.
//
// A command's environment is exactly: PATH (the host's), HOME (a private
// temporary folder removed by Close), TMPDIR (a folder inside it), TERM=dumb,
// GOTOOLCHAIN=local, PYTHONDONTWRITEBYTECODE=1, GOPATH, GOMODCACHE, GOCACHE
// and GOROOT (the host's Go caches, so builds work offline), the host's LANG,
// LC_ALL, LC_CTYPE, TZ and Go proxy settings when set (see PassEnv), then
// Command.Env.
type Local struct {
	dir    string // absolute, symlinks resolved
	limits Limits
	home   string
	env    []string

	mu     sync.Mutex
	closed bool
	procs  map[*localProcess]bool // Start's, stopped by Close
}

var _ Sandbox = (*Local)(nil)

// NewLocal returns a Local sandbox whose commands run in workspaceDir.
func NewLocal(workspaceDir string, limits Limits) (*Local, error) {
	abs, err := filepath.Abs(workspaceDir)
	if err != nil {
		return nil, fmt.Errorf("local sandbox: workspace %s: %w", workspaceDir, err)
	}
	dir, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("local sandbox: workspace %s: %w", workspaceDir, err)
	}
	if st, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("local sandbox: workspace %s: %w", workspaceDir, err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("local sandbox: workspace %s is not a directory", workspaceDir)
	}
	home, err := os.MkdirTemp("", "trio-home-")
	if err != nil {
		return nil, fmt.Errorf("local sandbox: home: %w", err)
	}
	tmp := filepath.Join(home, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		os.RemoveAll(home)
		return nil, fmt.Errorf("local sandbox: tmp: %w", err)
	}
	return &Local{
		dir:    dir,
		limits: limits,
		home:   home,
		env:    BaseEnv(os.Getenv("PATH"), home, tmp, hostGoEnv()...),
	}, nil
}

// Info reports a non-isolating sandbox working in the host workspace path.
// Its Enforced and NotEnforced list every limit.
func (l *Local) Info() Info {
	lim := l.limits
	var yes, no []string
	if lim.Timeout > 0 {
		yes = append(yes, LimitTimeout+" "+lim.Timeout.String()+" (the command's process group killed)")
	} else {
		no = append(no, LimitTimeout+": no limit set")
	}
	out := lim.Output
	if out <= 0 {
		out = DefaultOutput
	}
	yes = append(yes, LimitOutput+" "+strconv.FormatInt(out, 10)+" bytes per stream")
	no = append(no, LimitMemory+": not enforced by the local kind (no isolation)",
		LimitCPUs+": not enforced by the local kind (no isolation)",
		LimitPids+": not enforced by the local kind (no isolation)",
		LimitDisk+": not enforced by the local kind (no isolation)")
	if lim.Network {
		yes = append(yes, LimitNetwork+": the host's (Limits.Network)")
	} else {
		no = append(no, LimitNetwork+": the host's, whatever the limits say (no isolation)")
	}
	return Info{Kind: LocalKind, Isolated: false, WorkspaceDir: l.dir, Enforced: yes, NotEnforced: no}
}

// Close stops the processes Start started and removes the private HOME.
// Exec and Start fail with ErrClosed afterwards.
func (l *Local) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	l.stopAll()
	return os.RemoveAll(l.home)
}

// Exec runs cmd in its own process group. A timeout kills the whole group
// and is reported as Result.TimedOut; a cancelled ctx kills it too and
// returns ctx's error with the partial Result.
func (l *Local) Exec(ctx context.Context, cmd Command) (Result, error) {
	l.mu.Lock()
	closed := l.closed
	l.mu.Unlock()
	if closed {
		return Result{}, ErrClosed
	}
	if len(cmd.Argv) == 0 || cmd.Argv[0] == "" {
		return Result{}, ErrEmptyCommand
	}
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("local sandbox: %s: %w", cmd.Argv[0], err)
	}
	wd, err := l.workdir(cmd.Dir)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		// Like runc's failed chdir in the containerd sandbox: the
		// command's problem, reported as a result.
		stderr := NewCappedBuffer(l.limits.Output)
		res := notRunnable(stderr, cmd.Argv[0], err)
		res.Stderr = stderr.String()
		return res, nil
	}
	if err != nil {
		return Result{}, err
	}
	timeout := cmd.Timeout
	if timeout <= 0 {
		timeout = l.limits.Timeout
	}
	stdout, stderr := NewCappedBuffer(l.limits.Output), NewCappedBuffer(l.limits.Output)
	start := time.Now()
	res, err := l.run(ctx, cmd, wd, timeout, stdout, stderr)
	res.Duration = time.Since(start)
	res.Stdout, res.StdoutTruncated = stdout.String(), stdout.Truncated()
	res.Stderr, res.StderrTruncated = stderr.String(), stderr.Truncated()
	return res, err
}

func (l *Local) run(ctx context.Context, cmd Command, wd string, timeout time.Duration, stdout, stderr io.Writer) (Result, error) {
	env := MergeEnv(l.env, cmd.Env)
	if cmd.Check {
		env = CheckEnv(env, "")
	}
	// Resolve the program with the sandbox's PATH, not the host's.
	path := cmd.Argv[0]
	if !strings.Contains(path, "/") {
		p, err := lookPath(path, EnvValue(env, "PATH"))
		if err != nil {
			return notRunnable(stderr, cmd.Argv[0], err), nil
		}
		path = p
	} else if !filepath.IsAbs(path) {
		path = filepath.Join(wd, path)
	}
	c := &exec.Cmd{Path: path, Args: cmd.Argv, Dir: wd, Env: env}
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

	outR, outW, err := os.Pipe()
	if err != nil {
		return Result{}, fmt.Errorf("local sandbox: pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return Result{}, fmt.Errorf("local sandbox: pipe: %w", err)
	}
	c.Stdout, c.Stderr = outW, errW
	if err := c.Start(); err != nil {
		outR.Close()
		outW.Close()
		errR.Close()
		errW.Close()
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) || errors.Is(err, exec.ErrNotFound) || errors.Is(err, syscall.ENOEXEC) {
			return notRunnable(stderr, cmd.Argv[0], err), nil
		}
		return Result{}, fmt.Errorf("local sandbox: start %s: %w", cmd.Argv[0], err)
	}
	outW.Close()
	errW.Close()
	pgid := c.Process.Pid
	killGroup := func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) }

	var copies sync.WaitGroup
	copies.Add(2)
	go func() { defer copies.Done(); io.Copy(stdout, outR) }()
	go func() { defer copies.Done(); io.Copy(stderr, errR) }()

	var timedOut, cancelled bool
	var timer <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timer = t.C
	}
	waited := make(chan error, 1)
	go func() { waited <- c.Wait() }()
	var waitErr error
	select {
	case waitErr = <-waited:
	case <-timer:
		timedOut = true
		killGroup()
		waitErr = <-waited
	case <-ctx.Done():
		cancelled = true
		killGroup()
		waitErr = <-waited
	}
	// Background children of a finished command die with it.
	killGroup()

	done := make(chan struct{})
	go func() { copies.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(pipeGrace):
		// A process outside the group holds the pipes; stop reading.
		outR.Close()
		errR.Close()
		<-done
	}
	outR.Close()
	errR.Close()

	res := Result{TimedOut: timedOut, ExitCode: exitCode(c.ProcessState)}
	if waitErr != nil && c.ProcessState == nil {
		return res, fmt.Errorf("local sandbox: wait %s: %w", cmd.Argv[0], waitErr)
	}
	if cancelled {
		return res, fmt.Errorf("local sandbox: %s: %w", cmd.Argv[0], context.Cause(ctx))
	}
	return res, nil
}

// workdir resolves rel inside the workspace, following symlinks, and refuses
// anything that ends up outside it.
func (l *Local) workdir(rel string) (string, error) {
	if rel == "" || rel == "." {
		return l.dir, nil
	}
	if !filepath.IsLocal(rel) {
		return "", fmt.Errorf("local sandbox: dir %q: %w", rel, ErrOutsideWorkspace)
	}
	p, err := filepath.EvalSymlinks(filepath.Join(l.dir, rel))
	if err != nil {
		return "", fmt.Errorf("working directory %s: %w", rel, err)
	}
	if p != l.dir && !strings.HasPrefix(p, l.dir+string(filepath.Separator)) {
		return "", fmt.Errorf("local sandbox: dir %q: %w", rel, ErrOutsideWorkspace)
	}
	if st, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("working directory %s: %w", rel, err)
	} else if !st.IsDir() {
		return "", fmt.Errorf("working directory %s: %w", rel, syscall.ENOTDIR)
	}
	return p, nil
}

// notRunnable is the Result of a program that could not be started, in the
// shell's convention: 127 when not found, 126 when not executable.
func notRunnable(stderr io.Writer, prog string, err error) Result {
	code := 126
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, exec.ErrNotFound) {
		code = 127
	}
	fmt.Fprintf(stderr, "trio: cannot run %s: %v\n", prog, err)
	return Result{ExitCode: code}
}

// exitCode follows the shell: the exit status, or 128+signal when killed.
func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

func lookPath(prog, path string) (string, error) {
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			continue
		}
		p := filepath.Join(d, prog)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%q not found in PATH: %w", prog, exec.ErrNotFound)
}
