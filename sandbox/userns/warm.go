package userns

import (
	"context"
	"fmt"
	"go/version"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/sandbox/internal/gocacheprog"
)

// seedCache finds the trusted base of the Go build cache for this
// toolchain (sandbox.WarmModule's packages compiled), building it first
// when there is none, and makes the run's trusted builds a tree of hard
// links to it (gocacheprog.LinkTree) in a folder of its own beside the
// base, on the base's filesystem: runs/<the state folder's name>, which
// Close removes and the next New sweeps after a kill -9. Bubblewrap 0.8
// has no overlay mounts; the tree needs none, and no copy of the base.
//
// A trusted build's go command uses the tree as its plain GOCACHE, and
// the tree's Check keeps only what has the cache's form afterwards.
// Every other command gets the tree read-only at trustedCacheDir, under
// Trio's cache program (package gocacheprog), which looks in the run's
// own cache first and puts everything there. Linking the base costs a
// few tens of milliseconds, once per run.
func (s *Sandbox) seedCache(ctx context.Context) error {
	if err := os.MkdirAll(filepath.Join(s.cacheDir(), "go-build"), 0o755); err != nil {
		return fmt.Errorf("userns sandbox: build cache: %w", err)
	}
	if s.cfg.WarmCache == "none" {
		return nil
	}
	key, goVersion, ok := sandbox.ToolchainKey(s.cfg.ToolchainDirs)
	if !ok {
		return nil // no Go in the sandbox: nothing to warm
	}
	if goVersion != "" && version.Compare(goVersion, "go1.24") < 0 {
		// GOCACHEPROG needs Go 1.24: an older go would build into an
		// empty GOCACHE, as without a warm cache.
		s.progress(fmt.Sprintf("no warm build cache: %s cannot read it (GOCACHEPROG needs go1.24 or later)", goVersion))
		return nil
	}
	if err := sandbox.WarmDir(s.cfg.WarmCache); err != nil {
		return fmt.Errorf("userns sandbox: warm cache: %w", err)
	}
	base := filepath.Join(s.cfg.WarmCache, "go-build-"+key)
	if _, err := os.Stat(filepath.Join(base, "README")); err != nil {
		if err := s.buildWarm(ctx, base); err != nil {
			return fmt.Errorf("userns sandbox: warm cache: %w", err)
		}
	}
	runs := filepath.Join(s.cfg.WarmCache, "runs")
	if err := os.MkdirAll(runs, 0o700); err != nil {
		return fmt.Errorf("userns sandbox: warm cache: %w", err)
	}
	removeLeftovers(runs)
	s.runDir = filepath.Join(runs, filepath.Base(s.stateDir))
	if err := os.Mkdir(s.runDir, 0o700); err != nil {
		s.runDir = ""
		return fmt.Errorf("userns sandbox: warm cache: %w", err)
	}
	if err := os.WriteFile(filepath.Join(s.runDir, ownerFile), []byte(sandbox.OwnerLabel()+"\n"), 0o444); err != nil {
		return fmt.Errorf("userns sandbox: warm cache: %w", err)
	}
	tree, err := gocacheprog.LinkTree(filepath.Join(s.runDir, "go-build"), base)
	if err != nil {
		return fmt.Errorf("userns sandbox: trusted builds: %w", err)
	}
	s.tree = tree
	return nil
}

// buildWarm builds the base in a sandbox of its own whose workspace holds
// only sandbox.WarmModule, then copies its cache into place under a lock
// (another run may be building it too) and a rename, so a half-built base
// is never used.
func (s *Sandbox) buildWarm(ctx context.Context, base string) error {
	lock, err := os.OpenFile(base+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(filepath.Join(base, "README")); err == nil {
		return nil // built while we waited
	}
	start := time.Now()
	s.progress(fmt.Sprintf("building the trusted Go build cache for this toolchain in %s (once per toolchain; later runs start warm)", base))
	tmp, err := os.MkdirTemp(filepath.Dir(base), filepath.Base(base)+".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	ws := filepath.Join(tmp, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		return err
	}
	for name, content := range sandbox.WarmModule {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	cfg := s.cfg
	cfg.Workspace, cfg.PathRules, cfg.WarmCache, cfg.Progress = ws, nil, "none", nil
	cfg.Limits.Timeout, cfg.Limits.Disk = 15*time.Minute, 0
	w, err := newRun(ctx, cfg)
	if err != nil {
		return err
	}
	defer w.Close()
	res, err := w.Exec(ctx, sandbox.Command{Argv: []string{"go", "test", "./..."}})
	if err != nil {
		return fmt.Errorf("go test: %w", err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("go test: exit code %d: %s", res.ExitCode, strings.TrimSpace(res.Stderr))
	}
	built := filepath.Join(tmp, "base")
	if err := sandbox.CopyTree(filepath.Join(w.stateDir, "cache", "go-build"), built); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(built, "README")); err != nil {
		return fmt.Errorf("the warm-up left no Go build cache: %w", err)
	}
	// The form every kind reads a base in: the containerd kind, run by
	// root, uses a base root built with this kind too.
	if err := sandbox.SealBase(built, -1); err != nil {
		return err
	}
	if err := os.Rename(built, base); err != nil {
		return err
	}
	s.progress(fmt.Sprintf("trusted Go build cache ready in %s", time.Since(start).Round(100*time.Millisecond)))
	return nil
}

func (s *Sandbox) progress(msg string) {
	if s.cfg.Progress != nil {
		s.cfg.Progress(msg)
	}
}
