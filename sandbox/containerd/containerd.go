package containerd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/trioagent/trio/sandbox"
)

// Labels on every container Trio makes.
const (
	LabelManaged = "trio.managed" // "true"
	LabelRun     = "trio.run"     // RunID
	LabelOwner   = "trio.owner"   // host/pid/starttime of the creating process
	LabelState   = "trio.state"   // the run's state folder on the host
)

// ioGrace bounds the wait for a command's output after its process group
// is gone; a process that escaped the group may hold the pipes.
const ioGrace = time.Second

// Sandbox runs one run's commands in one container. It is safe for
// concurrent use.
type Sandbox struct {
	cfg       Config
	client    *client.Client
	ctx       context.Context // carries the namespace; never cancelled
	container client.Container
	task      client.Task
	stateDir  string
	uid, gid  uint32
	adopt     bool // chown workspace entries to uid before each command
	env       []string
	execs     atomic.Int64
	ooms      atomic.Uint64 // OOM kills seen after the last command

	// ownerUID and ownerGID own the workspace folder at New; with adopt,
	// Close gives them back what uid owns then.
	ownerUID, ownerGID uint32

	mu     sync.Mutex
	closed bool
}

var _ sandbox.Sandbox = (*Sandbox)(nil)

// Available reports whether containerd answers at address ("" = the
// default lookup of Config.Address), for `--sandbox auto`.
func Available(ctx context.Context, address string) error {
	cfg := Config{Address: address}
	from := "config"
	if cfg.Address == "" {
		cfg.Address, from = DefaultAddress, "default"
		if v := os.Getenv(AddressEnv); v != "" {
			cfg.Address, from = v, "$"+AddressEnv
		}
	}
	c, err := connect(ctx, cfg.Address, DefaultNamespace, from)
	if err != nil {
		return err
	}
	return c.Close()
}

func connect(ctx context.Context, address, ns, from string) (*client.Client, error) {
	unavailable := func(err error) error {
		return fmt.Errorf("%w at %s (address from %s): %w; start containerd (`sudo systemctl start containerd` "+
			"or `sudo containerd --address %s`) or point %s at its socket; to run commands without isolation, "+
			"use `--sandbox local` (trio.yaml: `sandbox: local`)",
			ErrUnavailable, address, from, err, address, AddressEnv)
	}
	if st, err := os.Stat(address); err != nil {
		return nil, unavailable(err)
	} else if st.Mode()&os.ModeSocket == 0 {
		return nil, unavailable(errors.New("not a socket"))
	}
	c, err := client.New(address, client.WithDefaultNamespace(ns), client.WithTimeout(5*time.Second))
	if err != nil {
		return nil, unavailable(err)
	}
	vctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := c.Version(vctx); err != nil {
		c.Close()
		return nil, unavailable(err)
	}
	return c, nil
}

// New connects to containerd, removes leftovers of dead runs, and creates
// and starts the run's container.
func New(ctx context.Context, cfg Config) (_ *Sandbox, retErr error) {
	cfg, from, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	c, err := connect(ctx, cfg.Address, cfg.Namespace, from)
	if err != nil {
		return nil, err
	}
	s := &Sandbox{cfg: cfg, client: c, ctx: namespaces.WithNamespace(context.Background(), cfg.Namespace)}
	defer func() {
		if retErr != nil {
			s.teardown()
			c.Close()
		}
	}()
	ctx = namespaces.WithNamespace(ctx, cfg.Namespace)
	if err := removeLeftovers(ctx, c); err != nil {
		return nil, err
	}
	if err := s.pickUser(); err != nil {
		return nil, err
	}
	stateDir := filepath.Join(cfg.StateDir, cfg.RunID)
	if _, err := os.Lstat(stateDir); err == nil {
		return nil, fmt.Errorf("sandbox state %s exists: is run %s still running?", stateDir, cfg.RunID)
	}
	s.stateDir = stateDir // from here on, teardown removes it
	for _, d := range []string{"rootfs", "cache", "fifo"} {
		if err := os.MkdirAll(filepath.Join(s.stateDir, d), 0o755); err != nil {
			return nil, fmt.Errorf("sandbox state: %w", err)
		}
	}
	if err := os.Chown(filepath.Join(s.stateDir, "cache"), int(s.uid), int(s.gid)); err != nil {
		return nil, fmt.Errorf("sandbox cache: %w", err)
	}
	s.env = containerEnv(cfg)

	id := "trio-" + cfg.RunID
	opts, err := s.containerOpts(ctx, id, initArgs)
	if err != nil {
		return nil, err
	}
	s.container, err = c.NewContainer(ctx, id, opts...)
	if err != nil {
		return nil, fmt.Errorf("create container %s: %w", id, err)
	}
	s.task, err = s.container.NewTask(ctx, cio.NullIO)
	if err != nil {
		return nil, fmt.Errorf("create task %s: %w", id, err)
	}
	if err := s.task.Start(ctx); err != nil {
		return nil, fmt.Errorf("start task %s: %w", id, err)
	}
	s.ooms.Store(s.oomKills(ctx))
	return s, nil
}

// containerEnv is the allow-listed environment of every command: see
// sandbox.BaseEnv, plus the Go and Python settings for the container's
// folders; without network, module and package downloads are off so that
// they fail fast.
func containerEnv(cfg Config) []string {
	extra := []string{"GOCACHE=" + CacheDir + "/go-build", "XDG_CACHE_HOME=" + CacheDir, "GOPATH=" + HomeDir + "/go",
		"GOTELEMETRY=off"}
	if cfg.ModCache != "none" {
		extra = append(extra, "GOMODCACHE="+ModCacheDir)
	}
	if cfg.Limits.Network {
		extra = append(extra, "GOPROXY=https://proxy.golang.org,direct")
	} else {
		extra = append(extra, "GOPROXY=off", "PIP_NO_INDEX=1")
	}
	return sandbox.BaseEnv("", HomeDir, "", extra...)
}

// Info reports an isolating sandbox whose workspace is /workspace.
func (s *Sandbox) Info() sandbox.Info {
	return sandbox.Info{Kind: "containerd", Isolated: true, WorkspaceDir: WorkspaceDir}
}

// ID is the container's id in containerd.
func (s *Sandbox) ID() string { return s.container.ID() }

// Close kills and deletes the task and the container, and removes the run's
// state folder. When the sandbox adopted a root-owned workspace (see the
// package documentation), every workspace entry then owned by the sandbox
// user goes back to the workspace folder's owner. It is safe to call more
// than once.
func (s *Sandbox) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	err := s.teardown()
	return errors.Join(err, s.client.Close())
}

func (s *Sandbox) teardown() error {
	ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
	defer cancel()
	var errs []error
	if s.container != nil {
		if err := removeContainer(ctx, s.container); err != nil {
			errs = append(errs, err)
		}
	}
	if s.stateDir != "" {
		if err := os.RemoveAll(s.stateDir); err != nil {
			errs = append(errs, err)
		}
	}
	// After the container is gone, so no command still writes there.
	if s.adopt {
		if err := giveBack(s.cfg.Workspace, int(s.uid), int(s.ownerUID), int(s.ownerGID)); err != nil {
			errs = append(errs, fmt.Errorf("give the workspace back to uid %d: %w", s.ownerUID, err))
		}
	}
	return errors.Join(errs...)
}

// Exec runs cmd in the run's container as its own process group. A timeout
// kills the whole group and is reported as Result.TimedOut; a cancelled ctx
// kills it too and returns ctx's error with the partial Result. When the
// command's main process ends, what is left of its group is killed.
func (s *Sandbox) Exec(ctx context.Context, cmd sandbox.Command) (sandbox.Result, error) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return sandbox.Result{}, sandbox.ErrClosed
	}
	if len(cmd.Argv) == 0 || cmd.Argv[0] == "" {
		return sandbox.Result{}, sandbox.ErrEmptyCommand
	}
	if err := ctx.Err(); err != nil {
		return sandbox.Result{}, fmt.Errorf("containerd sandbox: %s: %w", cmd.Argv[0], err)
	}
	cwd := WorkspaceDir
	if cmd.Dir != "" && cmd.Dir != "." {
		if !filepath.IsLocal(cmd.Dir) {
			return sandbox.Result{}, fmt.Errorf("containerd sandbox: dir %q: %w", cmd.Dir, sandbox.ErrOutsideWorkspace)
		}
		cwd = path.Join(WorkspaceDir, filepath.ToSlash(cmd.Dir))
	}
	if s.adopt {
		// Under mu, so that Close, once it has set closed, gives the
		// workspace back after every adoption, never before one.
		s.mu.Lock()
		err := sandbox.ErrClosed
		if !s.closed {
			err = adoptTree(s.cfg.Workspace, int(s.uid), int(s.gid))
		}
		s.mu.Unlock()
		if errors.Is(err, sandbox.ErrClosed) {
			return sandbox.Result{}, err
		}
		if err != nil {
			return sandbox.Result{}, fmt.Errorf("containerd sandbox: workspace ownership: %w", err)
		}
	}
	timeout := cmd.Timeout
	if timeout <= 0 {
		timeout = s.cfg.Limits.Timeout
	}
	stdout, stderr := sandbox.NewCappedBuffer(s.cfg.Limits.Output), sandbox.NewCappedBuffer(s.cfg.Limits.Output)
	start := time.Now()
	res, err := s.run(ctx, cmd, cwd, timeout, stdout, stderr)
	res.Duration = time.Since(start)
	res.Stdout, res.StdoutTruncated = stdout.String(), stdout.Truncated()
	res.Stderr, res.StderrTruncated = stderr.String(), stderr.Truncated()
	return res, err
}

func (s *Sandbox) run(ctx context.Context, cmd sandbox.Command, cwd string, timeout time.Duration, stdout, stderr *sandbox.CappedBuffer) (sandbox.Result, error) {
	// Container calls use s.ctx so that a cancelled ctx still lets us
	// kill and clean up.
	bg := s.ctx
	execID := "exec-" + strconv.FormatInt(s.execs.Add(1), 10)
	spec := s.processSpec(cmd, cwd)
	oomBefore := s.ooms.Load()

	p, err := s.task.Exec(bg, execID, spec, cio.NewCreator(cio.WithStreams(nil, stdout, stderr), cio.WithFIFODir(filepath.Join(s.stateDir, "fifo"))))
	if err != nil {
		return sandbox.Result{}, fmt.Errorf("containerd sandbox: exec %s: %w", cmd.Argv[0], err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(bg, 10*time.Second)
		defer cancel()
		p.Delete(dctx, client.WithProcessKill)
	}()
	statusC, err := p.Wait(bg)
	if err != nil {
		return sandbox.Result{}, fmt.Errorf("containerd sandbox: wait %s: %w", cmd.Argv[0], err)
	}
	if err := p.Start(bg); err != nil {
		if r, ok := startFailure(err, cmd.Argv[0], stderr); ok {
			return r, nil
		}
		return sandbox.Result{}, fmt.Errorf("containerd sandbox: start %s: %w", cmd.Argv[0], err)
	}
	pid := int(p.Pid())
	var timer <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timer = t.C
	}
	var res sandbox.Result
	var status client.ExitStatus
	var cancelled bool
	select {
	case status = <-statusC:
	case <-timer:
		res.TimedOut = true
		s.killGroup(bg, p, pid)
		status = <-statusC
	case <-ctx.Done():
		cancelled = true
		s.killGroup(bg, p, pid)
		status = <-statusC
	}
	// Background children of a finished command die with it.
	s.killGroup(bg, p, pid)
	waitIO(p.IO(), ioGrace)

	code, _, err := status.Result()
	if err != nil {
		return res, fmt.Errorf("containerd sandbox: %s: %w", cmd.Argv[0], err)
	}
	res.ExitCode = int(code)
	// An OOM kill anywhere in the container while this command ran is
	// reported for it; commands of one run rarely overlap.
	if s.cfg.Limits.Memory > 0 {
		n := s.oomKills(bg)
		s.ooms.Store(n)
		res.OOMKilled = n > oomBefore
	}
	if cancelled {
		return res, fmt.Errorf("containerd sandbox: %s: %w", cmd.Argv[0], context.Cause(ctx))
	}
	return res, nil
}

// processSpec is the exec'd process, as the sandbox user with no
// capabilities. runc makes every exec'd process a session and process group
// leader, so its pid names the group that holds the command's process tree.
func (s *Sandbox) processSpec(cmd sandbox.Command, cwd string) *specs.Process {
	spec := *s.baseProcess()
	spec.Args = cmd.Argv
	spec.Env = sandbox.MergeEnv(s.env, cmd.Env)
	spec.Cwd = cwd
	return &spec
}

// killGroup kills the exec'd process group: from the host when this process
// may signal it (same pid namespace, privileged), else from inside the
// container by pid, else every process of the sandbox user but init.
func (s *Sandbox) killGroup(ctx context.Context, p client.Process, hostPid int) {
	if hostPid > 0 {
		if err := syscall.Kill(-hostPid, syscall.SIGKILL); err == nil || errors.Is(err, syscall.ESRCH) {
			return
		}
	}
	p.Kill(ctx, syscall.SIGKILL)
	nsPid := nsPid(hostPid)
	target := "-1"
	if nsPid > 1 {
		target = "-" + strconv.Itoa(nsPid)
	}
	kctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	spec := *s.baseProcess()
	spec.Args = []string{"kill", "-KILL", "--", target}
	spec.Env = s.env
	spec.Cwd = "/"
	id := "kill-" + strconv.FormatInt(s.execs.Add(1), 10)
	kp, err := s.task.Exec(kctx, id, &spec, cio.NullIO)
	if err != nil {
		return
	}
	defer kp.Delete(kctx, client.WithProcessKill)
	if ch, err := kp.Wait(kctx); err == nil && kp.Start(kctx) == nil {
		select {
		case <-ch:
		case <-kctx.Done():
		}
	}
}

// nsPid is hostPid as the container's pid namespace sees it, or 0.
func nsPid(hostPid int) int {
	if hostPid <= 0 {
		return 0
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(hostPid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f, ok := strings.CutPrefix(line, "NSpid:"); ok {
			fs := strings.Fields(f)
			if n, err := strconv.Atoi(fs[len(fs)-1]); err == nil {
				return n
			}
		}
	}
	return 0
}

func waitIO(io cio.IO, grace time.Duration) {
	if io == nil {
		return
	}
	done := make(chan struct{})
	go func() { io.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
		io.Cancel()
		<-done
	}
}

// startFailure turns runc's "executable not found" and "permission denied"
// into the shell's 127 and 126.
func startFailure(err error, prog string, stderr *sandbox.CappedBuffer) (sandbox.Result, bool) {
	msg := err.Error()
	code := 0
	switch {
	case strings.Contains(msg, "executable file not found"), strings.Contains(msg, "no such file or directory"):
		code = 127
	case strings.Contains(msg, "permission denied"), strings.Contains(msg, "not a directory"):
		code = 126
	default:
		return sandbox.Result{}, false
	}
	fmt.Fprintf(stderr, "trio: cannot run %s: %s\n", prog, msg)
	return sandbox.Result{ExitCode: code}, true
}

// removeContainer kills and deletes c's task, then c and its snapshot.
func removeContainer(ctx context.Context, c client.Container) error {
	var errs []error
	if t, err := c.Task(ctx, nil); err == nil {
		if _, err := t.Delete(ctx, client.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete task %s: %w", c.ID(), err))
		}
	} else if !errdefs.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("task %s: %w", c.ID(), err))
	}
	if err := c.Delete(ctx, client.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("delete container %s: %w", c.ID(), err))
	}
	return errors.Join(errs...)
}
