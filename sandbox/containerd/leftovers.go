package containerd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	client "github.com/containerd/containerd/v2/client"
)

var (
	ownerOnce sync.Once
	owner     string
)

// ownerLabel identifies this process: host, pid and start time (so a
// reused pid is not mistaken for the owner).
func ownerLabel() string {
	ownerOnce.Do(func() {
		host, _ := os.Hostname()
		pid := os.Getpid()
		owner = host + "/" + strconv.Itoa(pid) + "/" + startTime(pid)
	})
	return owner
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

// ownerGone reports whether the process named by an owner label has died.
// Containers of other hosts are never judged gone.
func ownerGone(label string) bool {
	parts := strings.Split(label, "/")
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

// removeLeftovers deletes containers of earlier runs whose owner died.
func removeLeftovers(ctx context.Context, c *client.Client) error {
	cs, err := c.Containers(ctx, fmt.Sprintf(`labels.%q==true`, LabelManaged))
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	var errs []error
	for _, ctr := range cs {
		labels, err := ctr.Labels(ctx)
		if err != nil || !ownerGone(labels[LabelOwner]) {
			continue
		}
		if err := removeContainer(ctx, ctr); err != nil {
			errs = append(errs, err)
			continue
		}
		if dir := labels[LabelState]; dir != "" && filepath.IsAbs(dir) && strings.Contains(dir, "trio") {
			if err := os.RemoveAll(dir); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remove leftovers of dead runs: %w", err)
	}
	return nil
}
