package containerd

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/trioagent/trio/sandbox"
)

// goCacheMount is the run's Go build cache at /cache/go-build: an overlay
// whose lower layer is the trusted base (read-only by construction: overlay
// never writes a lower layer) and whose upper layer is the run's own, in
// its state folder, so that nothing a run writes (a poisoned entry, a
// forged file) reaches the base or another run.
func (s *Sandbox) goCacheMount(dir string) (specs.Mount, bool) {
	if s.warmBase == "" {
		return specs.Mount{}, false
	}
	return specs.Mount{Destination: CacheDir + "/go-build", Type: "overlay", Source: "overlay", Options: []string{
		"lowerdir=" + s.warmBase, "upperdir=" + filepath.Join(dir, "upper"), "workdir=" + filepath.Join(dir, "work"),
		"nosuid", "nodev",
	}}, true
}

// prepareWarm finds or builds the trusted base of the Go build cache for
// the container's toolchain and the folder of the run's trusted builds
// (each box has its own upper layer, see newBox). Without Go
// in the container, or with Config.WarmCache "none", the run's cache simply
// starts empty.
func (s *Sandbox) prepareWarm(ctx context.Context) error {
	if s.cfg.WarmCache == "none" || s.cfg.RootFS != RootFSHost {
		return nil
	}
	key, _, ok := sandbox.ToolchainKey(s.cfg.ToolchainDirs)
	if !ok {
		return nil
	}
	if err := sandbox.WarmDir(s.cfg.WarmCache); err != nil {
		return fmt.Errorf("warm cache: %w", err)
	}
	base := filepath.Join(s.cfg.WarmCache, "go-build-"+key)
	if _, err := os.Stat(filepath.Join(base, "README")); err != nil {
		if err := s.buildWarm(ctx, base); err != nil {
			return err
		}
	}
	// A base the userns kind built (as root, in the same folder) has the
	// folders of its own user's cache; the overlays need the sealed form.
	if err := sandbox.SealBase(base, -1); err != nil {
		return fmt.Errorf("warm cache: %w", err)
	}
	if err := freshenBase(base); err != nil {
		return fmt.Errorf("warm cache: %w", err)
	}
	s.warmBase = base
	// The run's trusted builds (see trusted), which the host alone writes.
	if s.helper != "" && s.landlock > 0 && s.cfg.goCache == "" {
		if err := s.shareTrusted(); err != nil {
			s.progress(fmt.Sprintf("no trusted builds in this run: %v", err))
		}
	}
	return nil
}

// buildWarm builds the base in a sandbox of its own, without the run's
// workspace: a project of its own (warmModule) and `go test`, with a cache
// folder that only this sandbox writes. Then the base
// is made read-only for everyone but the owner (root) and renamed into
// place, so a half-built base is never used. A lock file keeps two runs
// from building it at once; the second waits and uses the first's.
func (s *Sandbox) buildWarm(ctx context.Context, base string) error {
	// Private: every run trusts what is in it.
	if err := sandbox.WarmDir(filepath.Dir(base)); err != nil {
		return fmt.Errorf("warm cache: %w", err)
	}
	lock, err := os.OpenFile(base+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("warm cache: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("warm cache: lock %s: %w", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(filepath.Join(base, "README")); err == nil {
		return nil // built while we waited
	}
	start := time.Now()
	s.progress(fmt.Sprintf("building the trusted Go build cache for this toolchain in %s (once per toolchain; later runs start warm)", base))
	tmp, err := os.MkdirTemp(filepath.Dir(base), filepath.Base(base)+".tmp-")
	if err != nil {
		return fmt.Errorf("warm cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	ws, cache := filepath.Join(tmp, "ws"), filepath.Join(tmp, "cache")
	for _, d := range []string{ws, cache} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return fmt.Errorf("warm cache: %w", err)
		}
	}
	for name, content := range sandbox.WarmModule {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			return fmt.Errorf("warm cache: %w", err)
		}
	}
	cfg := s.cfg
	cfg.Workspace, cfg.RunID, cfg.PathRules, cfg.WarmCache = ws, fmt.Sprintf("warm-%x", time.Now().UnixNano()), nil, "none"
	cfg.goCache = cache
	cfg.Limits.Timeout, cfg.Limits.Disk = 15*time.Minute, 0
	if cfg.Limits.Memory > 0 && cfg.Limits.Memory < 1<<30 {
		cfg.Limits.Memory = 1 << 30
	}
	w, err := newRun(ctx, cfg)
	if err != nil {
		return fmt.Errorf("warm cache: %w", err)
	}
	defer w.Close()
	if err := os.Lchown(cache, int(w.uid), int(w.gid)); err != nil {
		return fmt.Errorf("warm cache: %w", err)
	}
	for _, argv := range [][]string{{"go", "test", "./..."}} {
		res, err := w.Exec(ctx, sandbox.Command{Argv: argv})
		if err != nil {
			return fmt.Errorf("warm cache: %s: %w", strings.Join(argv, " "), err)
		}
		if res.ExitCode != 0 {
			return fmt.Errorf("warm cache: %s: exit code %d: %s", strings.Join(argv, " "), res.ExitCode, strings.TrimSpace(res.Stderr))
		}
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("warm cache: %w", err)
	}
	// The sandbox's GOCACHE is CacheDir/go-build.
	built := filepath.Join(cache, "go-build")
	if _, err := os.Stat(filepath.Join(built, "README")); err != nil {
		return fmt.Errorf("warm cache: the warm-up left no Go build cache: %w", err)
	}
	// Root owns the base; folders stay open to every uid so that a run's
	// upper layer can add entries to its copy of them, files are read-only.
	if err := sandbox.SealBase(built, int(w.uid)); err != nil {
		return fmt.Errorf("warm cache: %w", err)
	}
	if err := os.Rename(built, base); err != nil {
		return fmt.Errorf("warm cache: %w", err)
	}
	s.progress(fmt.Sprintf("trusted Go build cache ready in %s", time.Since(start).Round(100*time.Millisecond)))
	return nil
}

// progress reports a slow step, when the caller asked.
func (s *Sandbox) progress(msg string) {
	if s.cfg.Progress != nil {
		s.cfg.Progress(msg)
	}
}

// freshenBase gives the base's files the time now when its README's is
// half an hour old. The go command marks a cache entry it uses by setting
// its mtime once that is an hour old; in an overlay over the base that
// copies the whole file up into the run's layer, for each entry a build
// uses. Fresh times keep the base's entries where they are.
func freshenBase(base string) error {
	readme := filepath.Join(base, "README")
	st, err := os.Stat(readme)
	if err != nil || time.Since(st.ModTime()) < 30*time.Minute {
		return err
	}
	now := time.Now()
	err = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || p == readme {
			return err
		}
		return os.Chtimes(p, now, now)
	})
	if err != nil {
		return err
	}
	// The README last: a run that finds it fresh finds the rest so.
	return os.Chtimes(readme, now, now)
}
