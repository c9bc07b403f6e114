package containerd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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

// warmVersion changes when what the warm-up builds changes, so that older
// bases are not used.
const warmVersion = "1"

// warmModule is what the warm-up runs `go test` on: a test that imports the
// standard packages small projects use, so that their compiled form (with
// everything they import) and the vet facts `go test` needs are in the
// base. `go build std` would compile all of it, at several times the cost,
// for packages few projects import; those compile on first use instead.
var warmModule = map[string]string{
	"go.mod": "module trio.local/warm\n\ngo 1.21\n",
	"warm_test.go": `package warm

import (
	_ "bufio"
	_ "bytes"
	_ "context"
	_ "encoding/json"
	_ "errors"
	_ "flag"
	_ "fmt"
	_ "io"
	_ "math"
	_ "math/rand"
	_ "net/http"
	_ "net/http/httptest"
	_ "os"
	_ "os/exec"
	_ "path/filepath"
	_ "regexp"
	_ "slices"
	_ "sort"
	_ "strconv"
	_ "strings"
	_ "sync"
	"testing"
	_ "text/template"
	_ "time"
	_ "unicode"
	_ "unicode/utf8"
)

func TestWarm(t *testing.T) {}
`,
}

// goCacheMount is the run's Go build cache at /cache/go-build: an overlay
// whose lower layer is the trusted base (read-only by construction: overlay
// never writes a lower layer) and whose upper layer is the run's own, in
// its state folder, so that nothing a run writes (a poisoned entry, a
// forged file) reaches the base or another run.
func (s *Sandbox) goCacheMount() (specs.Mount, bool) {
	if s.warmBase == "" {
		return specs.Mount{}, false
	}
	dir := filepath.Join(s.stateDir, "gocache")
	return specs.Mount{Destination: CacheDir + "/go-build", Type: "overlay", Source: "overlay", Options: []string{
		"lowerdir=" + s.warmBase, "upperdir=" + filepath.Join(dir, "upper"), "workdir=" + filepath.Join(dir, "work"),
		"nosuid", "nodev",
	}}, true
}

// prepareWarm finds or builds the trusted base of the Go build cache for
// the container's toolchain and readies the run's upper layer. Without Go
// in the container, or with Config.WarmCache "none", the run's cache simply
// starts empty.
func (s *Sandbox) prepareWarm(ctx context.Context) error {
	if s.cfg.WarmCache == "none" || s.cfg.RootFS != RootFSHost {
		return nil
	}
	key, ok := toolchainKey(s.cfg.ToolchainDirs)
	if !ok {
		return nil
	}
	if err := privateDir(s.cfg.WarmCache); err != nil {
		return fmt.Errorf("warm cache: %w", err)
	}
	base := filepath.Join(s.cfg.WarmCache, "go-build-"+key)
	if _, err := os.Stat(filepath.Join(base, "README")); err != nil {
		if err := s.buildWarm(ctx, base); err != nil {
			return err
		}
	}
	dir := filepath.Join(s.stateDir, "gocache")
	for _, d := range []string{"upper", "work"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return fmt.Errorf("warm cache: %w", err)
		}
	}
	if err := os.Lchown(filepath.Join(dir, "upper"), int(s.uid), int(s.gid)); err != nil {
		return fmt.Errorf("warm cache: %w", err)
	}
	s.warmBase = base
	return nil
}

// toolchainKey names the host's Go toolchain as the container finds it:
// the go command on the container's PATH (host folders are bound at the
// same paths), its size and time, and GOROOT's VERSION file. A changed
// toolchain gets a new key, so a base is never used with another one.
func toolchainKey(dirs []string) (string, bool) {
	for _, d := range strings.Split(strings.TrimPrefix(sandbox.DefaultPath, "PATH="), ":") {
		bound := false
		for _, t := range dirs {
			bound = bound || d == t || strings.HasPrefix(d, t+"/")
		}
		if !bound {
			continue
		}
		goBin := filepath.Join(d, "go")
		real, err := filepath.EvalSymlinks(goBin)
		if err != nil {
			continue
		}
		st, err := os.Stat(real)
		if err != nil || st.IsDir() {
			continue
		}
		version, _ := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(real)), "VERSION"))
		h := sha256.New()
		fmt.Fprintf(h, "%s\x00%s\x00%d\x00%d\x00%s", warmVersion, real, st.Size(), st.ModTime().UnixNano(), version)
		return hex.EncodeToString(h.Sum(nil))[:16], true
	}
	return "", false
}

// buildWarm builds the base in a sandbox of its own, without the run's
// workspace: a project of its own (warmModule) and `go test`, with a cache
// folder that only this sandbox writes. Then the base
// is made read-only for everyone but the owner (root) and renamed into
// place, so a half-built base is never used. A lock file keeps two runs
// from building it at once; the second waits and uses the first's.
func (s *Sandbox) buildWarm(ctx context.Context, base string) error {
	// Private: every run trusts what is in it.
	if err := privateDir(filepath.Dir(base)); err != nil {
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
	for name, content := range warmModule {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			return fmt.Errorf("warm cache: %w", err)
		}
	}
	cfg := s.cfg
	cfg.Workspace, cfg.RunID, cfg.Rules, cfg.WarmCache = ws, fmt.Sprintf("warm-%x", time.Now().UnixNano()), nil, "none"
	cfg.goCache = cache
	cfg.Limits.Timeout, cfg.Limits.Disk = 15*time.Minute, 0
	if cfg.Limits.Memory > 0 && cfg.Limits.Memory < 1<<30 {
		cfg.Limits.Memory = 1 << 30
	}
	w, err := New(ctx, cfg)
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
	err = filepath.WalkDir(built, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return os.Remove(p) // the Go cache makes none; keep it that way
		}
		mode := os.FileMode(0o444)
		if d.IsDir() {
			mode = 0o777
		}
		if err := os.Lchown(p, 0, 0); err != nil {
			return err
		}
		return os.Chmod(p, mode)
	})
	if err != nil {
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

// DefaultWarmCache is where trusted caches are kept without
// Config.WarmCache: $XDG_CACHE_HOME/trio, else ~/.cache/trio.
func DefaultWarmCache() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "trio")
	}
	return filepath.Join(os.TempDir(), "trio-cache")
}
