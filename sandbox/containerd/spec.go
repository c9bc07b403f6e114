package containerd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/contrib/seccomp"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/trioagent/trio/sandbox"
)

// initArgs is the container's first process. The shell waits for cat,
// which reads the run's liveness FIFO (see aliveDir) until its one writer,
// this process, is gone: then cat sees EOF, the shell exits and the kernel
// kills everything left in the container's pid namespace, so a killed
// trio leaves nothing running. While it waits the shell reaps the orphans
// of finished commands. It installs no signal handler, so no signal sent
// from inside the container reaches it (pid 1 of its namespace); it runs
// as its own uid, which commands cannot signal or trace either. "exit 0"
// keeps the shell from exec'ing cat in its place.
var initArgs = []string{"/bin/sh", "-c", "cat " + aliveDir + "/" + aliveFIFO + "; exit 0"}

// The liveness FIFO, inside the container and in the run's state folder.
const (
	aliveDir  = "/.trio"
	aliveFIFO = "alive"
)

// parts are what each of a run's containers has of its own: each box's
// (see box) and each started process's (see Start).
type parts struct {
	execd   *execServer // nil: runc's exec, with the shell init
	cache   string      // the host folder bound at CacheDir
	gocache string      // the folder of the Go build cache overlay's upper and work layers
	layout  sandbox.Layout
}

func (s *Sandbox) containerOpts(ctx context.Context, id string, args []string, p parts) ([]client.NewContainerOpts, error) {
	lim := s.cfg.Limits
	specOpts := []oci.SpecOpts{
		oci.WithDefaultSpec(),
		oci.WithProcessArgs(args...),
		oci.WithProcessCwd("/"),
		oci.WithEnv(s.env),
		oci.WithUIDGID(s.initUID, s.initUID),
		s.withInitPrivileges(p.execd != nil),
		oci.WithNoNewPrivileges,
		// After the capabilities: the profile follows them.
		seccomp.WithDefaultProfile(),
		withoutSyscalls("ptrace"),
		oci.WithRootFSReadonly(),
		oci.WithHostname("trio"),
		oci.WithMounts(s.mounts(p)),
	}
	if lim.Network {
		specOpts = append(specOpts, oci.WithHostNamespace(specs.NetworkNamespace), oci.WithHostResolvconf, oci.WithHostHostsFile)
	}
	if lim.Memory > 0 {
		specOpts = append(specOpts, oci.WithMemoryLimit(uint64(lim.Memory)))
		if swapAccounting() {
			// memory+swap = memory: the limit is not dodged by swapping.
			specOpts = append(specOpts, oci.WithMemorySwap(lim.Memory))
		}
	}
	if lim.CPUs > 0 {
		const period = 100000
		specOpts = append(specOpts, oci.WithCPUCFS(int64(lim.CPUs*period), period))
	}
	pids := lim.Pids
	if pids <= 0 {
		pids = DefaultPids
	}
	specOpts = append(specOpts, oci.WithPidsLimit(pids), s.withIPCLimits())
	opts := []client.NewContainerOpts{client.WithContainerLabels(s.labels())}
	switch s.cfg.RootFS {
	case RootFSImage:
		img, err := s.image(ctx)
		if err != nil {
			return nil, err
		}
		opts = append(opts, client.WithNewSnapshot(id+"-rootfs", img))
	default:
		rootfs := filepath.Join(s.stateDir, "rootfs")
		if _, err := os.Lstat(filepath.Join(rootfs, "etc", "passwd")); err != nil {
			if err := s.populateRootFS(rootfs); err != nil {
				return nil, err
			}
		}
		specOpts = append(specOpts, oci.WithRootFSPath(rootfs))
	}
	return append(opts, client.WithNewSpec(specOpts...)), nil
}

// labels are what every container of the run carries, and its state
// folder's labelsFile: what the sweep of a dead run's leftovers needs
// (see removeLeftovers).
func (s *Sandbox) labels() map[string]string {
	labels := map[string]string{
		LabelManaged: "true",
		LabelRun:     s.cfg.RunID,
		LabelOwner:   sandbox.OwnerLabel(),
		LabelState:   s.stateDir,
	}
	if s.adopt {
		labels[LabelGiveBack] = fmt.Sprintf("%d:%d:%d", s.uid, s.ownerUID, s.ownerGID)
		labels[LabelWorkspace] = s.cfg.Workspace
	}
	return labels
}

// withInitPrivileges gives the exec server the capabilities it starts
// commands with (see execServerCaps) and the rlimits every command has,
// which commands inherit from it; the shell init gets no capability.
func (s *Sandbox) withInitPrivileges(execServer bool) oci.SpecOpts {
	if !execServer {
		return oci.WithCapabilities(nil)
	}
	caps := execServerCaps()
	return oci.Compose(oci.WithCapabilities(caps), oci.WithAmbientCapabilities(caps),
		func(_ context.Context, _ oci.Client, _ *containers.Container, spec *oci.Spec) error {
			spec.Process.Rlimits = s.baseProcess().Rlimits
			return nil
		})
}

// baseProcess is the process spec commands start from: the container's
// user, no capabilities, no new privileges.
func (s *Sandbox) baseProcess() *specs.Process {
	p := &specs.Process{
		User:            specs.User{UID: s.uid, GID: s.gid},
		Capabilities:    &specs.LinuxCapabilities{},
		NoNewPrivileges: true,
		Rlimits:         []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 1024, Soft: 1024}},
	}
	if d := s.cfg.Limits.Disk; d > 0 {
		// No single file past the disk limit, however fast it is written.
		p.Rlimits = append(p.Rlimits, specs.POSIXRlimit{Type: "RLIMIT_FSIZE", Hard: uint64(d), Soft: uint64(d)})
	}
	return p
}

// withIPCLimits bounds System V shared memory, which outlives every
// process and counts against the memory limit, to what one tmpfs may hold
// (these sysctls are per IPC namespace, and the container has its own).
func (s *Sandbox) withIPCLimits() oci.SpecOpts {
	size := tmpfsSize(s.cfg.Limits.Memory)
	return func(_ context.Context, _ oci.Client, _ *containers.Container, spec *oci.Spec) error {
		if spec.Linux == nil {
			spec.Linux = &specs.Linux{}
		}
		if spec.Linux.Sysctl == nil {
			spec.Linux.Sysctl = map[string]string{}
		}
		spec.Linux.Sysctl["kernel.shmmax"] = strconv.FormatInt(size, 10)
		spec.Linux.Sysctl["kernel.shmall"] = strconv.FormatInt(size/4096, 10)
		spec.Linux.Sysctl["kernel.shmmni"] = "64"
		return nil
	}
}

// tmpfsSize is the size of each of the two tmpfs mounts (/tmp and HOME):
// an eighth of the memory limit, so that filling both leaves three
// quarters of it to the commands (tmpfs pages count against the limit and
// cannot be reclaimed), at least 16 MiB; 256 MiB each without a limit.
func tmpfsSize(memory int64) int64 {
	if memory <= 0 {
		return 256 << 20
	}
	return max(memory/8, 16<<20)
}

// mounts are the bind and tmpfs mounts on top of the root.
func (s *Sandbox) mounts(p parts) []specs.Mount {
	owner := "uid=" + strconv.Itoa(int(s.uid)) + ",gid=" + strconv.Itoa(int(s.gid))
	size := "size=" + strconv.FormatInt(tmpfsSize(s.cfg.Limits.Memory), 10)
	ms := []specs.Mount{
		{Destination: WorkspaceDir, Type: "bind", Source: s.cfg.Workspace, Options: []string{"rbind", "rw", "nosuid", "nodev"}},
		{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=1777", size}},
		{Destination: HomeDir, Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=0700", owner, size}},
		{Destination: CacheDir, Type: "bind", Source: p.cache, Options: []string{"rbind", "rw", "nosuid", "nodev"}},
		{Destination: aliveDir, Type: "bind", Source: filepath.Join(s.stateDir, "alive"), Options: []string{"rbind", "ro", "nosuid", "nodev", "noexec"}},
	}
	if p.execd != nil {
		ms = append(ms, p.execd.mounts()...)
	}
	if m, ok := s.goCacheMount(p.gocache); ok {
		ms = append(ms, m)
	}
	ms = append(ms, s.trustedMounts()...)
	ms = append(ms, s.layoutMounts(p.layout)...)
	if s.cfg.ModCache != "none" {
		ms = append(ms, specs.Mount{Destination: ModCacheDir, Type: "bind", Source: s.cfg.ModCache, Options: []string{"rbind", "ro", "nosuid", "nodev"}})
	}
	if s.cfg.RootFS != RootFSHost {
		return ms
	}
	for _, d := range append(append([]string(nil), s.cfg.ToolchainDirs...), s.cfg.EtcFiles...) {
		st, err := os.Lstat(d)
		if err != nil || st.Mode()&os.ModeSymlink != 0 {
			continue // missing, or recreated as a symlink by populateRootFS
		}
		ms = append(ms, specs.Mount{Destination: d, Type: "bind", Source: d, Options: []string{"bind", "ro", "nosuid", "nodev"}})
	}
	return ms
}

// populateRootFS recreates the toolchain entries that are symlinks on the
// host (merged /usr) inside the empty rootfs, and the files /etc needs.
func (s *Sandbox) populateRootFS(rootfs string) error {
	for _, d := range append(append([]string(nil), s.cfg.ToolchainDirs...), s.cfg.EtcFiles...) {
		st, err := os.Lstat(d)
		if err != nil || st.Mode()&os.ModeSymlink == 0 {
			continue
		}
		target, err := os.Readlink(d)
		if err != nil {
			return fmt.Errorf("rootfs: %w", err)
		}
		dst := filepath.Join(rootfs, d)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("rootfs: %w", err)
		}
		if err := os.Symlink(target, dst); err != nil {
			return fmt.Errorf("rootfs: %w", err)
		}
	}
	etc := filepath.Join(rootfs, "etc")
	if err := os.MkdirAll(etc, 0o755); err != nil {
		return fmt.Errorf("rootfs: %w", err)
	}
	// runc gives a tmpfs the mode of an existing mountpoint, and a
	// recreated container finds the first one's: make them right from the
	// start.
	for dir, mode := range map[string]os.FileMode{"tmp": os.ModeSticky | 0o777, HomeDir[1:]: 0o700} {
		p := filepath.Join(rootfs, dir)
		if err := os.MkdirAll(p, 0o755); err != nil {
			return fmt.Errorf("rootfs: %w", err)
		}
		if err := os.Chmod(p, mode); err != nil {
			return fmt.Errorf("rootfs: %w", err)
		}
	}
	if err := os.Lchown(filepath.Join(rootfs, HomeDir[1:]), int(s.uid), int(s.gid)); err != nil {
		return fmt.Errorf("rootfs: %w", err)
	}
	name := "trio"
	files := map[string]string{
		"passwd":      fmt.Sprintf("root:x:0:0:root:/root:/usr/sbin/nologin\n%s:x:%d:%d:trio sandbox:%s:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n", name, s.uid, s.gid, HomeDir),
		"group":       fmt.Sprintf("root:x:0:\n%s:x:%d:\nnogroup:x:65534:\n", name, s.gid),
		"hosts":       "127.0.0.1\tlocalhost trio\n::1\tlocalhost ip6-localhost ip6-loopback\n",
		"resolv.conf": "",
		"hostname":    "trio\n",
	}
	if s.uid == NobodyID {
		files["passwd"] = fmt.Sprintf("root:x:0:0:root:/root:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:%s:/bin/sh\n", HomeDir)
		files["group"] = "root:x:0:\nnogroup:x:65534:\n"
	}
	for f, content := range files {
		if err := os.WriteFile(filepath.Join(etc, f), []byte(content), 0o644); err != nil {
			return fmt.Errorf("rootfs: %w", err)
		}
	}
	return nil
}

// swapAccounting reports whether the memory+swap limit can be set: always on
// cgroup v2, only with swap accounting on cgroup v1 (runc fails otherwise).
func swapAccounting() bool {
	if _, err := os.Stat("/sys/fs/cgroup/memory"); err != nil {
		return true // cgroup v2 (or not this host's view): runc handles it
	}
	_, err := os.Stat("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes")
	return err == nil
}

// layoutMounts lay the path rules out over the workspace: an empty file or
// folder (owned by root, mode 0, read-only) over each hidden entry, a
// read-only bind of each read-only one. Parents come before children (the
// layout is sorted), so a hidden file inside a read-only folder is covered.
func (s *Sandbox) layoutMounts(layout sandbox.Layout) []specs.Mount {
	type m struct {
		path string
		mnt  specs.Mount
	}
	var all []m
	ro := []string{"bind", "ro", "nosuid", "nodev"}
	for _, e := range layout.ReadOnly {
		all = append(all, m{e.Path, specs.Mount{Destination: path.Join(WorkspaceDir, e.Path), Type: "bind",
			Source: filepath.Join(s.cfg.Workspace, filepath.FromSlash(e.Path)), Options: append([]string{"rbind"}, ro[1:]...)}})
	}
	for _, e := range layout.Hidden {
		src := filepath.Join(s.stateDir, "empty-file")
		if e.Dir {
			src = filepath.Join(s.stateDir, "empty-dir")
		}
		all = append(all, m{e.Path, specs.Mount{Destination: path.Join(WorkspaceDir, e.Path), Type: "bind", Source: src, Options: ro}})
	}
	slices.SortStableFunc(all, func(a, b m) int { return strings.Compare(a.path, b.path) })
	out := make([]specs.Mount, len(all))
	for i, x := range all {
		out[i] = x.mnt
	}
	return out
}

// withoutSyscalls takes names out of the seccomp profile's allowed
// syscalls, so they fail with its default errno. ptrace goes: a tracer
// keeps the registers of a process that is not dumpable, which would let
// a command read or steer the helper it may execute but not read (see
// helperCopy), and the userns kind refuses it too.
func withoutSyscalls(names ...string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, spec *oci.Spec) error {
		if spec.Linux == nil || spec.Linux.Seccomp == nil {
			return errors.New("seccomp: no profile to narrow")
		}
		rules := spec.Linux.Seccomp.Syscalls[:0]
		for _, r := range spec.Linux.Seccomp.Syscalls {
			if r.Action == specs.ActAllow {
				r.Names = slices.DeleteFunc(r.Names, func(n string) bool { return slices.Contains(names, n) })
				if len(r.Names) == 0 {
					continue
				}
			}
			rules = append(rules, r)
		}
		spec.Linux.Seccomp.Syscalls = rules
		return nil
	}
}
