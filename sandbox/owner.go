package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

var (
	ownerOnce sync.Once
	owner     string
)

// OwnerLabel names this process for the leftovers a sandbox leaves on the
// host: host name, pid and start time, so that a reused pid is not taken
// for the owner. OwnerGone reads it back.
func OwnerLabel() string {
	ownerOnce.Do(func() {
		host, _ := os.Hostname()
		pid := os.Getpid()
		owner = host + "/" + strconv.Itoa(pid) + "/" + startTime(pid)
	})
	return owner
}

// OwnerGone reports whether the process an OwnerLabel names has died.
// Labels of other hosts, and malformed ones, are never judged gone.
func OwnerGone(label string) bool {
	parts := strings.Split(strings.TrimSpace(label), "/")
	if len(parts) != 3 {
		return false
	}
	if host, _ := os.Hostname(); parts[0] != host {
		return false
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	st := startTime(pid)
	return st != "" && parts[2] != "" && st != parts[2]
}

// startTime is field 22 of /proc/<pid>/stat, or "" when unreadable.
func startTime(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// RemoveState removes a kind's state folder, whose cache may hold
// read-only folders (Go's module extraction). The walk never follows a
// symlink.
func RemoveState(dir string) error {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	return nil
}

// RemoveLeftovers removes the folders matching glob that belong to this
// user and whose owner file (ownerFile inside, an OwnerLabel) names a
// process that died without closing its sandbox (kill -9), and says
// which, as kind's.
func RemoveLeftovers(kind, glob, ownerFile string) ([]Leftover, error) {
	dirs, _ := filepath.Glob(glob)
	var out []Leftover
	var errs []error
	for _, d := range dirs {
		st, err := os.Lstat(d)
		if err != nil || !st.IsDir() || st.Sys().(*syscall.Stat_t).Uid != uint32(os.Getuid()) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil || !OwnerGone(string(b)) {
			continue
		}
		if err := RemoveState(d); err != nil {
			errs = append(errs, fmt.Errorf("%s sandbox: %w", kind, err))
			continue
		}
		out = append(out, Leftover{Kind: kind, State: d, Owner: strings.TrimSpace(string(b))})
	}
	return out, errors.Join(errs...)
}
