package userns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	"github.com/trioagent/trio/sandbox/internal/syscallfilter"
)

// pipeGrace bounds the wait for a command's output after bwrap is gone.
// Every process of the command dies with its pid namespace, so the pipes
// close at once; the grace only covers that teardown.
const pipeGrace = time.Second

// diskPollMin is the shortest interval between two measurements of the
// workspace while a command runs; a walk that takes longer stretches it
// (see Exec), so measuring never costs more than about a twentieth of a
// command's time.
const diskPollMin = 100 * time.Millisecond

// Sandbox runs each command of one run in its own bubblewrap sandbox. It
// needs no root. Exec calls are serialised (see Exec).
type Sandbox struct {
	cfg      config
	stateDir string   // generated /etc files, empty stand-ins, the build cache
	exe      *os.File // this executable, bound at confine.Path
	filter   []byte   // seccomp program
	env      []string
	base     []string // bwrap arguments every command shares
	abi      int      // Landlock ABI of the kernel; 0 when it has none
	diskBase int64    // workspace and cache usage when the sandbox opened
	// cacheUsed is the build cache's usage as last measured, after the
	// last command: only commands write there, so between two commands it
	// holds. -1 when unknown (a command is running or was cut short).
	cacheUsed int64

	// tree is the trusted builds' cache (see seedCache and trusted),
	// nil without a warm base; runDir is the folder beside the base that
	// holds it.
	tree     *gocacheprog.Tree
	runDir   string
	building atomic.Bool // a trusted build is running: the tree grows
	resets   int
	kept     []string // replaced caches a started process may still write to
	// diskMu guards diskBase and kept for a started process's disk watch;
	// Reset, the only writer, also holds mu, so Exec reads them under mu.
	diskMu     sync.Mutex
	background sync.WaitGroup // removals Close waits for

	mu     sync.Mutex
	closed bool

	procs sandbox.Started // started and not stopped
}

var _ sandbox.Sandbox = (*Sandbox)(nil)

// New checks that this machine can run the sandbox (see Available) and
// prepares it for one run: spec.Workspace (required) is bound read-write
// at /workspace, spec.Limits bound each command (see the package
// documentation for which are enforced and how), spec.PathRules (nil:
// the whole workspace writable) are planned again before every command
// (sandbox.PlanLayout), so a rule that starts to match (the tests
// folder, once the plan names it; a .env a command made) holds from the
// next command on, and spec.Progress is told about slow steps (building
// the warm cache). spec.Settings is a Config or *Config, nil for the
// defaults; spec.RunID is not used. Nothing runs until Exec.
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
	if err := probe(ctx, cfg.Bwrap); err != nil {
		return nil, err
	}
	filter, err := syscallfilter.Program(syscallfilter.Options{})
	if err != nil {
		return nil, err
	}
	// The executable as it is now, even if its file is replaced or removed
	// while the run goes on.
	exe, err := os.Open("/proc/self/exe")
	if err != nil {
		return nil, fmt.Errorf("userns sandbox: open own executable: %w", err)
	}
	s := &Sandbox{cfg: cfg, exe: exe, filter: filter, abi: confine.ABI()}
	defer func() {
		if retErr != nil {
			s.teardown()
		}
	}()
	removeLeftovers(cfg.StateDir)
	if s.stateDir, err = os.MkdirTemp(cfg.StateDir, statePrefix); err != nil {
		return nil, fmt.Errorf("userns sandbox: state folder: %w", err)
	}
	if err := os.WriteFile(filepath.Join(s.stateDir, ownerFile), []byte(sandbox.OwnerLabel()+"\n"), 0o444); err != nil {
		return nil, fmt.Errorf("userns sandbox: state: %w", err)
	}
	if err := s.populateState(); err != nil {
		return nil, err
	}
	if err := s.seedCache(ctx); err != nil {
		return nil, err
	}
	s.env = commandEnv(cfg, s.tree != nil)
	s.base = s.baseArgs()
	if cfg.Limits.Disk > 0 {
		s.cacheUsed = s.cachesUsage()
		s.diskBase = sandbox.DiskUsage(cfg.Workspace) + s.cacheUsed
	}
	return s, nil
}

// commandEnv is the allow-listed environment of every command (see
// sandbox.BaseEnv), with the Go and Python settings for this sandbox's
// folders; without network, module and package downloads are off so that
// they fail fast. With a warm base, the go command's cache is Trio's cache
// program over GOCACHE and the read-only trusted builds, which hold the
// base (see seedCache and trusted).
func commandEnv(cfg config, warm bool) []string {
	extra := []string{"GOCACHE=" + CacheDir + "/go-build", "XDG_CACHE_HOME=" + CacheDir, "GOPATH=" + HomeDir + "/go",
		"GOTELEMETRY=off", "TMPDIR=/tmp"}
	if warm {
		extra = append(extra, "GOCACHEPROG="+gocacheprog.Prog(confine.Path, CacheDir+"/go-build", trustedCacheDir))
	}
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

// populateState makes the state folder's content: the cache, an empty
// file and an empty folder to bind over hidden paths, and the generated
// /etc files.
func (s *Sandbox) populateState() error {
	uid, gid := os.Getuid(), os.Getgid()
	for _, d := range []string{"cache", "etc"} {
		if err := os.Mkdir(filepath.Join(s.stateDir, d), 0o755); err != nil {
			return fmt.Errorf("userns sandbox: state: %w", err)
		}
	}
	if err := os.Mkdir(filepath.Join(s.stateDir, "empty-dir"), 0o555); err != nil {
		return fmt.Errorf("userns sandbox: state: %w", err)
	}
	passwd := fmt.Sprintf("trio:x:%d:%d:trio sandbox:%s:/bin/sh\n", uid, gid, HomeDir)
	group := fmt.Sprintf("trio:x:%d:\n", gid)
	if uid != 0 {
		passwd = "root:x:0:0:root:/root:/usr/sbin/nologin\n" + passwd
	}
	if gid != 0 {
		group = "root:x:0:\n" + group
	}
	if uid != 65534 {
		passwd += "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
	}
	if gid != 65534 {
		group += "nogroup:x:65534:\n"
	}
	files := map[string]string{
		"empty":           "",
		"etc/passwd":      passwd,
		"etc/group":       group,
		"etc/hosts":       "127.0.0.1\tlocalhost trio\n::1\tlocalhost ip6-localhost ip6-loopback\n",
		"etc/hostname":    "trio\n",
		"etc/resolv.conf": "",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(s.stateDir, name), []byte(content), 0o444); err != nil {
			return fmt.Errorf("userns sandbox: state: %w", err)
		}
	}
	return nil
}

// Fixed descriptors of the bwrap process (ExtraFiles start at 3).
const (
	fdSeccomp = 3
	fdExe     = 4
	fdInfo    = 5
	fdReady   = 6 // a started process's helper says it is confined (see confine.Spec.Ready)
)

// baseArgs are the bwrap arguments shared by every command: namespaces,
// the read-only host toolchain, generated /etc, private /proc, /dev, /tmp
// and HOME, the cache, the module cache and the workspace.
func (s *Sandbox) baseArgs() []string {
	lim := s.cfg.Limits
	a := []string{
		"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		// No user namespace inside: what a namespace would let a command
		// do again (mount, unshare) stays out of reach even without seccomp.
		"--disable-userns",
		// The command is killed with its parent; a new session keeps it
		// from injecting input into trio's terminal (TIOCSTI).
		"--die-with-parent", "--new-session",
		// Run as root, bwrap would keep every capability inside the
		// namespace; as another user there are none to drop.
		"--cap-drop", "ALL",
		"--hostname", "trio",
		"--clearenv",
	}
	if !lim.Network {
		a = append(a, "--unshare-net")
	}
	for _, d := range append(append([]string(nil), s.cfg.ToolchainDirs...), s.cfg.EtcFiles...) {
		st, err := os.Lstat(d)
		switch {
		case err != nil:
			continue // missing on this host
		case st.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				a = append(a, "--symlink", target, d)
			}
		default:
			a = append(a, "--ro-bind", d, d)
		}
	}
	etc := []string{"passwd", "group", "hostname"}
	if lim.Network {
		// The host's resolver and hosts, since the network is the host's.
		for _, f := range []string{"/etc/resolv.conf", "/etc/hosts"} {
			a = append(a, "--ro-bind-try", f, f)
		}
	} else {
		etc = append(etc, "hosts", "resolv.conf")
	}
	for _, f := range etc {
		a = append(a, "--ro-bind", filepath.Join(s.stateDir, "etc", f), "/etc/"+f)
	}
	size := strconv.FormatInt(tmpfsSize(lim.Memory), 10)
	a = append(a,
		"--proc", "/proc", "--dev", "/dev",
		"--size", size, "--perms", "1777", "--tmpfs", "/tmp",
		"--size", size, "--perms", "0700", "--tmpfs", HomeDir,
		"--bind", filepath.Join(s.stateDir, "cache"), CacheDir,
	)
	if s.tree != nil {
		a = append(a, "--ro-bind", s.tree.Dir(), trustedCacheDir)
	}
	if s.cfg.ModCache != "none" {
		a = append(a, "--ro-bind", s.cfg.ModCache, ModCacheDir)
	}
	a = append(a, "--bind", s.cfg.Workspace, WorkspaceDir)
	return a
}

// tmpfsSize is the size of each of /tmp and HOME: a quarter of the memory
// limit, so both together stay well below it, 256 MiB without one. tmpfs
// pages are not counted in any process's RLIMIT_DATA.
func tmpfsSize(memory int64) int64 {
	if memory <= 0 {
		return 256 << 20
	}
	return max(memory/4, 16<<20)
}

// layoutArgs lay the path rules out over the workspace: read-only entries
// bound read-only onto themselves, then hidden ones covered by an empty
// file or folder (read-only too). Hidden entries come last so that one
// inside a read-only folder is covered on top of it.
func (s *Sandbox) layoutArgs(l sandbox.Layout) []string {
	var a []string
	for _, e := range l.ReadOnly {
		a = append(a, "--ro-bind", filepath.Join(s.cfg.Workspace, filepath.FromSlash(e.Path)), path.Join(WorkspaceDir, e.Path))
	}
	for _, e := range l.Hidden {
		src := filepath.Join(s.stateDir, "empty")
		if e.Dir {
			src = filepath.Join(s.stateDir, "empty-dir")
		}
		a = append(a, "--ro-bind", src, path.Join(WorkspaceDir, e.Path))
	}
	return a
}

// Info reports an isolating sandbox whose workspace is /workspace, and
// which limits it enforces.
func (s *Sandbox) Info() sandbox.Info {
	enf, not := s.enforced()
	return sandbox.Info{Kind: Kind, Isolated: true, WorkspaceDir: WorkspaceDir, Enforced: enf, NotEnforced: not}
}

// enforced lists what of the Limits and of the isolation holds, and how.
func (s *Sandbox) enforced() (yes, no []string) {
	lim := s.cfg.Limits
	if lim.Timeout > 0 {
		yes = append(yes, "timeout "+lim.Timeout.String())
	} else {
		no = append(no, "timeout: no limit set")
	}
	yes = append(yes, "output "+formatBytes(outputCap(lim.Output))+" per stream")
	if lim.Memory > 0 {
		yes = append(yes, "memory "+formatBytes(lim.Memory)+" per process (RLIMIT_DATA)")
	} else {
		no = append(no, "memory: no limit set")
	}
	yes = append(yes, "pids "+strconv.FormatInt(s.pids(), 10)+" (RLIMIT_NPROC, in the command's user namespace)")
	if lim.Disk > 0 {
		yes = append(yes, "disk "+formatBytes(lim.Disk)+" (measured workspace growth and build cache; RLIMIT_FSIZE)")
	} else {
		no = append(no, "disk: no limit set")
	}
	no = append(no, "cpus: needs a delegated cgroup, which this sandbox does not use")
	if lim.Network {
		yes = append(yes, "network: the host's (Limits.Network)")
	} else {
		yes = append(yes, "network: loopback only (network namespace)")
	}
	if s.abi > 0 {
		w := "landlock ABI " + strconv.Itoa(min(s.abi, 7)) + ": writes only in the workspace, /tmp, HOME and the cache"
		if s.cfg.DenyTCP {
			w += "; no TCP bind or connect"
		}
		yes = append(yes, w)
	} else {
		no = append(no, "landlock: not supported by this kernel")
	}
	yes = append(yes, "seccomp: mount, namespaces, keyring, bpf, perf, ptrace, kexec and modules refused")
	if s.tree != nil && s.abi >= trustedABI {
		yes = append(yes, "trusted builds: go test runs its test binaries in a nested Landlock domain, apart from the go command and the build cache the Critic reuses")
	}
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
	return DefaultPids
}

// Close stops every started process (see Start) and removes the state
// folder. Nothing else is left: each command's processes died with it. After a kill -9, the next New on this host
// removes the folder (see removeLeftovers). It is safe to call more than
// once.
func (s *Sandbox) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	err := s.stopAll()
	return errors.Join(err, s.teardown())
}

func (s *Sandbox) teardown() error {
	s.background.Wait()
	if s.exe != nil {
		s.exe.Close()
	}
	var err error
	if s.runDir != "" {
		err = removeState(s.runDir)
	}
	if s.stateDir == "" {
		return err
	}
	return errors.Join(err, removeState(s.stateDir))
}

// State folders are statePrefix plus a random suffix in Config.StateDir,
// each with an ownerFile naming the process that made it; so are the
// folders of the trusted builds beside the warm base (see seedCache).
const (
	statePrefix = "trio-userns-"
	ownerFile   = "owner"
)

// removeState removes a state folder (see sandbox.RemoveState).
func removeState(dir string) error {
	if err := sandbox.RemoveState(dir); err != nil {
		return fmt.Errorf("userns sandbox: %w", err)
	}
	return nil
}

// removeLeftovers removes this user's state folders in stateDir (or
// trusted builds' folders) whose owner process died without Close (kill
// -9): their commands died with it (--die-with-parent), only the folders
// stay behind.
func removeLeftovers(stateDir string) ([]sandbox.Leftover, error) {
	return sandbox.RemoveLeftovers(Kind, filepath.Join(stateDir, statePrefix+"*"), ownerFile)
}

// Exec runs cmd in a new sandbox: new namespaces, the path rules planned
// again from the workspace as it is now, Landlock, seccomp and rlimits.
// When the command's main process exits, on timeout and on cancellation,
// every process it started dies with its pid namespace.
//
// Calls are serialised: between planning the layout and mounting it no
// sandboxed process exists, so none can swap a planned path for a symlink
// (every process of the previous command died with its namespace).
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
		return sandbox.Result{}, fmt.Errorf("userns sandbox: %s: %w", cmd.Argv[0], err)
	}
	stdout, stderr := sandbox.NewCappedBuffer(s.cfg.Limits.Output), sandbox.NewCappedBuffer(s.cfg.Limits.Output)
	wd, err := s.workdir(cmd.Dir)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		// The command's problem, reported as a result like the other kinds.
		fmt.Fprintf(stderr, "trio: cannot run %s: %v\n", cmd.Argv[0], err)
		return sandbox.Result{ExitCode: 127, Stderr: stderr.String()}, nil
	}
	if err != nil {
		return sandbox.Result{}, err
	}
	layout, err := sandbox.PlanLayout(s.cfg.Workspace, s.cfg.PathRules)
	if err == nil {
		err = layout.CheckSize()
	}
	if err != nil {
		return sandbox.Result{}, fmt.Errorf("userns sandbox: %w", err)
	}
	timeout := cmd.Timeout
	if timeout <= 0 {
		timeout = s.cfg.Limits.Timeout
	}
	start := time.Now()
	res, err := s.run(ctx, cmd, wd, layout, timeout, stdout, stderr, s.trusted(cmd))
	// What the command made that the rules hide goes (a fresh .git).
	removed, rerr := sandbox.RemoveNewHidden(s.cfg.Workspace, s.cfg.PathRules, layout)
	sandbox.NoteRemoved(stderr, removed)
	if rerr != nil && err == nil {
		err = fmt.Errorf("userns sandbox: after %s: %w", cmd.Argv[0], rerr)
	}
	res.Duration = time.Since(start)
	res.Stdout, res.StdoutTruncated = stdout.String(), stdout.Truncated()
	res.Stderr, res.StderrTruncated = stderr.String(), stderr.Truncated()
	return res, err
}

// workdir is the command's working folder inside the sandbox. rel must
// name a folder of the workspace; symlinks are followed only inside it.
func (s *Sandbox) workdir(rel string) (string, error) {
	if rel == "" || rel == "." {
		return WorkspaceDir, nil
	}
	if !filepath.IsLocal(rel) {
		return "", fmt.Errorf("userns sandbox: dir %q: %w", rel, sandbox.ErrOutsideWorkspace)
	}
	root, err := os.OpenRoot(s.cfg.Workspace)
	if err != nil {
		return "", fmt.Errorf("userns sandbox: %w", err)
	}
	defer root.Close()
	st, err := root.Stat(rel)
	switch {
	case err != nil && errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("working directory %s: %w", rel, fs.ErrNotExist)
	case err != nil:
		// os.Root refuses a path that leads out.
		return "", fmt.Errorf("userns sandbox: dir %q: %w", rel, sandbox.ErrOutsideWorkspace)
	case !st.IsDir():
		return "", fmt.Errorf("working directory %s: %w", rel, syscall.ENOTDIR)
	}
	return path.Join(WorkspaceDir, filepath.ToSlash(filepath.Clean(rel))), nil
}

// diskUsed is what the run has added to the host's disk: the workspace's
// growth since the sandbox opened plus the build cache, both measured now.
func (s *Sandbox) diskUsed() int64 {
	s.diskMu.Lock()
	base, kept := s.diskBase, s.kept
	s.diskMu.Unlock()
	return sandbox.DiskUsage(s.cfg.Workspace) + s.cachesUsage() + keptUsage(kept) - base
}

// keptUsage is what the caches Reset replaced while a started process
// could still write to them hold (see Reset).
func keptUsage(kept []string) int64 {
	var n int64
	for _, d := range kept {
		n += sandbox.DiskUsage(d)
	}
	return n
}

// started reports whether a process Start started is alive: it may write
// to the cache between commands.
func (s *Sandbox) started() bool {
	return s.procs.Len() > 0
}

// diskUsedAfter is diskUsed once a command's processes are gone; it
// keeps the build cache's figure for diskUsedBefore.
func (s *Sandbox) diskUsedAfter() int64 {
	s.cacheUsed = s.cachesUsage()
	return sandbox.DiskUsage(s.cfg.Workspace) + s.cacheUsed + keptUsage(s.kept) - s.diskBase
}

// diskUsedBefore is diskUsed before a command: the workspace measured now
// (the host's file tools write there between commands), the build cache
// as the last command left it, when that is known: only commands write
// there, and this halves the walks of a short command.
func (s *Sandbox) diskUsedBefore() int64 {
	if s.cacheUsed < 0 || s.started() || len(s.kept) > 0 {
		return s.diskUsed()
	}
	return sandbox.DiskUsage(s.cfg.Workspace) + s.cacheUsed - s.diskBase
}

func (s *Sandbox) cacheDir() string { return filepath.Join(s.stateDir, "cache") }

// cachesUsage is what the build caches hold: the run's own, and what the
// trusted builds added to the base (while one runs, measured; otherwise
// as its check left it: nothing else writes there).
func (s *Sandbox) cachesUsage() int64 {
	n := sandbox.DiskUsage(s.cacheDir())
	switch {
	case s.tree == nil:
	case s.building.Load():
		n += s.tree.Usage()
	default:
		n += s.tree.Added()
	}
	return n
}

// bases are the trusted build caches commands see: the trusted builds,
// which hold the warm base, when there is one.
func (s *Sandbox) bases() []string {
	if s.tree == nil {
		return nil
	}
	return []string{trustedCacheDir}
}

// trustedCacheDir is where commands see the trusted builds, the warm
// base's entries among them (see seedCache): read-only, on a read-only
// bind outside every folder Landlock lets them write, except to a trusted
// build's go command, whose GOCACHE it is.
const trustedCacheDir = "/.trio/trusted"

// confineSpec is what the helper applies to itself before a command:
// Landlock's writable folders, TCP, and the rlimits every command has.
func (s *Sandbox) confineSpec() confine.Spec {
	spec := confine.Spec{
		Writable: []string{WorkspaceDir, "/tmp", HomeDir, CacheDir, "/dev"},
		DenyTCP:  s.cfg.DenyTCP,
		Rlimits: []confine.Rlimit{
			{Resource: unix.RLIMIT_NPROC, Value: uint64(s.pids())},
			{Resource: unix.RLIMIT_CORE, Value: 0},
		},
	}
	if lim := s.cfg.Limits; lim.Memory > 0 {
		spec.Rlimits = append(spec.Rlimits, confine.Rlimit{Resource: unix.RLIMIT_DATA, Value: uint64(lim.Memory)})
	}
	return spec
}

// trustedABI is the Landlock ABI trusted builds need: from ABI 3 Landlock
// refuses truncate(2) on files a domain may not write, and the tree's
// files are links to the base's, which a test binary could otherwise
// empty in place for every run.
const trustedABI = 3

// trusted reports whether cmd runs as a trusted build (see
// sandbox.TrustedGo): on a workspace whose sources the go command hashes
// whole (sandbox.TrustedGoWorkspace), with the trusted builds' tree over
// a warm base, Landlock to confine the test binaries, no environment of
// cmd's own
// (GOFLAGS could name a -toolexec program) and no started process, which
// could change a source file between the go command hashing it and the
// compiler reading it. Exec calls are serialised and no process of an
// earlier command is alive, so the toolchain and the test binaries it runs
// are the only processes while it runs.
func (s *Sandbox) trusted(cmd sandbox.Command) bool {
	return s.tree != nil && s.abi >= trustedABI && len(cmd.Env) == 0 && !s.started() && sandbox.TrustedGo(cmd.Argv) &&
		sandbox.TrustedGoWorkspace(s.cfg.Workspace)
}

// bwrapArgs are bwrap's arguments for cmd in wd with layout's path rules,
// the helper confining it by spec. A trusted build's go command gets the
// trusted builds as its GOCACHE, writable, and runs the programs it
// builds through the helper's nested confinement (confine.NestPath),
// which may not write there.
func (s *Sandbox) bwrapArgs(cmd sandbox.Command, wd string, layout sandbox.Layout, spec confine.Spec, trusted bool, roDirs ...string) ([]string, error) {
	if trusted {
		spec.Writable = append(spec.Writable[:len(spec.Writable):len(spec.Writable)], trustedCacheDir)
	}
	specJSON, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("userns sandbox: %w", err)
	}
	args := append(append([]string(nil), s.base...), s.layoutArgs(layout)...)
	for _, d := range roDirs {
		args = append(args, "--ro-bind", d, d)
	}
	env := sandbox.MergeEnv(s.env, cmd.Env)
	switch {
	case trusted:
		args = append(args, "--bind", s.tree.Dir(), trustedCacheDir)
		env = sandbox.MergeEnv(env, []string{"GOCACHE=" + trustedCacheDir, "GOCACHEPROG=",
			"GOFLAGS=" + strings.TrimSpace(sandbox.EnvValue(env, "GOFLAGS")+" -buildvcs=false -exec="+confine.NestPath)})
		if cmd.Check {
			env = sandbox.CheckEnv(env, "") // Python's bytecode
		}
	case cmd.Check:
		env = sandbox.CheckEnv(env, confine.Path, s.bases()...)
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		args = append(args, "--setenv", k, v)
	}
	args = append(args,
		"--ro-bind-fd", strconv.Itoa(fdExe), confine.Path,
		"--symlink", confine.Path, confine.NestPath,
		"--seccomp", strconv.Itoa(fdSeccomp),
		"--info-fd", strconv.Itoa(fdInfo),
		"--chdir", wd,
		"--", confine.Path, confine.Flag, string(specJSON), "--")
	return append(args, cmd.Argv...), nil
}

// startBwrap starts bwrap with args, its stdin (nil: /dev/null), stdout
// and stderr (and ready at fdReady when not nil), and gives it the
// seccomp filter; info is the read end of
// bwrap's info pipe. bwrap dies with the calling thread (Pdeathsig): the
// caller keeps its goroutine locked to that thread until bwrap is reaped.
func (s *Sandbox) startBwrap(args []string, stdin, stdout, stderr, ready *os.File) (c *exec.Cmd, info *os.File, err error) {
	secR, secW, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("userns sandbox: pipe: %w", err)
	}
	infoR, infoW, err := os.Pipe()
	if err != nil {
		closeAll(secR, secW)
		return nil, nil, fmt.Errorf("userns sandbox: pipe: %w", err)
	}
	// bwrap's own environment is empty: nothing a command asks for
	// (LD_PRELOAD) reaches the host-side process.
	c = &exec.Cmd{Path: s.cfg.Bwrap, Args: append([]string{"bwrap"}, args...), Env: []string{},
		Stdout: stdout, Stderr: stderr, ExtraFiles: []*os.File{secR, s.exe, infoW},
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}}
	if stdin != nil {
		c.Stdin = stdin
	}
	if ready != nil {
		c.ExtraFiles = append(c.ExtraFiles, ready) // fdReady
	}
	startErr := c.Start()
	closeAll(secR, infoW)
	if startErr != nil {
		closeAll(secW, infoR)
		return nil, nil, fmt.Errorf("userns sandbox: start bwrap: %w", startErr)
	}
	// The filter is smaller than a pipe's buffer: this does not block.
	_, werr := secW.Write(s.filter)
	secW.Close()
	if werr != nil {
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		c.Wait()
		infoR.Close()
		return nil, nil, fmt.Errorf("userns sandbox: seccomp filter: %w", werr)
	}
	return c, infoR, nil
}

func (s *Sandbox) run(ctx context.Context, cmd sandbox.Command, wd string, layout sandbox.Layout, timeout time.Duration, stdout, stderr *sandbox.CappedBuffer, trusted bool) (_ sandbox.Result, retErr error) {
	lim := s.cfg.Limits
	spec := s.confineSpec()
	if lim.Disk > 0 {
		// No single file may take more than what is left; the walk below
		// catches many smaller ones.
		left := max(lim.Disk-s.diskUsedBefore(), 0)
		s.cacheUsed = -1 // until measured after this command
		spec.Rlimits = append(spec.Rlimits, confine.Rlimit{Resource: unix.RLIMIT_FSIZE, Value: uint64(left)})
	}
	args, err := s.bwrapArgs(cmd, wd, layout, spec, trusted)
	if err != nil {
		return sandbox.Result{}, err
	}
	// After a trusted build, once its processes are gone, the tree keeps
	// only what Check keeps, however the command ended.
	checkTree := func() error { return nil }
	if trusted {
		s.building.Store(true)
		checkTree = func() error {
			if !s.building.Swap(false) {
				return nil
			}
			if err := s.tree.Check(); err != nil {
				return fmt.Errorf("userns sandbox: after %s: %w", cmd.Argv[0], err)
			}
			return nil
		}
		defer func() {
			if err := checkTree(); retErr == nil {
				retErr = err
			}
		}()
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return sandbox.Result{}, fmt.Errorf("userns sandbox: pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(outR, outW)
		return sandbox.Result{}, fmt.Errorf("userns sandbox: pipe: %w", err)
	}
	// Pdeathsig fires when the thread that started bwrap exits, not the
	// process: keep this goroutine on that thread until bwrap is reaped.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c, infoR, err := s.startBwrap(args, nil, outW, errW, nil)
	closeAll(outW, errW)
	if err != nil {
		closeAll(outR, errR)
		return sandbox.Result{}, err
	}
	pgid := c.Process.Pid
	kill := func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) }

	var copies sync.WaitGroup
	copies.Add(3)
	go func() { defer copies.Done(); io.Copy(stdout, outR) }()
	go func() { defer copies.Done(); io.Copy(stderr, errR) }()
	// bwrap writes the info document once the sandbox is set up: without
	// it, a failure is bwrap's, not the command's.
	var info []byte
	go func() { defer copies.Done(); info, _ = io.ReadAll(infoR) }()

	var timer <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timer = t.C
	}
	var poll <-chan time.Time
	if lim.Disk > 0 {
		poll = time.After(diskPollMin)
	}
	waited := make(chan error, 1)
	go func() { waited <- c.Wait() }()
	var timedOut, cancelled, overDisk bool
	var waitErr error
wait:
	for {
		select {
		case waitErr = <-waited:
			break wait
		case <-timer:
			timedOut = true
			kill()
		case <-ctx.Done():
			cancelled = true
			kill()
		case <-poll:
			t0 := time.Now()
			if s.diskUsed() >= lim.Disk {
				overDisk = true
				kill()
				continue
			}
			poll = time.After(max(diskPollMin, 20*time.Since(t0)))
		}
	}
	// No kill after Wait: bwrap's pid is free again and could name another
	// group; everything the command started died with its pid namespace.

	done := make(chan struct{})
	go func() { copies.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(pipeGrace):
		closeAll(outR, errR, infoR)
		<-done
	}
	closeAll(outR, errR, infoR)

	code := exitCode(c.ProcessState)
	if waitErr != nil && c.ProcessState == nil {
		return sandbox.Result{ExitCode: code}, fmt.Errorf("userns sandbox: wait bwrap: %w", waitErr)
	}
	if err := checkTree(); err != nil {
		return sandbox.Result{ExitCode: code}, err
	}
	res := sandbox.Result{ExitCode: code, TimedOut: timedOut}
	used := int64(0)
	if lim.Disk > 0 {
		// Every process of the command died with its pid namespace.
		used = s.diskUsedAfter()
	}
	if lim.Disk > 0 && !timedOut && !cancelled {
		// At the limit counts: RLIMIT_FSIZE stops a file exactly there,
		// and a program that ignores SIGXFSZ (Python) exits normally.
		if overDisk || code == 128+int(syscall.SIGXFSZ) || used >= lim.Disk {
			res.DiskExceeded = true
			s.noteDisk(stderr)
			if res.ExitCode == 0 {
				res.ExitCode = 128 + int(syscall.SIGXFSZ)
			}
		}
	}
	if cancelled {
		return res, fmt.Errorf("userns sandbox: %s: %w", cmd.Argv[0], context.Cause(ctx))
	}
	if len(info) == 0 && !timedOut && !overDisk {
		return res, fmt.Errorf("userns sandbox: bwrap failed before the command started (exit %d): %s", code, tail(stderr.String()))
	}
	if code == confine.ExitCode && strings.HasPrefix(stderr.String(), confine.Marker) {
		return res, fmt.Errorf("userns sandbox: %s", tail(stderr.String()))
	}
	return res, nil
}

// noteDisk tells a command's stderr that it was stopped at the disk limit.
func (s *Sandbox) noteDisk(stderr io.Writer) {
	fmt.Fprintf(stderr, "\ntrio: disk limit of %s exceeded: the run's files (workspace growth and build cache) "+
		"may take no more; delete files to go on\n", formatBytes(s.cfg.Limits.Disk))
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		f.Close()
	}
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

// tail is the end of what bwrap wrote, for an error message.
func tail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 512 {
		s = s[len(s)-512:]
	}
	return s
}
