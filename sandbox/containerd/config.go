package containerd

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"github.com/trioagent/trio/sandbox"
)

// Root file system modes.
const (
	RootFSHost  = "host"
	RootFSImage = "image"
)

// Defaults.
const (
	DefaultAddress   = "/run/containerd/containerd.sock"
	DefaultNamespace = "trio"
	// AddressEnv names the variable that overrides DefaultAddress.
	AddressEnv = "TRIO_CONTAINERD_ADDRESS"
	// NobodyID is the uid and gid commands run as when the workspace is
	// owned by root.
	NobodyID = 65534
	// InitID is the uid and gid of the container's init, which no command
	// runs as, so that commands cannot signal or trace it (InitID-1 when
	// commands are configured to run as InitID).
	InitID = 65533
	// DefaultPids is the pids limit when Limits.Pids is not positive, so a
	// fork bomb is always bounded. Zero Memory and CPUs mean no limit.
	DefaultPids = sandbox.DefaultPids
)

// Paths inside the container.
const (
	WorkspaceDir = sandbox.WorkspaceDir
	HomeDir      = sandbox.HomeDir
	CacheDir     = sandbox.CacheDir
	ModCacheDir  = sandbox.ModCacheDir
)

// DefaultToolchainDirs are the host folders bound read-only in mode "host".
// A folder that is a symlink on the host (merged /usr: /bin -> usr/bin) is
// recreated as the same symlink; a missing one is skipped. /root, /home,
// /var, /run and /proc of the host are never bound.
var DefaultToolchainDirs = sandbox.DefaultToolchainDirs

// DefaultEtcFiles are the files and folders of the host's /etc bound
// read-only in mode "host" (sandbox.DefaultEtcFiles).
var DefaultEtcFiles = sandbox.DefaultEtcFiles

// Config is the containerd kind's own settings: how to reach containerd
// and what the run's container is made of. What one run gives every kind
// (its workspace, run id, limits, path rules and progress) comes in the
// sandbox.RunSpec that [New] and sandbox.Open take; a Config is its
// Settings. The zero Config is the defaults.
type Config struct {
	// Address of containerd's socket; default $TRIO_CONTAINERD_ADDRESS,
	// else DefaultAddress.
	Address string
	// Namespace in containerd; default "trio".
	Namespace string
	// RootFS is RootFSHost (default) or RootFSImage.
	RootFS string
	// Image is, in mode "image", an image reference already in containerd
	// (pulled when missing, which needs a reachable registry) or the path
	// of an OCI or Docker image tarball to import. The image must have
	// /bin/sh and sleep.
	Image string
	// ToolchainDirs replace DefaultToolchainDirs in mode "host".
	ToolchainDirs []string
	// EtcFiles replace DefaultEtcFiles in mode "host".
	EtcFiles []string
	// ModCache is the host Go module cache bound read-only at /go/pkg/mod.
	// Default: $GOMODCACHE, else $GOPATH/pkg/mod, else ~/go/pkg/mod, when
	// it exists. "none" binds nothing.
	ModCache string
	// UID and GID the commands run as; 0 means automatic: the workspace
	// owner when that is not root, else NobodyID, in which case the
	// sandbox takes ownership of the workspace's entries for NobodyID before
	// each command (root on the host keeps full access). Root is never used.
	UID, GID uint32
	// WarmCache is the folder of Trio's trusted caches: a base of the Go
	// build cache per toolchain, built once in a sandbox of its own with
	// the standard library compiled, which every run gets read-only under
	// a private writable layer. Default sandbox.DefaultWarmCache(); "none" starts
	// every run with an empty build cache.
	WarmCache string
	// noExecServer starts commands with runc's exec even where the exec
	// server could run (the benchmarks compare the two).
	noExecServer bool
	// StateDir holds per-run folders (rootfs, cache, fifos); default
	// $XDG_RUNTIME_DIR/trio-sandbox, else <os.TempDir()>/trio-sandbox.
	StateDir string
}

var (
	// ErrUnavailable means containerd could not be reached.
	ErrUnavailable = fmt.Errorf("containerd %w", sandbox.ErrUnavailable)
	// ErrConfig means the Config is unusable.
	ErrConfig = sandbox.ErrConfig
)

var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// config is one run's sandbox: its spec, whose Settings are taken out
// into Config, with the defaults filled by withDefaults.
type config struct {
	sandbox.RunSpec
	Config
	// goCache replaces the run's cache folder (the warm-up's own sandbox).
	goCache string
}

// withDefaults fills defaults and checks the config; addrFrom says where the
// address came from, for error messages.
func (c config) withDefaults() (cfg config, addrFrom string, err error) {
	addrFrom = "config"
	if c.Address == "" {
		if v := os.Getenv(AddressEnv); v != "" {
			c.Address, addrFrom = v, "$"+AddressEnv
		} else {
			c.Address, addrFrom = DefaultAddress, "default"
		}
	}
	if c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
	if c.RunID == "" {
		b := make([]byte, 6)
		rand.Read(b)
		c.RunID = hex.EncodeToString(b)
	}
	if !runIDPattern.MatchString(c.RunID) {
		return c, addrFrom, fmt.Errorf("%w: RunID %q: want letters, digits, '_', '.', '-' (at most 64)", ErrConfig, c.RunID)
	}
	switch c.RootFS {
	case "":
		c.RootFS = RootFSHost
	case RootFSHost:
	case RootFSImage:
		if c.Image == "" {
			return c, addrFrom, fmt.Errorf("%w: RootFS %q needs Image", ErrConfig, c.RootFS)
		}
	default:
		return c, addrFrom, fmt.Errorf("%w: RootFS %q: want %q or %q", ErrConfig, c.RootFS, RootFSHost, RootFSImage)
	}
	if c.Workspace == "" {
		return c, addrFrom, fmt.Errorf("%w: Workspace is required", ErrConfig)
	}
	ws, err := filepath.Abs(c.Workspace)
	if err == nil {
		ws, err = filepath.EvalSymlinks(ws)
	}
	if err != nil {
		return c, addrFrom, fmt.Errorf("%w: Workspace %s: %w", ErrConfig, c.Workspace, err)
	}
	if st, err := os.Stat(ws); err != nil || !st.IsDir() {
		return c, addrFrom, fmt.Errorf("%w: Workspace %s is not a directory", ErrConfig, c.Workspace)
	}
	c.Workspace = ws
	if c.ToolchainDirs == nil {
		c.ToolchainDirs = DefaultToolchainDirs
	}
	if c.EtcFiles == nil {
		c.EtcFiles = DefaultEtcFiles
	}
	if c.ModCache == "" {
		c.ModCache = defaultModCache()
	}
	if c.WarmCache == "" {
		c.WarmCache = sandbox.DefaultWarmCache()
	}
	if c.StateDir == "" {
		c.StateDir = defaultStateDir()
	}
	if err := sandbox.OutsideWorkspace(c.Workspace, sandbox.Folder{Name: "warm build cache (WarmCache, $TRIO_WARM_CACHE)", Path: c.WarmCache},
		sandbox.Folder{Name: "Go module cache (ModCache)", Path: c.ModCache}, sandbox.Folder{Name: "state folder (StateDir)", Path: c.StateDir}); err != nil {
		return c, addrFrom, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return c, addrFrom, nil
}

func defaultModCache() string {
	if cand := sandbox.HostModCache(); cand != "" {
		if st, err := os.Stat(cand); err == nil && st.IsDir() {
			return cand
		}
	}
	return "none"
}

// defaultStateDir is Config.StateDir's default.
func defaultStateDir() string {
	base := os.Getenv("XDG_RUNTIME_DIR")
	if base == "" {
		base = os.TempDir()
	}
	return filepath.Join(base, "trio-sandbox")
}
