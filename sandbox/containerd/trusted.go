package containerd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/sandbox/internal/confine"
	"github.com/trioagent/trio/sandbox/internal/gocacheprog"
)

// trustedCacheDir is a trusted build's GOCACHE in the container (see
// trusted). Between trusted builds it is an empty folder no command may
// write. For each trusted build the host mounts an overlay there, and the
// mount reaches every box of the run through mount propagation: its
// parent, trustedBindDir, is a non-recursive bind (a slave) of a shared
// mount point in the run's state. The overlay has the run's trusted
// builds and the warm base as its lower layers, read-only by
// construction, and a new upper layer that the go command writes. When the command has
// ended and its processes are gone, the host unmounts the overlay and
// moves what the upper layer holds into the run's trusted builds
// (gocacheprog.Import: outputs whose content is their name, action
// entries of the cache's format). So the go command uses a plain disk
// cache, with no cache program between it and the files, and no command
// but a trusted build's toolchain ever writes what the Critic's checks
// reuse.
const trustedCacheDir = trustedBindDir + "/go-build"

// trustedBindDir is the bind of the shared mount point. Not recursive: a
// box that starts while an overlay is mounted does not get a copy of it,
// which the unmount would not reach.
const trustedBindDir = "/.trio/gocache"

// trustedDir is the run's trusted builds on the host, in its state beside
// the boxes: Reset keeps it, and the disk limit counts it.
func (s *Sandbox) trustedDir() string { return filepath.Join(s.stateDir, "trusted") }

// gobuildDir holds, in the run's state, the shared mount point of the
// trusted builds' overlay and the overlay's upper and work layers.
func (s *Sandbox) gobuildDir() string { return filepath.Join(s.stateDir, "gobuild") }
func (s *Sandbox) trustedMnt() string { return filepath.Join(s.gobuildDir(), "mnt") }

// overlayMnt is where the overlay is mounted on the host, below the
// shared mount point.
func (s *Sandbox) overlayMnt() string { return filepath.Join(s.trustedMnt(), "go-build") }

// trusted reports whether cmd runs as a trusted build (see
// sandbox.TrustedGo), as in the userns kind: the go command runs as the
// sandbox user with trustedCacheDir as its cache, and the test binaries
// it builds run through the helper's nest (confine.NestPath, a Landlock
// domain that may write neither the workspace, go's work folder nor the
// cache, nor signal or trace the go command). It needs the helper, a warm
// base, Landlock and the shared mount, a workspace whose sources the go
// command hashes whole (sandbox.TrustedGoWorkspace), no environment of
// cmd's own and no started process, which could change a source file
// between the go command hashing it and the compiler reading it (started
// processes share the workspace from their sibling containers). Commands
// run one at a time and none outlives its Exec, so the toolchain and its
// test binaries are the only processes in the container while it runs.
func (s *Sandbox) trusted(cmd sandbox.Command) bool {
	if !s.trustedReady() || len(cmd.Env) > 0 || !sandbox.TrustedGo(cmd.Argv) {
		return false
	}
	s.mu.Lock()
	started := len(s.procs)
	s.mu.Unlock()
	return started == 0 && sandbox.TrustedGoWorkspace(s.cfg.Workspace)
}

// trustedEnv is a trusted build's environment: its go command's cache is
// the overlay, and it runs what it builds through the nest.
func (s *Sandbox) trustedEnv(cmd sandbox.Command) []string {
	env := sandbox.MergeEnv(s.env, []string{"GOCACHE=" + trustedCacheDir,
		"GOFLAGS=" + strings.TrimSpace(sandbox.EnvValue(s.env, "GOFLAGS")+" -buildvcs=false -exec="+confine.NestPath)})
	if cmd.Check {
		env = sandbox.CheckEnv(env, "") // Python's bytecode
	}
	return env
}

// helperEntries makes, in dir (the host folder bound read-only at
// aliveDir, where confine's paths are), the mountpoints of the helper and
// of the trusted builds' cache, and the nest's symlink to the helper.
func (s *Sandbox) helperEntries(dir string) error {
	if err := os.Mkdir(filepath.Join(dir, filepath.Base(trustedBindDir)), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.Base(confine.Path)), nil, 0o444); err != nil {
		return err
	}
	return os.Symlink(confine.Path, filepath.Join(dir, filepath.Base(confine.NestPath)))
}

// shareTrusted makes the run's trusted builds folder and the shared mount
// point the boxes bind. The go command's disk cache trims itself once a
// day from the time in trim.txt; the run's own says now, so that no
// trusted build trims the base (the lower layers) into whiteouts.
func (s *Sandbox) shareTrusted() error {
	for _, d := range []string{s.trustedDir(), s.overlayMnt()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(s.trustedDir(), "trim.txt"), []byte(strconv.FormatInt(time.Now().Unix(), 10)), 0o644); err != nil {
		return err
	}
	mnt := s.trustedMnt()
	if err := unix.Mount(mnt, mnt, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s: %w", mnt, err)
	}
	if err := unix.Mount("", mnt, "", unix.MS_SHARED, ""); err != nil {
		unix.Unmount(mnt, unix.MNT_DETACH)
		return fmt.Errorf("share %s: %w", mnt, err)
	}
	s.shared = true
	return nil
}

// trustedMounts bind the shared mount point into a container, when
// trusted builds may run.
func (s *Sandbox) trustedMounts() []specs.Mount {
	if !s.trustedReady() {
		return nil
	}
	return []specs.Mount{{Destination: trustedBindDir, Type: "bind", Source: s.trustedMnt(),
		Options: []string{"bind", "slave", "ro", "nosuid", "nodev", "noexec"}}}
}

// trustedReady reports whether this sandbox has what trusted builds need:
// the helper, the warm base, Landlock and the shared mount point.
func (s *Sandbox) trustedReady() bool {
	return s.warmBase != "" && s.helper != "" && s.landlock > 0 && s.shared
}

// mountTrusted mounts a trusted build's overlay, with a new upper layer
// for the sandbox user, and checks that the current box sees this one.
func (s *Sandbox) mountTrusted() error {
	up, work := filepath.Join(s.gobuildDir(), "upper"), filepath.Join(s.gobuildDir(), "work")
	for _, d := range []string{up, work} {
		if err := os.RemoveAll(d); err != nil {
			return err
		}
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
	}
	s.overlays++
	marker := ".trio-" + strconv.Itoa(s.overlays)
	if err := os.WriteFile(filepath.Join(up, marker), nil, 0o444); err != nil {
		return err
	}
	if err := os.Lchown(up, int(s.uid), int(s.gid)); err != nil {
		return err
	}
	opts := "lowerdir=" + s.trustedDir() + ":" + s.warmBase + ",upperdir=" + up + ",workdir=" + work
	if err := unix.Mount("overlay", s.overlayMnt(), "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mount the trusted builds' overlay: %w", err)
	}
	// A box in a mount namespace that is not a peer of this process's
	// would see the empty folder, or an older overlay.
	if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(s.initPid), "root", trustedCacheDir, marker)); err != nil {
		s.unmountTrusted(io.Discard, false)
		return fmt.Errorf("the trusted builds' overlay does not reach the container: %w", err)
	}
	return nil
}

// unmountTrusted unmounts the overlay once the build's processes are gone
// and, with keep, moves what the go command wrote into the run's trusted
// builds. An overlay that something still holds is detached and its upper
// layer dropped: only what no process can still write is kept.
func (s *Sandbox) unmountTrusted(stderr io.Writer, keep bool) error {
	mnt := s.overlayMnt()
	err := unix.Unmount(mnt, 0)
	if err != nil {
		keep = false
		if derr := unix.Unmount(mnt, unix.MNT_DETACH); derr != nil {
			return fmt.Errorf("unmount the trusted builds' overlay: %w", derr)
		}
		fmt.Fprintf(stderr, "\ntrio: the trusted build's cache was still in use (%v); what it wrote is dropped\n", err)
	}
	up := filepath.Join(s.gobuildDir(), "upper")
	if keep {
		if _, err := gocacheprog.Import(s.trustedDir(), up); err != nil {
			return fmt.Errorf("keep the trusted build's cache: %w", err)
		}
	}
	return errors.Join(os.RemoveAll(up), os.RemoveAll(filepath.Join(s.gobuildDir(), "work")))
}
