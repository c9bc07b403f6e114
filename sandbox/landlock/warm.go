package landlock

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
)

// seedCache finds the trusted warm base of the Go build cache for this
// toolchain (sandbox.WarmModule's packages compiled, in the one sealed
// form every kind reads), building it first with this kind when there is
// none. Commands read it, never write it: the go command's cache is
// Trio's cache program (this executable) over the run's own cache and
// the base, and a check's reads only the base and what it stores itself
// (sandbox.CheckEnv).
func (s *Sandbox) seedCache(ctx context.Context) error {
	if s.cfg.WarmCache == "none" || s.exe == "" {
		return nil
	}
	key, goVersion, ok := sandbox.ToolchainKey(s.cfg.ToolchainDirs)
	if !ok {
		return nil
	}
	if goVersion != "" && version.Compare(goVersion, "go1.24") < 0 {
		s.progress(fmt.Sprintf("no warm build cache: %s cannot read it (GOCACHEPROG needs go1.24 or later)", goVersion))
		return nil
	}
	if err := sandbox.WarmDir(s.cfg.WarmCache); err != nil {
		return fmt.Errorf("landlock sandbox: warm cache: %w", err)
	}
	base := filepath.Join(s.cfg.WarmCache, "go-build-"+key)
	if _, err := os.Stat(filepath.Join(base, "README")); err != nil {
		if err := s.buildWarm(ctx, base); err != nil {
			return fmt.Errorf("landlock sandbox: warm cache: %w", err)
		}
	}
	s.base = base
	return nil
}

// buildWarm builds the base in a sandbox of its own whose workspace holds
// only sandbox.WarmModule, then moves its cache into place under a lock
// (another run may be building it too) and a rename.
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
	if err := sandbox.CopyTree(filepath.Join(w.cache, "go-build"), built); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(built, "README")); err != nil {
		return fmt.Errorf("the warm-up left no Go build cache: %w", err)
	}
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
