package userns

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/trioagent/trio/sandbox"
)

// Kind is the sandbox kind users name (Info.Kind, --sandbox userns).
const Kind = "userns"

// Paths inside the sandbox. They are every isolating kind's (see sandbox.WorkspaceDir), so that a
// model's commands and a policy's read-only folders mean the same in both.
const (
	WorkspaceDir = sandbox.WorkspaceDir
	HomeDir      = sandbox.HomeDir
	CacheDir     = sandbox.CacheDir
	ModCacheDir  = sandbox.ModCacheDir
)

// DefaultPids is the RLIMIT_NPROC when Limits.Pids is not positive, so a
// fork bomb is always bounded.
const DefaultPids = sandbox.DefaultPids

// Config is the userns kind's own settings. What one run gives every
// kind (its workspace, limits, path rules and progress) comes in the
// sandbox.RunSpec that [New] and sandbox.Open take; a Config is its
// Settings. The zero Config is the defaults.
type Config struct {
	// Bwrap is the bubblewrap executable; default "bwrap" on $PATH.
	Bwrap string
	// ToolchainDirs replace sandbox.DefaultToolchainDirs: host folders
	// bound read-only at the same path (a symlink is recreated as one).
	ToolchainDirs []string
	// EtcFiles replace sandbox.DefaultEtcFiles: host /etc entries bound
	// read-only; passwd, group, hosts, hostname and an empty resolv.conf
	// are generated.
	EtcFiles []string
	// ModCache is the host Go module cache bound read-only at /go/pkg/mod.
	// Default: sandbox.HostModCache() when it exists. "none" binds nothing.
	ModCache string
	// StateDir is where per-sandbox folders (Go build cache, generated
	// /etc files) are made; default os.TempDir().
	StateDir string
	// WarmCache is the folder of Trio's trusted caches: per toolchain, a
	// Go build cache with the standard packages small projects use
	// compiled (built once, in a sandbox of its own), which every command
	// reads, read-only, under its own cache (see Sandbox.Reset). Default
	// sandbox.DefaultWarmCache(); "none" starts every sandbox with an
	// empty build cache.
	WarmCache string
	// DenyTCP makes Landlock refuse every TCP bind and connect, the
	// sandbox's own loopback included, as a wall behind the network
	// namespace. Off by default: tests that start a server on 127.0.0.1
	// (httptest) need it, and without Limits.Network there is nothing but
	// that loopback to reach.
	DenyTCP bool
}

var (
	// ErrUnavailable means this machine cannot run the sandbox: bwrap is
	// missing or user namespaces are disabled. The message says how to fix
	// it.
	ErrUnavailable = fmt.Errorf("user-namespace sandbox %w", sandbox.ErrUnavailable)
	// ErrConfig means the Config is unusable.
	ErrConfig = sandbox.ErrConfig
)

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
	if c.WarmCache == "" {
		c.WarmCache = sandbox.DefaultWarmCache()
	}
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
	if c.PathRules == nil {
		c.PathRules = func(string) sandbox.Access { return sandbox.Writable }
	}
	if err := sandbox.OutsideWorkspace(c.Workspace, sandbox.Folder{Name: "warm build cache (WarmCache, $TRIO_WARM_CACHE)", Path: c.WarmCache},
		sandbox.Folder{Name: "Go module cache (ModCache)", Path: c.ModCache}, sandbox.Folder{Name: "state folder (StateDir, $TMPDIR)", Path: c.StateDir}); err != nil {
		return c, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	bw, err := bwrapPath(c.Bwrap)
	if err != nil {
		return c, err
	}
	c.Bwrap = bw
	return c, nil
}

// bwrapPath finds the bwrap executable.
func bwrapPath(name string) (string, error) {
	if name == "" {
		name = "bwrap"
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%w: %s not found (%w); install bubblewrap (Debian/Ubuntu: `sudo apt-get install bubblewrap`, "+
			"Fedora: `sudo dnf install bubblewrap`), start containerd, or choose the local sandbox kind, which runs commands without isolation",
			ErrUnavailable, name, err)
	}
	return p, nil
}
