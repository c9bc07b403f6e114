package sandbox

import (
	"errors"
	"os"
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
