package containerd

import (
	"os"
	"path/filepath"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/sandbox/internal/confine"
	"github.com/trioagent/trio/sandbox/internal/gocacheprog"
)

// trustedCacheDir is where commands see the run's trusted builds (see
// trusted), read-only: the folder belongs to init's uid, and only init
// writes it, as a trusted build's cache server.
const trustedCacheDir = "/.trio/trusted"

// baseCacheDir is where commands see the warm base of the Go build cache
// itself, read-only, for a trusted build's cache server: the overlay at
// /cache/go-build has the run's writable layer over it.
const baseCacheDir = "/.trio/go-build"

// trustedDir is the run's trusted builds on the host: under the cache's
// folder of the state, so the disk limit counts it, and kept by Reset.
func (s *Sandbox) trustedDir() string {
	return filepath.Join(s.stateDir, "gocache", "trusted")
}

// trusted reports whether cmd runs as a trusted build (see
// sandbox.TrustedGo), as in the userns kind: the go command runs as the
// sandbox user with its cache program relaying to the exec server, which
// alone writes the run's trusted builds (init's uid owns them), and the
// test binaries it builds run through the helper's nest (confine.NestPath,
// a Landlock domain that may write neither the workspace nor go's work
// folder, nor signal or trace the go command). It needs the exec server,
// a warm base and Landlock, a workspace whose sources the go command
// hashes whole (sandbox.TrustedGoWorkspace), no environment of cmd's own
// and no started process, which could change a source file between the
// go command hashing it and the compiler reading it (started processes
// share the workspace from their sibling containers). Commands run one at
// a time and none outlives its Exec, so the toolchain and its test
// binaries are the only processes in the container while it runs.
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
// the relay to the exec server's store, and it runs what it builds
// through the nest.
func (s *Sandbox) trustedEnv(cmd sandbox.Command) []string {
	env := sandbox.MergeEnv(s.env, []string{"GOCACHE=/tmp/.trio-gocache",
		"GOCACHEPROG=" + gocacheprog.Relay(confine.Path, confine.StoreFD, trustedCacheDir, baseCacheDir),
		"GOFLAGS=" + strings.TrimSpace(sandbox.EnvValue(s.env, "GOFLAGS")+" -buildvcs=false -exec="+confine.NestPath)})
	if cmd.Check {
		env = sandbox.MergeEnv(env, sandbox.CheckEnv("")) // Python's bytecode
	}
	return env
}

// helperEntries makes, in dir (the host folder bound read-only at
// aliveDir, where confine's paths are), the mountpoints of the helper,
// the trusted builds and the base, and the nest's symlink to the helper.
func (s *Sandbox) helperEntries(dir string) error {
	for _, d := range []string{trustedCacheDir, baseCacheDir} {
		if err := os.Mkdir(filepath.Join(dir, filepath.Base(d)), 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.Base(confine.Path)), nil, 0o444); err != nil {
		return err
	}
	return os.Symlink(confine.Path, filepath.Join(dir, filepath.Base(confine.NestPath)))
}

// trustedMounts bind the run's trusted builds and the warm base into the
// container, when trusted builds may run.
func (s *Sandbox) trustedMounts() []specs.Mount {
	if !s.trustedReady() {
		return nil
	}
	return []specs.Mount{
		{Destination: trustedCacheDir, Type: "bind", Source: s.trustedDir(), Options: []string{"bind", "rw", "nosuid", "nodev"}},
		{Destination: baseCacheDir, Type: "bind", Source: s.warmBase, Options: []string{"bind", "ro", "nosuid", "nodev", "noexec"}},
	}
}

// trustedReady reports whether this sandbox has what trusted builds need:
// the exec server with its helper, the warm base and Landlock.
func (s *Sandbox) trustedReady() bool {
	return s.warmBase != "" && s.execd != nil && s.execd.helper != "" && s.landlock > 0
}
