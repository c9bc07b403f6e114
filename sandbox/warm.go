package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"go/version"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// WarmCacheEnv names the variable that replaces DefaultWarmCache.
const WarmCacheEnv = "TRIO_WARM_CACHE"

// WarmVersion changes when what a warm-up builds changes, so that older
// bases are not used.
const WarmVersion = "1"

// WarmModule is the project a warm-up runs `go test` on: a test that imports the
// standard packages small projects use, so that their compiled form (with
// everything they import) and the vet facts `go test` needs are in the
// base. `go build std` would compile all of it, at several times the cost,
// for packages few projects import; those compile on first use instead.
var WarmModule = map[string]string{
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

// ToolchainKey names the host's Go toolchain as the container finds it:
// the go command on the container's PATH (host folders are bound at the
// same paths), its size and time, and GOROOT's VERSION file. A changed
// toolchain gets a new key, so a base is never used with another one.
// goVersion is the toolchain's Go version ("go1.26.8"), "" when VERSION
// does not say.
func ToolchainKey(dirs []string) (key, goVersion string, ok bool) {
	for _, d := range strings.Split(strings.TrimPrefix(DefaultPath, "PATH="), ":") {
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
		file, _ := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(real)), "VERSION"))
		h := sha256.New()
		fmt.Fprintf(h, "%s\x00%s\x00%d\x00%d\x00%s", WarmVersion, real, st.Size(), st.ModTime().UnixNano(), file)
		first, _, _ := strings.Cut(string(file), "\n")
		if !version.IsValid(first) {
			first = ""
		}
		return hex.EncodeToString(h.Sum(nil))[:16], first, true
	}
	return "", "", false
}

// SealBase gives the warm base at dir the one form every sandbox kind
// reads it in, whichever kind built it: every entry is this process's
// user's, files are read-only to all (0444), folders open to all (0777:
// the containerd kind's overlays over the base take their folders' owner
// and mode, and the sandbox user adds entries to its copies of them; the
// folder above the base, see WarmDir, keeps everyone else out), and
// nothing else (no symlink, no device) is left. Entries of uid from (the
// sandbox user who just built the base; -1 for none) are given to this
// user; an entry of any other user is an error, never adopted. It changes
// only what differs, so that sealing a sealed base leaves every inode as
// it was (the userns kind's trees compare their links' change times).
func SealBase(dir string, from int) error {
	uid, gid := os.Getuid(), os.Getgid()
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && !d.Type().IsRegular() {
			return os.Remove(p) // the Go cache makes none; keep it that way
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("%s: no owner", p)
		}
		switch {
		case int(st.Uid) == uid && int(st.Gid) == gid:
		case int(st.Uid) == uid || from >= 0 && int(st.Uid) == from:
			if err := os.Lchown(p, uid, gid); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s belongs to uid %d, not to this user (%d): remove %s, and it is built again", p, st.Uid, uid, dir)
		}
		want := fs.FileMode(0o444)
		if d.IsDir() {
			want = 0o777
		}
		if info.Mode().Perm() != want || info.Mode()&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != 0 {
			return os.Chmod(p, want)
		}
		return nil
	})
}

// DefaultWarmCache is where trusted caches are kept without
// a WarmCache setting: $XDG_CACHE_HOME/trio, else ~/.cache/trio.
//
// $TRIO_WARM_CACHE overrides it ("none" turns warm caches off).
func DefaultWarmCache() string {
	if v := os.Getenv(WarmCacheEnv); v != "" {
		return v
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "trio")
	}
	return filepath.Join(os.TempDir(), "trio-cache")
}

// WarmDir is PrivateDir for the folder of the warm bases, which must also
// be closed to others, not only unwritable: the bases' folders are open to
// every uid (see SealBase), so this folder is what keeps other local users
// from planting entries. A folder of this user's that others may enter is
// made 0700.
func WarmDir(dir string) error {
	if err := PrivateDir(dir); err != nil {
		return err
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return os.Chmod(dir, perm&0o700)
	}
	return nil
}

// PrivateDir makes dir (0700) when missing and checks that it is a real
// folder of this process's user that nobody else may write: sandboxes
// trust what is in it, and root works in it, so another local user who
// could put a file or a symlink there could poison a build or have root
// change files of their choosing.
func PrivateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return Private(dir, true)
}

// Private checks that path is a folder (dir) or a regular file, not a
// symlink, of this process's user that nobody else may write (see
// PrivateDir).
func Private(path string, dir bool) error {
	st, err := os.Lstat(path)
	if err != nil {
		return err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	switch {
	case dir && !st.IsDir():
		return fmt.Errorf("%s is not a folder (a symlink?)", path)
	case !dir && !st.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file (a symlink?)", path)
	case ok && int(sys.Uid) != os.Geteuid():
		return fmt.Errorf("%s belongs to uid %d, not to this user (%d)", path, sys.Uid, os.Geteuid())
	case st.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%s is writable by others (mode %v): make it 0700 or choose another folder", path, st.Mode().Perm())
	}
	return nil
}
