package containerd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
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
	"github.com/trioagent/trio/sandbox/internal/confine"
)

// Labels on every container Trio makes.
const (
	LabelManaged = "trio.managed" // "true"
	LabelRun     = "trio.run"     // RunID
	LabelOwner   = "trio.owner"   // host/pid/starttime of the creating process
	LabelState   = "trio.state"   // the run's state folder on the host
	// LabelGiveBack is "uid:ownerUID:ownerGID" when the sandbox lent a
	// root-owned workspace to uid: a sweep of the dead run gives every
	// entry uid owns back to ownerUID:ownerGID.
	LabelGiveBack  = "trio.giveback"
	LabelWorkspace = "trio.workspace" // the workspace folder on the host
)

// ioGrace bounds the wait for a command's output after its processes are
// gone.
const ioGrace = time.Second

// Sandbox runs one run's commands in its containers, one box at a time
// (see box). It is safe for concurrent use; commands run one at a time,
// so that between two of them the box holds no process but its init.
type Sandbox struct {
	cfg      config
	client   *client.Client
	ctx      context.Context // carries the namespace; never cancelled
	stateDir string
	uid, gid uint32
	initUID  uint32
	adopt    bool // chown workspace entries to uid before each command
	env      []string
	execs    atomic.Int64
	starts   atomic.Int64  // processes Start started
	ooms     atomic.Uint64 // OOM kills seen after the last command
	diskBase int64         // the workspace's usage when the sandbox opened
	warmBase string        // the trusted Go build cache base, or ""
	landlock int           // the kernel's Landlock ABI, 0 without (see trusted)
	alive    *os.File      // the liveness FIFO's only writer (see initArgs)
	// exe and helper are this executable's copies for the exec server and
	// a trusted build's helpers (see newExecServer); "": runc's exec.
	exe, helper string
	held        []*os.File // exe and helper, locked so that no sandbox prunes them
	shared      bool       // the trusted builds' mount point is shared (see trustedCacheDir)
	overlays    int        // the trusted builds' overlays mounted so far

	// ownerUID and ownerGID own the workspace folder at New; with adopt,
	// Close gives them back what uid owns then.
	ownerUID, ownerGID uint32

	// execMu serialises commands and guards what follows: the box
	// commands run in (its container, task, init, cgroup and the layout
	// its mounts follow read as the sandbox's; an empty box before the
	// first command), the last background job and the count of boxes.
	execMu sync.Mutex
	*box
	spare *spareJob
	boxes int
	// fresh asks the next command for a new box: new /tmp and HOME,
	// an empty build cache layer (Reset, or an OOM kill that may have left
	// memory pinned).
	fresh    bool
	restarts int

	mu     sync.Mutex
	closed bool
	procs  map[*process]bool // started and not stopped
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
			"or `sudo containerd --address %s`) or point %s at its socket; or choose the local sandbox kind, "+
			"which runs commands without isolation",
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

// New connects to containerd, removes leftovers of dead runs and prepares
// the state of one run; the first command creates and starts the run's
// container (see box). spec.Workspace (required) is bound read-write at
// /workspace; spec.RunID names the container "trio-<RunID>" (default
// random); spec.Limits bound the container and each command;
// spec.PathRules (nil: the whole workspace writable) are laid out as
// mounts over the workspace (see sandbox.PlanLayout): hidden entries get
// an empty file or folder bound over them, read-only ones a read-only
// bind, planned again before every command, and when the layout changed
// (a new match, or rules that changed, such as the Critic's tests folder
// made read-only) the container is recreated with the new mounts before
// the command runs; spec.Progress is told about slow steps (building the
// warm cache). spec.Settings is a Config or *Config, nil for the
// defaults.
func New(ctx context.Context, spec sandbox.RunSpec) (*Sandbox, error) {
	cfg, err := settings(spec.Settings)
	if err != nil {
		return nil, err
	}
	spec.Settings = nil
	return newRun(ctx, config{RunSpec: spec, Config: cfg})
}

// newRun opens a sandbox for cfg, whose defaults it fills; the warm-up's
// own sandbox comes here with its run's settings.
func newRun(ctx context.Context, cfg config) (_ *Sandbox, retErr error) {
	cfg, from, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	c, err := connect(ctx, cfg.Address, cfg.Namespace, from)
	if err != nil {
		return nil, err
	}
	s := &Sandbox{cfg: cfg, client: c, ctx: namespaces.WithNamespace(context.Background(), cfg.Namespace), landlock: confine.ABI(), box: &box{}}
	defer func() {
		if retErr != nil {
			s.teardown()
			c.Close()
		}
	}()
	ctx = namespaces.WithNamespace(ctx, cfg.Namespace)
	// Before the sweep, which acts on what the state folder holds.
	if err := sandbox.PrivateDir(cfg.StateDir); err != nil {
		return nil, fmt.Errorf("sandbox state: %w", err)
	}
	if _, err := removeLeftovers(ctx, c, cfg.StateDir); err != nil {
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
	if err := s.makeState(); err != nil {
		return nil, fmt.Errorf("sandbox state: %w", err)
	}
	s.env = containerEnv(cfg)
	if err := s.prepareWarm(ctx); err != nil {
		return nil, err
	}
	if s.adopt {
		// Before the container exists: no sandboxed process can race it.
		if err := adoptTree(s.cfg.Workspace, int(s.uid), int(s.gid), s.cfg.PathRules); err != nil {
			return nil, fmt.Errorf("workspace ownership: %w", err)
		}
	}
	s.diskBase = usage(s.cfg.Workspace)
	if s.cfg.RootFS == RootFSImage {
		// Pulled or imported here, so that a missing image stops the run
		// before it starts.
		if _, err := s.image(ctx); err != nil {
			return nil, err
		}
	}
	// The first command starts the first box, with the layout the rules
	// select then: an agent's rules and workspace change between New
	// and its first command (the plan names the tests folder, the
	// Critic writes it), and a box started here would be replaced.
	s.fresh = true
	return s, nil
}

// makeState creates the run's state folder: the rootfs, the boxes'
// folder (see box), the FIFOs of commands' output, the liveness FIFO
// (held open for writing by this process alone; only init's uid may open
// it), and the empty file and folder bound over hidden entries.
func (s *Sandbox) makeState() error {
	if err := os.Mkdir(s.stateDir, 0o755); err != nil {
		return err
	}
	// First: a run that dies from here on, before its first container,
	// leaves a folder the next sandbox's sweep finds (see
	// removeLeftovers).
	b, err := json.Marshal(s.labels())
	if err != nil {
		return err
	}
	// Whole or absent: renamed into place.
	tmp := filepath.Join(s.stateDir, "."+labelsFile)
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(s.stateDir, labelsFile)); err != nil {
		return err
	}
	for _, d := range []string{"rootfs", "box", "fifo", "alive"} {
		if err := os.MkdirAll(filepath.Join(s.stateDir, d), 0o755); err != nil {
			return err
		}
	}
	if err := os.Mkdir(filepath.Join(s.stateDir, "empty-dir"), 0); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(s.stateDir, "empty-file"), nil, 0); err != nil {
		return err
	}
	fifo := filepath.Join(s.stateDir, "alive", aliveFIFO)
	if err := syscall.Mkfifo(fifo, 0o400); err != nil {
		return fmt.Errorf("liveness fifo: %w", err)
	}
	if err := os.Lchown(fifo, int(s.initUID), int(s.initUID)); err != nil {
		return err
	}
	// O_RDWR never blocks on a FIFO, and this one stays open, close-on-exec,
	// for the sandbox's lifetime: when this process dies, init sees EOF.
	f, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("liveness fifo: %w", err)
	}
	s.alive = f
	if s.exe, s.helper, s.held, err = newExecServer(s.cfg, s.initUID); err != nil || s.exe == "" {
		return err
	}
	return s.helperEntries(filepath.Join(s.stateDir, "alive"))
}

// planLayout is the layout the rules select in the workspace now, of any
// size (see prepare).
func (s *Sandbox) planLayout() (sandbox.Layout, error) {
	if s.cfg.PathRules == nil {
		return sandbox.Layout{}, nil
	}
	l, err := sandbox.PlanLayout(s.cfg.Workspace, s.cfg.PathRules)
	if err != nil {
		return l, fmt.Errorf("containerd sandbox: %w", err)
	}
	return l, nil
}

// start makes the run's next box, following layout, and starts its
// container; commands run there from now on. Callers hold execMu.
func (s *Sandbox) start(ctx context.Context, layout sandbox.Layout) error {
	b, err := s.newBox(layout)
	if err != nil {
		return err
	}
	// The box is the sandbox's before its container starts, so that
	// teardown removes what a failed start left.
	s.box = b
	if err := s.startBox(ctx, b); err != nil {
		return err
	}
	s.ooms.Store(s.oomKills(ctx))
	return nil
}

// restart moves commands to a new box (see box): the first command, or
// Reset, or an OOM kill, asked for one, its init died (a command brought
// it down) or the layout changed. The spare is taken when it follows
// layout; the boxes left behind are removed in the background. Callers
// hold execMu.
func (s *Sandbox) restart(ctx context.Context, layout sandbox.Layout) error {
	old := []*box{s.box}
	if s.box.dir != "" {
		s.restarts++
	}
	s.fresh = false
	spare, discard := s.takeSpare(layout)
	if discard != nil {
		old = append(old, discard)
	}
	if spare != nil {
		s.box = spare
		s.ooms.Store(s.oomKills(ctx))
	} else if err := s.start(ctx, layout); err != nil {
		// The failed box is removed with the others, and the next
		// command tries again.
		s.fresh = true
		if s.box != old[0] {
			old = append(old, s.box)
		}
		s.box = &box{}
		s.background(old, nil)
		return err
	}
	s.background(old, nil)
	return nil
}

// Reset makes the next command run in a new container: nothing an earlier
// command left in /tmp, HOME or the build cache's writable layer (a planted
// .pth file, a Go env file, a forged cache entry) is there. The agent
// resets before the Critic's checks, so the Worker's code cannot prepare
// what they run.
func (s *Sandbox) Reset(ctx context.Context) error {
	s.execMu.Lock()
	defer s.execMu.Unlock()
	s.fresh = true
	return nil
}

// initAlive reports whether the container's init still runs, by asking
// the kernel (no round trip to containerd).
func (s *Sandbox) initAlive() bool {
	return s.task != nil && pidAlive(s.initPid)
}

// containerEnv is the allow-listed environment of every command: see
// sandbox.BaseEnv, plus the Go and Python settings for the container's
// folders; without network, module and package downloads are off so that
// they fail fast.
func containerEnv(cfg config) []string {
	// GOFLAGS and GOENV are set so that a Go env file or variable a
	// command plants in HOME cannot change later commands' go (the
	// Critic's go test -json above all); PYTHONNOUSERSITE keeps a planted
	// user site-packages (.pth files) out of later Python.
	extra := []string{"GOCACHE=" + CacheDir + "/go-build", "XDG_CACHE_HOME=" + CacheDir, "GOPATH=" + HomeDir + "/go",
		"GOTELEMETRY=off", "GOFLAGS=", "GOENV=off", "PYTHONNOUSERSITE=1"}
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
// Its Enforced and NotEnforced list every limit.
func (s *Sandbox) Info() sandbox.Info {
	lim := s.cfg.Limits
	var yes, no []string
	if lim.Timeout > 0 {
		yes = append(yes, "timeout "+lim.Timeout.String())
	} else {
		no = append(no, "timeout: no limit set")
	}
	out := lim.Output
	if out <= 0 {
		out = sandbox.DefaultOutput
	}
	yes = append(yes, "output "+strconv.FormatInt(out, 10)+" bytes per stream")
	if lim.Memory > 0 {
		yes = append(yes, "memory "+strconv.FormatInt(lim.Memory, 10)+" bytes for the run's container (cgroup)")
	} else {
		no = append(no, "memory: no limit set")
	}
	if lim.CPUs > 0 {
		yes = append(yes, "cpus "+strconv.FormatFloat(lim.CPUs, 'g', -1, 64)+" (cgroup CPU quota)")
	} else {
		no = append(no, "cpus: no limit set")
	}
	pids := lim.Pids
	if pids <= 0 {
		pids = DefaultPids
	}
	yes = append(yes, "pids "+strconv.FormatInt(pids, 10)+" (cgroup)")
	if lim.Disk > 0 {
		yes = append(yes, "disk "+strconv.FormatInt(lim.Disk, 10)+" bytes (workspace growth and the run's cache, watched while commands run)")
	} else {
		no = append(no, "disk: no limit set")
	}
	if lim.Network {
		yes = append(yes, "network: the host's (Limits.Network)")
	} else {
		yes = append(yes, "network: loopback only (network namespace)")
	}
	return sandbox.Info{Kind: Kind, Isolated: true, WorkspaceDir: WorkspaceDir, Enforced: yes, NotEnforced: no}
}

// ID is the container's id in containerd.
func (s *Sandbox) ID() string { return "trio-" + s.cfg.RunID }

// Close stops every started process (see Start), kills and deletes the
// task and the container, and removes the run's state folder. When the sandbox adopted a root-owned workspace (see the
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
	// After any command in flight: it finishes (or is killed) first.
	s.execMu.Lock()
	defer s.execMu.Unlock()
	err := s.teardown()
	return errors.Join(err, s.client.Close())
}

func (s *Sandbox) teardown() error {
	ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
	defer cancel()
	// Started processes first: their containers use the state folder.
	errs := []error{s.stopAll()}
	// The boxes side by side: each removal mostly waits for containerd.
	cur := make(chan error, 1)
	b := s.box
	go func() { cur <- s.removeBox(ctx, b) }()
	errs = append(errs, s.removeBox(ctx, s.settle()), <-cur)
	if s.alive != nil {
		s.alive.Close()
	}
	for _, f := range s.held {
		f.Close()
	}
	if s.stateDir != "" {
		if err := unmountUnder(s.stateDir); err != nil {
			errs = append(errs, err)
		}
	}
	// After the containers are gone, so no command still writes there,
	// and before the state folder goes, whose labels record the loan
	// until then: a workspace that could not be given back leaves the
	// folder for the next sweep (see removeLeftovers).
	if s.adopt {
		if err := giveBack(s.cfg.Workspace, int(s.uid), int(s.ownerUID), int(s.ownerGID)); err != nil {
			return errors.Join(append(errs, fmt.Errorf("give the workspace back to uid %d (the next sandbox tries again): %w", s.ownerUID, err))...)
		}
	}
	if s.stateDir != "" {
		if err := os.RemoveAll(s.stateDir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Exec runs cmd in the run's container. Before it runs, the path rules
// are laid out again (the container is recreated when the layout changed
// or its init died) and, for a lent workspace, what the host wrote since
// is given to the sandbox user. A timeout kills the command and is
// reported as Result.TimedOut; a cancelled ctx kills it too and returns
// ctx's error with the partial Result. When the command ends, however it
// ends, every process it left in the container is killed from the host
// before Exec returns.
func (s *Sandbox) Exec(ctx context.Context, cmd sandbox.Command) (sandbox.Result, error) {
	if len(cmd.Argv) == 0 || cmd.Argv[0] == "" {
		return sandbox.Result{}, sandbox.ErrEmptyCommand
	}
	cwd, err := workdir(cmd.Dir)
	if err != nil {
		return sandbox.Result{}, err
	}
	s.execMu.Lock()
	defer s.execMu.Unlock()
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return sandbox.Result{}, sandbox.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return sandbox.Result{}, fmt.Errorf("containerd sandbox: %s: %w", cmd.Argv[0], err)
	}
	if err := s.prepare(ctx); errors.Is(err, errDiskFull) {
		// The model can fix this one: delete what it wrote.
		msg := fmt.Sprintf("trio: not run: the run has already written %d MiB, past limits.disk (%d MiB); delete files to go on\n",
			s.written()>>20, s.cfg.Limits.Disk>>20)
		return sandbox.Result{ExitCode: 1, DiskExceeded: true, Stderr: msg}, nil
	} else if err != nil {
		return sandbox.Result{}, fmt.Errorf("containerd sandbox: %s: %w", cmd.Argv[0], err)
	}
	timeout := cmd.Timeout
	if timeout <= 0 {
		timeout = s.cfg.Limits.Timeout
	}
	stdout, stderr := sandbox.NewCappedBuffer(s.cfg.Limits.Output), sandbox.NewCappedBuffer(s.cfg.Limits.Output)
	start := time.Now()
	res, err := s.run(ctx, cmd, cwd, timeout, stdout, stderr)
	if rerr := s.afterCommand(stderr); rerr != nil && err == nil {
		err = fmt.Errorf("containerd sandbox: after %s: %w", cmd.Argv[0], rerr)
	}
	res.Duration = time.Since(start)
	res.Stdout, res.StdoutTruncated = stdout.String(), stdout.Truncated()
	res.Stderr, res.StderrTruncated = stderr.String(), stderr.Truncated()
	return res, err
}

// prepare readies the container for a command: the layout the rules select
// now, a running init, and (for a lent workspace) ownership of what the
// host wrote since. The container holds no process but init here, and
// started processes are frozen (see freezeStarted), so nothing sandboxed
// can race the layout or the ownership walk. Callers hold execMu.
func (s *Sandbox) prepare(ctx context.Context) error {
	thaw, err := s.freezeStarted()
	if err != nil {
		return err
	}
	defer thaw()
	layout, err := s.planLayout()
	if err != nil {
		return err
	}
	if err := layout.CheckSize(); err != nil {
		return err
	}
	if s.fresh || !s.initAlive() || !layout.Equal(s.layout) {
		rctx, cancel := context.WithTimeout(s.ctx, time.Minute)
		err := s.restart(rctx, layout)
		cancel()
		if err != nil {
			return fmt.Errorf("start the container: %w", err)
		}
	}
	// A box's second command starts the spare the next move takes: a
	// box that runs one command (the Critic's last check) needs none.
	if s.box.cmds++; s.box.cmds == 2 && s.spareWanted() && (s.spare == nil || !s.spare.wants) {
		l := s.layout
		s.background(nil, &l)
	}
	if s.overDisk() {
		return errDiskFull
	}
	if s.adopt {
		if err := adoptTree(s.cfg.Workspace, int(s.uid), int(s.gid), s.cfg.PathRules); err != nil {
			return fmt.Errorf("workspace ownership: %w", err)
		}
	}
	return nil
}

// afterCommand removes what a command made that the rules hide: a hidden
// file or folder that was not hidden before the command (compared by
// device and inode, so a hidden file whose folder the command renamed is
// the same file, and stays), such as a .git folder with a hostile config
// in a workspace that had none. The sandboxed code wrote it, so nothing of
// the user's is lost, and it could otherwise act on the host later (git
// runs core.fsmonitor). The plan here has no size bound, so a command
// cannot dodge the removal by making too many hidden files. Each removal
// is noted on stderr.
func (s *Sandbox) afterCommand(stderr io.Writer) error {
	if s.cfg.PathRules == nil {
		return nil
	}
	removed, err := sandbox.RemoveNewHidden(s.cfg.Workspace, s.cfg.PathRules, s.layout)
	sandbox.NoteRemoved(stderr, removed)
	return err
}

func (s *Sandbox) run(ctx context.Context, cmd sandbox.Command, cwd string, timeout time.Duration, stdout, stderr *sandbox.CappedBuffer) (_ sandbox.Result, retErr error) {
	// Container calls use s.ctx so that a cancelled ctx still lets us
	// kill and clean up.
	bg := s.ctx
	oomBefore := s.ooms.Load()
	trusted := s.trusted(cmd)
	if trusted {
		if err := s.mountTrusted(); err != nil {
			fmt.Fprintf(stderr, "trio: %v; %s runs as an ordinary command\n", err, cmd.Argv[0])
			trusted = false
		} else {
			// After every return below, which all come after the reaping:
			// no process of the build is left to write the overlay.
			defer func() {
				if uerr := s.unmountTrusted(stderr, true); uerr != nil && retErr == nil {
					retErr = fmt.Errorf("containerd sandbox: %s: %w", cmd.Argv[0], uerr)
				}
			}()
		}
	}
	start := s.startRunc
	if s.execd != nil {
		start = s.startExecd
	}
	p, failed, err := start(cmd, cwd, trusted, stdout, stderr)
	if err != nil || failed != nil {
		if failed != nil {
			return *failed, nil
		}
		return sandbox.Result{}, err
	}
	defer p.release()
	var timer <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timer = t.C
	}
	var (
		res       sandbox.Result
		status    exitStatus
		cancelled bool
		reapErr   error
	)
	stopDisk := s.watchDisk(func() { s.reap(bg) })
	select {
	case status = <-p.exit:
	case <-timer:
		res.TimedOut = true
		reapErr = s.reap(bg)
		status = <-p.exit
	case <-ctx.Done():
		cancelled = true
		reapErr = s.reap(bg)
		status = <-p.exit
	}
	res.DiskExceeded = stopDisk()
	// Whatever the command left running dies with it.
	if err := s.reap(bg); err != nil {
		reapErr = err
	}
	p.waitIO(ioGrace)

	if status.err != nil {
		return res, fmt.Errorf("containerd sandbox: %s: %w", cmd.Argv[0], status.err)
	}
	code := status.code
	res.ExitCode = code
	if status.initDied {
		// Only the kernel kills init (its OOM killer, where the host may
		// not lower init's score): the command died with it, and the next
		// one gets a new container.
		s.fresh = true
		fmt.Fprintf(stderr, "\ntrio: the sandbox's init was killed while %s ran (out of memory?); the command was killed with it, and the next command runs in a new container\n", cmd.Argv[0])
	}
	if code == 128+int(syscall.SIGXFSZ) || s.overDisk() {
		res.DiskExceeded = true
	}
	// An OOM kill anywhere in the container while this command ran is
	// reported for it; commands of one run never overlap.
	if s.cfg.Limits.Memory > 0 {
		n := s.oomKills(bg)
		s.ooms.Store(n)
		res.OOMKilled = n > oomBefore
		// Memory an OOM could not free (tmpfs, shared memory) would fail
		// every later command: the next one gets a new container.
		s.fresh = s.fresh || res.OOMKilled
	}
	if reapErr != nil {
		return res, fmt.Errorf("containerd sandbox: %s: %w", cmd.Argv[0], reapErr)
	}
	if cancelled {
		return res, fmt.Errorf("containerd sandbox: %s: %w", cmd.Argv[0], context.Cause(ctx))
	}
	return res, nil
}

// proc is a started command, however it was started: its exit status
// arrives once on exit, waitIO waits (at most grace) for its output to
// end, and release frees what starting it took.
type proc struct {
	exit    <-chan exitStatus
	waitIO  func(grace time.Duration)
	release func()
}

type exitStatus struct {
	code int
	err  error
	// initDied: the container's init died while the command ran, and the
	// command with it.
	initDied bool
}

// startRunc starts cmd with runc's exec, through containerd: the way when
// the container's init is not the exec server (see startExecd). A command
// that could not start comes back as a Result (126 or 127).
func (s *Sandbox) startRunc(cmd sandbox.Command, cwd string, _ bool, stdout, stderr *sandbox.CappedBuffer) (*proc, *sandbox.Result, error) {
	bg := s.ctx
	execID := "exec-" + strconv.FormatInt(s.execs.Add(1), 10)
	p, err := s.task.Exec(bg, execID, s.processSpec(cmd, cwd), cio.NewCreator(cio.WithStreams(nil, stdout, stderr), cio.WithFIFODir(filepath.Join(s.stateDir, "fifo"))))
	if err != nil {
		return nil, nil, fmt.Errorf("containerd sandbox: exec %s: %w", cmd.Argv[0], err)
	}
	release := func() {
		dctx, cancel := context.WithTimeout(bg, 10*time.Second)
		defer cancel()
		p.Delete(dctx, client.WithProcessKill)
	}
	statusC, err := p.Wait(bg)
	if err != nil {
		release()
		return nil, nil, fmt.Errorf("containerd sandbox: wait %s: %w", cmd.Argv[0], err)
	}
	if err := p.Start(bg); err != nil {
		release()
		if r, ok := startFailure(err, cmd.Argv[0], stderr); ok {
			return nil, &r, nil
		}
		return nil, nil, fmt.Errorf("containerd sandbox: start %s: %w", cmd.Argv[0], err)
	}
	exit := make(chan exitStatus, 1)
	go func() {
		code, _, err := (<-statusC).Result()
		exit <- exitStatus{code: int(code), err: err}
	}()
	return &proc{exit: exit, waitIO: func(grace time.Duration) { waitIO(p.IO(), grace) }, release: release}, nil, nil
}

// processSpec is the exec'd process, as the sandbox user with no
// capabilities.
func (s *Sandbox) processSpec(cmd sandbox.Command, cwd string) *specs.Process {
	spec := *s.baseProcess()
	spec.Args = cmd.Argv
	spec.Env = s.commandEnv(cmd)
	spec.Cwd = cwd
	return &spec
}

// commandEnv is cmd's environment: the sandbox's, cmd's own and, for a
// check, sandbox.CheckEnv's Python setting. The go command's cache is the
// run's overlay, which a check's own processes can write; a trusted build
// has its own (see trustedEnv).
func (s *Sandbox) commandEnv(cmd sandbox.Command) []string {
	env := sandbox.MergeEnv(s.env, cmd.Env)
	if cmd.Check {
		env = sandbox.CheckEnv(env, "")
	}
	return env
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
// Another process may sweep the same dead run at the same time (every
// sandbox that opens removes leftovers), and then the shim can shut down
// under this Delete ("ttrpc: closed"). So a failed delete is retried, and
// a task that is gone meanwhile counts as deleted.
func removeContainer(ctx context.Context, c client.Container) error {
	var errs []error
	for attempt := 0; ; attempt++ {
		t, err := c.Task(ctx, nil)
		if errdefs.IsNotFound(err) {
			break
		}
		if err == nil {
			_, err = t.Delete(ctx, client.WithProcessKill)
			if err == nil || errdefs.IsNotFound(err) {
				break
			}
			err = fmt.Errorf("delete task %s: %w", c.ID(), err)
		} else {
			err = fmt.Errorf("task %s: %w", c.ID(), err)
		}
		if attempt == 2 || ctx.Err() != nil {
			errs = append(errs, err)
			break
		}
		time.Sleep(100 * time.Millisecond << attempt)
	}
	if err := c.Delete(ctx, client.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("delete container %s: %w", c.ID(), err))
	}
	return errors.Join(errs...)
}
