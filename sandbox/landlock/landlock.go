package landlock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/sandbox/internal/confine"
	"github.com/trioagent/trio/sandbox/internal/gocacheprog"
	"github.com/trioagent/trio/sandbox/internal/landlockexec"
	"github.com/trioagent/trio/sandbox/internal/syscallfilter"
)

// Kind is the sandbox kind users name (Info.Kind, --sandbox landlock).
const Kind = "landlock"

var (
	// ErrUnavailable means this kernel has no Landlock (or this process
	// may not use it). The message says what to do instead.
	ErrUnavailable = fmt.Errorf("landlock sandbox %w", sandbox.ErrUnavailable)
	// ErrDeniedPath means the workspace holds a path the policy denies
	// (paths.deny): Landlock only grants access, so this kind cannot hide
	// it from commands, and refuses to run them there.
	ErrDeniedPath = fmt.Errorf("%w: the landlock sandbox cannot hide a denied path", sandbox.ErrUnavailable)
	// ErrConfig means the Config is unusable.
	ErrConfig = sandbox.ErrConfig
)

// Config is the landlock kind's own settings. What one run gives every
// kind (its workspace, limits, path rules and progress) comes in the
// sandbox.RunSpec that [New] and sandbox.Open take; a Config is its
// Settings. The zero Config is the defaults.
type Config struct {
	// ToolchainDirs replace sandbox.DefaultToolchainDirs: host folders
	// commands may read and execute.
	ToolchainDirs []string
	// EtcFiles replace sandbox.DefaultEtcFiles: host /etc entries
	// commands may read (passwd, group and hosts are added).
	EtcFiles []string
	// ModCache is the host Go module cache, readable. Default:
	// sandbox.HostModCache() when it exists; "none" grants nothing.
	ModCache string
	// StateDir is where the sandbox's HOME, TMPDIR and build cache are
	// made; default os.TempDir().
	StateDir string
	// WarmCache is the folder of Trio's trusted warm build caches (see
	// sandbox.DefaultWarmCache); "none" uses none.
	WarmCache string
}

// config is one run's sandbox: its spec, whose Settings are taken out
// into Config, with the defaults filled by withDefaults.
type config struct {
	sandbox.RunSpec
	Config
}

func (c config) withDefaults() (config, error) {
	if c.Workspace == "" {
		return c, fmt.Errorf("%w: Workspace is required", ErrConfig)
	}
	ws, err := filepath.Abs(c.Workspace)
	if err == nil {
		ws, err = filepath.EvalSymlinks(ws)
	}
	if err != nil {
		return c, fmt.Errorf("%w: Workspace %s: %w", ErrConfig, c.Workspace, err)
	}
	if st, err := os.Stat(ws); err != nil || !st.IsDir() {
		return c, fmt.Errorf("%w: Workspace %s is not a directory", ErrConfig, c.Workspace)
	}
	c.Workspace = ws
	if c.ToolchainDirs == nil {
		c.ToolchainDirs = sandbox.DefaultToolchainDirs
	}
	if c.EtcFiles == nil {
		c.EtcFiles = sandbox.DefaultEtcFiles
	}
	if c.ModCache == "" {
		c.ModCache = "none"
		if mc := sandbox.HostModCache(); mc != "" {
			if st, err := os.Stat(mc); err == nil && st.IsDir() {
				c.ModCache = mc
			}
		}
	}
	if c.StateDir == "" {
		c.StateDir = os.TempDir()
	}
	if c.WarmCache == "" {
		c.WarmCache = sandbox.DefaultWarmCache()
	}
	if c.PathRules == nil {
		c.PathRules = func(string) sandbox.Access { return sandbox.Writable }
	}
	if err := sandbox.OutsideWorkspace(c.Workspace, sandbox.Folder{Name: "Go module cache (ModCache)", Path: c.ModCache},
		sandbox.Folder{Name: "state folder (StateDir, $TMPDIR)", Path: c.StateDir},
		sandbox.Folder{Name: "warm build cache (WarmCache, $TRIO_WARM_CACHE)", Path: c.WarmCache}); err != nil {
		return c, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	// The workspace must hold no folder a command may only read (the
	// toolchain): granting the workspace would grant it write.
	return c, nil
}

// Available reports whether this machine can run the sandbox: the kernel
// has Landlock, and a command confined by the helper runs. The error
// wraps ErrUnavailable.
func Available(ctx context.Context) error {
	if abi := confine.ABI(); abi < confine.LandlockABIMin {
		return fmt.Errorf("%w: this kernel has no Landlock (Linux 5.13 or later with landlock among the lsm= modules); "+
			"start containerd, install bubblewrap for the userns sandbox, or choose the local sandbox kind, which runs commands without isolation", ErrUnavailable)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	filter, err := syscallfilter.Program(syscallfilter.Options{UnixSocketsOnly: true})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	spec := landlockexec.Spec{Read: sandbox.DefaultToolchainDirs, NoNetwork: true, Filter: filter}
	var stderr bytes.Buffer
	c := exec.CommandContext(ctx, "/proc/self/exe", append([]string{landlockexec.SupervisorFlag}, spec.Args([]string{"true"})...)...)
	c.Args[0] = landlockexec.Arg0
	c.Env, c.Dir, c.Stderr = []string{"PATH=" + sandbox.DefaultPath}, "/", &stderr
	if err := c.Run(); err != nil {
		return fmt.Errorf("%w: a command confined with Landlock and seccomp did not run here (%v: %s); "+
			"start containerd, install bubblewrap for the userns sandbox, or choose the local sandbox kind, which runs commands without isolation",
			ErrUnavailable, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// Sandbox runs each command of one run confined by Landlock and seccomp
// through Trio's helper. It needs no root, no namespaces and nothing
// installed. Exec calls are serialised.
type Sandbox struct {
	cfg      config
	stateDir string
	home     string
	tmp      string
	cache    string
	exe      string // this executable's path, for the go command's cache program; "" without one
	base     string // the warm build cache, "" without one
	env      []string
	abi      int
	diskBase int64
	filter   []byte // the seccomp program of every command

	mu     sync.Mutex
	closed bool
	next   *helper // the next command's helper, started ahead of it

	started sandbox.Started // started, not yet stopped
}

var _ sandbox.Sandbox = (*Sandbox)(nil)

// New checks that this machine can run the sandbox (see Available) and
// that the workspace holds no path the rules hide (see ErrDeniedPath),
// and prepares the sandbox's own folders for one run: commands run in
// spec.Workspace (required) and may write there, spec.Limits bound each
// command (see the package documentation), spec.PathRules (nil: the
// whole workspace writable) are planned again before every command, and
// spec.Progress is told about slow steps. spec.Settings is a Config or
// *Config, nil for the defaults; spec.RunID is not used. Nothing runs
// until Exec.
func New(ctx context.Context, spec sandbox.RunSpec) (*Sandbox, error) {
	cfg, err := settings(spec.Settings)
	if err != nil {
		return nil, err
	}
	spec.Settings = nil
	return newRun(ctx, config{RunSpec: spec, Config: cfg})
}

// newRun opens a sandbox for c, whose defaults it fills; the warm-up's
// own sandbox comes here with its run's settings.
func newRun(ctx context.Context, cfg config) (_ *Sandbox, retErr error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := CheckWorkspace(cfg.Workspace, cfg.PathRules); err != nil {
		return nil, err
	}
	if err := Available(ctx); err != nil {
		return nil, err
	}
	s := &Sandbox{cfg: cfg, abi: confine.ABI()}
	if s.filter, err = syscallfilter.Program(syscallfilter.Options{UnixSocketsOnly: !cfg.Limits.Network}); err != nil {
		return nil, fmt.Errorf("landlock sandbox: %w", err)
	}
	defer func() {
		if retErr != nil {
			s.removeState()
		}
	}()
	removeLeftovers(cfg.StateDir)
	if s.stateDir, err = os.MkdirTemp(cfg.StateDir, statePrefix); err != nil {
		return nil, fmt.Errorf("landlock sandbox: state folder: %w", err)
	}
	if err := os.WriteFile(filepath.Join(s.stateDir, ownerFile), []byte(sandbox.OwnerLabel()+"\n"), 0o444); err != nil {
		return nil, fmt.Errorf("landlock sandbox: state: %w", err)
	}
	s.home, s.tmp, s.cache = filepath.Join(s.stateDir, "home"), filepath.Join(s.stateDir, "tmp"), filepath.Join(s.stateDir, "cache")
	for _, d := range []string{s.home, s.tmp, filepath.Join(s.cache, "go-build")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("landlock sandbox: state: %w", err)
		}
	}
	if exe, err := os.Executable(); err == nil && !strings.ContainsAny(exe, " \t\n") {
		s.exe = exe
	}
	if err := s.seedCache(ctx); err != nil {
		return nil, err
	}
	s.env = s.commandEnv(s.own())
	if cfg.Limits.Disk > 0 {
		s.diskBase = sandbox.DiskUsage(cfg.Workspace) + sandbox.DiskUsage(s.stateDir)
	}
	s.next = s.startHelper()
	return s, nil
}

// CheckWorkspace returns an error wrapping ErrDeniedPath, naming the
// first path of dir that rules hide: Landlock cannot take it out of the
// workspace commands may read, so this kind runs nothing there.
func CheckWorkspace(dir string, rules sandbox.PathRules) error {
	if rules == nil {
		return nil
	}
	l, err := sandbox.PlanLayout(dir, rules)
	if err != nil {
		return fmt.Errorf("landlock sandbox: %w", err)
	}
	if len(l.Hidden) > 0 {
		return fmt.Errorf("%w: the workspace %s holds %s, which the policy denies (paths.deny); Landlock only grants access, "+
			"so this kind cannot hide it from commands: move it out of the workspace, or use the userns or containerd kind, which hide it",
			ErrDeniedPath, dir, l.Hidden[0].Path)
	}
	return nil
}

// State folders are statePrefix plus a random suffix in Config.StateDir,
// each with an ownerFile naming the process that made it.
const (
	statePrefix = "trio-landlock-"
	ownerFile   = "owner"
)

func (s *Sandbox) removeState() error {
	if s.stateDir == "" {
		return nil
	}
	return removeState(s.stateDir)
}

// removeState removes a state folder (see sandbox.RemoveState).
func removeState(dir string) error {
	if err := sandbox.RemoveState(dir); err != nil {
		return fmt.Errorf("landlock sandbox: %w", err)
	}
	return nil
}

// removeLeftovers removes this user's state folders whose owner process
// died without Close (kill -9).
func removeLeftovers(stateDir string) ([]sandbox.Leftover, error) {
	return sandbox.RemoveLeftovers(Kind, filepath.Join(stateDir, statePrefix+"*"), ownerFile)
}

// Prune removes the state folders in stateDir ("" for os.TempDir()) that
// this user's sandboxes left behind when their process died, and says
// which.
func Prune(stateDir string) ([]sandbox.Leftover, error) {
	if stateDir == "" {
		stateDir = os.TempDir()
	}
	return removeLeftovers(stateDir)
}

// folders are the HOME, TMPDIR and build cache a command may write
// besides the workspace: the commands' own, or a started process's.
type folders struct{ home, tmp, cache string }

// own are the folders of Exec's commands.
func (s *Sandbox) own() folders { return folders{s.home, s.tmp, s.cache} }

// commandEnv is the allow-listed environment of every command, with f's
// HOME, TMPDIR and build cache.
func (s *Sandbox) commandEnv(f folders) []string {
	extra := []string{"GOCACHE=" + filepath.Join(f.cache, "go-build"), "XDG_CACHE_HOME=" + f.cache,
		"GOPATH=" + filepath.Join(f.home, "go"), "GOTELEMETRY=off"}
	if s.base != "" {
		extra = append(extra, "GOCACHEPROG="+gocacheprog.Prog(s.exe, filepath.Join(f.cache, "go-build"), s.base))
	}
	if s.cfg.ModCache != "none" {
		extra = append(extra, "GOMODCACHE="+s.cfg.ModCache)
	}
	if s.cfg.Limits.Network {
		extra = append(extra, "GOPROXY=https://proxy.golang.org,direct")
	} else {
		extra = append(extra, "GOPROXY=off", "PIP_NO_INDEX=1")
	}
	return sandbox.BaseEnv("", f.home, f.tmp, extra...)
}

// Info reports an isolating sandbox whose workspace is the host folder
// itself, and what it enforces.
func (s *Sandbox) Info() sandbox.Info {
	enf, not := s.enforced()
	return sandbox.Info{Kind: Kind, Isolated: true, WorkspaceDir: s.cfg.Workspace, Enforced: enf, NotEnforced: not}
}

// enforced lists what of the Limits and of the isolation holds, and how,
// and what does not.
func (s *Sandbox) enforced() (yes, no []string) {
	lim := s.cfg.Limits
	if lim.Timeout > 0 {
		yes = append(yes, "timeout "+lim.Timeout.String())
	} else {
		no = append(no, "timeout: no limit set")
	}
	yes = append(yes, "output "+strconv.FormatInt(outputCap(lim.Output), 10)+" bytes per stream")
	if lim.Memory > 0 {
		yes = append(yes, "memory "+strconv.FormatInt(lim.Memory, 10)+" bytes per process (RLIMIT_DATA)")
	} else {
		no = append(no, "memory: no limit set")
	}
	if os.Geteuid() == 0 {
		no = append(no, "pids: RLIMIT_NPROC does not bind root, and this kind has no cgroup")
	} else {
		yes = append(yes, "pids "+strconv.FormatInt(s.pids(), 10)+" more than this user runs (RLIMIT_NPROC, counted host-wide per user)")
	}
	if lim.Disk > 0 {
		yes = append(yes, "disk "+strconv.FormatInt(lim.Disk, 10)+" bytes (RLIMIT_FSIZE per file; workspace growth and cache measured after each command)")
	} else {
		no = append(no, "disk: no limit set")
	}
	no = append(no, "cpus: needs a cgroup, which this kind does not use")
	if lim.Network {
		yes = append(yes, "network: the host's (Limits.Network)")
	} else {
		yes = append(yes, "network: none, loopback included (seccomp: AF_UNIX sockets only)")
	}
	ly, ln := confine.LandlockEnforces(s.abi)
	yes, no = append(yes, ly...), append(no, ln...)
	yes = append(yes, "seccomp: mount, namespaces, keyring, bpf, perf, ptrace, kexec and modules refused",
		"every process of a command killed when it ends (child subreaper)", "no capabilities, also as root")
	no = append(no, "denied paths (paths.deny) inside the workspace cannot be hidden: a workspace holding one is refused",
		"read-only paths: the folders that hold them take no new entries and lose none",
		"other processes are visible in /proc (not their environment or memory)")
	return yes, no
}

func outputCap(n int64) int64 {
	if n <= 0 {
		return sandbox.DefaultOutput
	}
	return n
}

func (s *Sandbox) pids() int64 {
	if s.cfg.Limits.Pids > 0 {
		return s.cfg.Limits.Pids
	}
	return sandbox.DefaultPids
}

// Close stops every started process (see Start) and removes the
// sandbox's folders; every command's processes died with it. It is safe
// to call more than once.
func (s *Sandbox) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.next != nil {
		s.next.end()
		<-s.next.done
		s.next = nil
	}
	err := s.stopAll()
	return errors.Join(err, s.removeState())
}

// Exec runs cmd confined: the path rules planned again from the
// workspace as it is now, Landlock, seccomp, rlimits, and every process
// of the command killed when its main process exits, on timeout and on
// cancellation.
func (s *Sandbox) Exec(ctx context.Context, cmd sandbox.Command) (sandbox.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return sandbox.Result{}, sandbox.ErrClosed
	}
	if len(cmd.Argv) == 0 || cmd.Argv[0] == "" {
		return sandbox.Result{}, sandbox.ErrEmptyCommand
	}
	if err := ctx.Err(); err != nil {
		return sandbox.Result{}, fmt.Errorf("landlock sandbox: %s: %w", cmd.Argv[0], err)
	}
	stdout, stderr := sandbox.NewCappedBuffer(s.cfg.Limits.Output), sandbox.NewCappedBuffer(s.cfg.Limits.Output)
	wd, err := s.workdir(cmd.Dir)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		fmt.Fprintf(stderr, "trio: cannot run %s: %v\n", cmd.Argv[0], err)
		return sandbox.Result{ExitCode: 126, Stderr: stderr.String()}, nil
	}
	if err != nil {
		return sandbox.Result{}, err
	}
	layout, err := sandbox.PlanLayout(s.cfg.Workspace, s.cfg.PathRules)
	if err == nil {
		err = layout.CheckSize()
	}
	if err != nil {
		return sandbox.Result{}, fmt.Errorf("landlock sandbox: %w", err)
	}
	if len(layout.Hidden) > 0 {
		return sandbox.Result{}, CheckWorkspace(s.cfg.Workspace, s.cfg.PathRules)
	}
	timeout := cmd.Timeout
	if timeout <= 0 {
		timeout = s.cfg.Limits.Timeout
	}
	start := time.Now()
	var res sandbox.Result
	res, stdout, stderr, err = s.run(ctx, cmd, wd, layout, timeout)
	// HOME and TMPDIR are the command's own, as userns's tmpfs are: what
	// it left there (a disk filled) does not reach the next command.
	if cerr := s.freshHome(); cerr != nil && err == nil {
		err = cerr
	}
	// What the command made that the rules hide goes (a fresh .git).
	removed, rerr := sandbox.RemoveNewHidden(s.cfg.Workspace, s.cfg.PathRules, layout)
	sandbox.NoteRemoved(stderr, removed)
	if rerr != nil && err == nil {
		err = fmt.Errorf("landlock sandbox: after %s: %w", cmd.Argv[0], rerr)
	}
	res.Duration = time.Since(start)
	res.Stdout, res.StdoutTruncated = stdout.String(), stdout.Truncated()
	res.Stderr, res.StderrTruncated = stderr.String(), stderr.Truncated()
	return res, err
}

// freshHome empties HOME and TMPDIR once a command's processes are gone.
func (s *Sandbox) freshHome() error {
	for _, d := range []string{s.home, s.tmp} {
		if err := removeState(d); err != nil {
			return err
		}
		if err := os.Mkdir(d, 0o700); err != nil {
			return fmt.Errorf("landlock sandbox: %w", err)
		}
	}
	return nil
}

// workdir is the command's working folder on the host. rel must name a
// folder of the workspace; symlinks are followed only inside it.
func (s *Sandbox) workdir(rel string) (string, error) {
	if rel == "" || rel == "." {
		return s.cfg.Workspace, nil
	}
	if !filepath.IsLocal(rel) {
		return "", fmt.Errorf("landlock sandbox: dir %q: %w", rel, sandbox.ErrOutsideWorkspace)
	}
	root, err := os.OpenRoot(s.cfg.Workspace)
	if err != nil {
		return "", fmt.Errorf("landlock sandbox: %w", err)
	}
	defer root.Close()
	st, err := root.Stat(rel)
	switch {
	case err != nil && errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("working directory %s: %w", rel, fs.ErrNotExist)
	case err != nil:
		return "", fmt.Errorf("landlock sandbox: dir %q: %w", rel, sandbox.ErrOutsideWorkspace)
	case !st.IsDir():
		return "", fmt.Errorf("working directory %s: %w", rel, syscall.ENOTDIR)
	}
	// A symlink inside resolved within the workspace: the kernel follows
	// the same one, and Landlock grants only the workspace anyway.
	real, err := filepath.EvalSymlinks(filepath.Join(s.cfg.Workspace, rel))
	if err != nil {
		return "", fmt.Errorf("landlock sandbox: dir %q: %w", rel, err)
	}
	return real, nil
}

// spec is what the helper applies for one command under layout, which
// may write f besides the workspace.
func (s *Sandbox) spec(layout sandbox.Layout, diskLeft int64, f folders) (landlockexec.Spec, error) {
	read := append(append([]string(nil), s.cfg.ToolchainDirs...), s.cfg.EtcFiles...)
	read = append(read, "/etc/passwd", "/etc/group", "/etc/hosts", "/proc")
	if s.cfg.Limits.Network {
		read = append(read, "/etc/resolv.conf")
	}
	if s.cfg.ModCache != "none" {
		read = append(read, s.cfg.ModCache)
	}
	if s.base != "" {
		read = append(read, s.base)
	}
	spec := landlockexec.Spec{
		Filter:    s.filter,
		Read:      read,
		Write:     []string{f.home, f.tmp, f.cache},
		DevFiles:  []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"},
		NoNetwork: !s.cfg.Limits.Network,
		Rlimits:   []landlockexec.Rlimit{{Resource: unix.RLIMIT_CORE, Value: 0}},
	}
	entries, err := writableEntries(s.cfg.Workspace, layout)
	if err != nil {
		return spec, err
	}
	spec.Read = append(spec.Read, s.cfg.Workspace)
	spec.WriteEntries = entries
	if os.Geteuid() != 0 {
		spec.Rlimits = append(spec.Rlimits, landlockexec.Rlimit{Resource: unix.RLIMIT_NPROC, Value: uint64(userTasks() + s.pids())})
	}
	if lim := s.cfg.Limits; lim.Memory > 0 {
		spec.Rlimits = append(spec.Rlimits, landlockexec.Rlimit{Resource: unix.RLIMIT_DATA, Value: uint64(lim.Memory)})
	}
	if diskLeft >= 0 {
		spec.Rlimits = append(spec.Rlimits, landlockexec.Rlimit{Resource: unix.RLIMIT_FSIZE, Value: uint64(diskLeft)})
	}
	return spec, nil
}

// writableEntries are the workspace paths commands may change: the
// workspace itself without read-only paths; with them, every entry of the
// folders that lead to one, except those folders and the read-only
// entries themselves. Landlock grants a right to a whole hierarchy and
// takes none away, so a folder that holds a read-only path is granted
// nothing to write (no new entries, none removed) and its other entries
// are granted one by one.
func writableEntries(ws string, layout sandbox.Layout) ([]string, error) {
	if len(layout.ReadOnly) == 0 {
		return []string{ws}, nil
	}
	ro := map[string]bool{}
	lead := map[string]bool{".": true}
	for _, e := range layout.ReadOnly {
		ro[e.Path] = true
		for d := path.Dir(e.Path); d != "."; d = path.Dir(d) {
			lead[d] = true
		}
	}
	var out []string
	for d := range lead {
		ents, err := os.ReadDir(filepath.Join(ws, filepath.FromSlash(d)))
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("landlock sandbox: %w", err)
		}
		for _, e := range ents {
			rel := path.Join(d, e.Name())
			if ro[rel] || lead[rel] || e.Type()&fs.ModeSymlink != 0 {
				continue
			}
			out = append(out, filepath.Join(ws, filepath.FromSlash(rel)))
		}
	}
	return out, nil
}

// userTasks is how many tasks this user runs now, as RLIMIT_NPROC counts
// them (threads included): the limit is set that far above it.
func userTasks() int64 {
	uid := strconv.Itoa(os.Getuid())
	procs, _ := os.ReadDir("/proc")
	var n int64
	for _, p := range procs {
		if p.Name()[0] < '0' || p.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + p.Name() + "/status")
		if err != nil {
			continue
		}
		var mine bool
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Uid:"); ok {
				f := strings.Fields(v)
				mine = len(f) > 0 && f[0] == uid
			}
			if v, ok := strings.CutPrefix(line, "Threads:"); ok && mine {
				t, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				n += t
			}
		}
	}
	return n
}

// stopGrace is how long the helper has to kill a command's processes
// after SIGTERM before it is killed itself.
const stopGrace = 5 * time.Second

// run runs cmd through the helper started for it (see helper), and
// starts the next command's.
func (s *Sandbox) run(ctx context.Context, cmd sandbox.Command, wd string, layout sandbox.Layout, timeout time.Duration) (_ sandbox.Result, stdout, stderr *sandbox.CappedBuffer, _ error) {
	stdout, stderr = sandbox.NewCappedBuffer(s.cfg.Limits.Output), sandbox.NewCappedBuffer(s.cfg.Limits.Output)
	lim := s.cfg.Limits
	left := int64(-1)
	if lim.Disk > 0 {
		left = max(lim.Disk-(sandbox.DiskUsage(s.cfg.Workspace)+sandbox.DiskUsage(s.stateDir)-s.diskBase), 0)
	}
	spec, err := s.spec(layout, left, s.own())
	if err != nil {
		return sandbox.Result{}, stdout, stderr, err
	}
	env := sandbox.MergeEnv(s.env, cmd.Env)
	if cmd.Check {
		var bases []string
		if s.base != "" {
			bases = append(bases, s.base)
		}
		helper := s.exe
		if s.base == "" {
			helper = ""
		}
		env = sandbox.CheckEnv(env, helper, bases...)
		if helper != "" {
			// CheckEnv's fresh GOCACHE is under /tmp, which this kind
			// does not grant: the sandbox's own TMPDIR instead.
			env = sandbox.MergeEnv(env, []string{"GOCACHE=" + filepath.Join(s.tmp, filepath.Base(sandbox.EnvValue(env, "GOCACHE")))})
		}
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var timedOut atomic.Bool
	if timeout > 0 {
		t := time.AfterFunc(timeout, func() { timedOut.Store(true); cancel() })
		defer t.Stop()
	}
	req := landlockexec.Request(wd, env, spec, cmd.Argv)
	defer func() { s.next = s.startHelper() }()
	var h *helper
	for try := 0; ; try++ {
		h, s.next = s.next, nil
		if h == nil {
			h = s.startHelper()
		}
		stop := context.AfterFunc(rctx, h.end)
		<-h.started
		err = h.startErr
		if err == nil {
			_, err = h.req.Write(req)
			h.req.Close()
		}
		if err != nil {
			h.end()
		}
		<-h.done
		stop()
		// A helper that died before it read its command (killed while
		// it waited) is replaced once.
		if err == nil || rctx.Err() != nil || try > 0 {
			break
		}
	}
	stdout, stderr = h.stdout, h.stderr
	if err != nil || h.cmd.ProcessState == nil {
		return sandbox.Result{}, stdout, stderr, fmt.Errorf("landlock sandbox: start %s: %w", cmd.Argv[0], errors.Join(err, h.waitErr))
	}
	c := h.cmd
	code := exitCode(c.ProcessState)
	res := sandbox.Result{ExitCode: code, TimedOut: timedOut.Load()}
	if lim.Disk > 0 && !res.TimedOut && ctx.Err() == nil {
		used := sandbox.DiskUsage(s.cfg.Workspace) + sandbox.DiskUsage(s.stateDir) - s.diskBase
		if code == 128+int(syscall.SIGXFSZ) || used >= lim.Disk {
			res.DiskExceeded = true
			fmt.Fprintf(stderr, "\ntrio: disk limit of %d bytes exceeded: the run's files (workspace growth and build cache) may take no more; delete files to go on\n", lim.Disk)
			if res.ExitCode == 0 {
				res.ExitCode = 128 + int(syscall.SIGXFSZ)
			}
		}
	}
	if ctx.Err() != nil {
		return res, stdout, stderr, fmt.Errorf("landlock sandbox: %s: %w", cmd.Argv[0], context.Cause(ctx))
	}
	if code == landlockexec.ExitCode && strings.HasPrefix(stderr.String(), landlockexec.Marker) {
		return res, stdout, stderr, fmt.Errorf("landlock sandbox: %s", strings.TrimSpace(stderr.String()))
	}
	return res, stdout, stderr, nil
}

// helper is a command's helper (supervisor and second stage) started
// before the command is known: the two starts of this executable are
// most of what a command costs, and they happen while no command waits;
// the command then only wakes the second stage, which reads it from a
// pipe (landlockexec.Spec.Request) and confines it as it would have at
// its start. Nothing of the command is decided early: its rules,
// limits, environment and folder come with it. While it waits, the
// helper runs with the sandbox's environment and holds nothing of the
// workspace; SIGTERM (end, Close, trio's death) makes its supervisor
// kill every process below it.
type helper struct {
	cmd            *exec.Cmd
	req            *os.File // the write end of the command's pipe
	stdout, stderr *sandbox.CappedBuffer
	end            context.CancelFunc // SIGTERM to the supervisor, if it runs
	started        chan struct{}      // closed once Start returned, with startErr
	startErr       error
	done           chan struct{} // closed once the helper is gone, with waitErr
	waitErr        error
}

// startHelper starts a helper in the background.
func (s *Sandbox) startHelper() *helper {
	ctx, end := context.WithCancel(context.Background())
	h := &helper{stdout: sandbox.NewCappedBuffer(s.cfg.Limits.Output), stderr: sandbox.NewCappedBuffer(s.cfg.Limits.Output),
		end: end, started: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(h.done)
		defer end()
		r, w, err := os.Pipe()
		if err != nil {
			h.startErr = err
			close(h.started)
			return
		}
		h.req = w
		c := exec.CommandContext(ctx, "/proc/self/exe", append([]string{landlockexec.SupervisorFlag}, landlockexec.Spec{Request: 3}.Args(nil)...)...)
		c.Args[0] = landlockexec.Arg0
		c.Env, c.Dir, c.Stdout, c.Stderr, c.ExtraFiles = s.env, "/", h.stdout, h.stderr, []*os.File{r}
		// A session of its own: no terminal to push input into. SIGTERM
		// to the helper, whose death trio's own would also cause, makes
		// it kill every process of the command; WaitDelay bounds both
		// that and the pipes' closing.
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGTERM}
		c.Cancel = func() error { return c.Process.Signal(syscall.SIGTERM) }
		c.WaitDelay = stopGrace
		h.cmd = c
		// Pdeathsig fires when the thread that started the helper exits:
		// this goroutine keeps it until the helper is gone.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		h.startErr = c.Start()
		r.Close()
		close(h.started)
		if h.startErr != nil {
			w.Close()
			return
		}
		h.waitErr = c.Wait()
	}()
	return h
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
