package containerd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"
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

// Leftover is what a dead run left in containerd and what Prune did
// about it.
type Leftover struct {
	Container string `json:"container"`
	Run       string `json:"run"`
	Owner     string `json:"owner"` // host/pid/start time of the dead process
	// Workspace is the folder given back to its owner, when the dead run
	// had lent it to the sandbox user.
	Workspace string `json:"workspace,omitempty"`
}

// Prune removes, from the containerd at cfg.Address (namespace
// cfg.Namespace), every container Trio made whose creating process has
// died on this host: its task, its snapshot, its state folder, and the
// ownership of a lent workspace, which goes back to its owner. It returns
// what it removed. Containers of live runs and of other hosts are left
// alone.
func Prune(ctx context.Context, cfg Config) ([]Leftover, error) {
	from := "config"
	if cfg.Address == "" {
		cfg.Address, from = DefaultAddress, "default"
		if v := os.Getenv(AddressEnv); v != "" {
			cfg.Address, from = v, "$"+AddressEnv
		}
	}
	if cfg.Namespace == "" {
		cfg.Namespace = DefaultNamespace
	}
	c, err := connect(ctx, cfg.Address, cfg.Namespace, from)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return removeLeftovers(namespaces.WithNamespace(ctx, cfg.Namespace), c)
}

// removeLeftovers deletes containers of earlier runs whose owner died,
// and gives lent workspaces back.
func removeLeftovers(ctx context.Context, c *client.Client) ([]Leftover, error) {
	cs, err := c.Containers(ctx, fmt.Sprintf(`labels.%q==true`, LabelManaged))
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	var (
		errs []error
		out  []Leftover
	)
	for _, ctr := range cs {
		labels, err := ctr.Labels(ctx)
		if err != nil || !ownerGone(labels[LabelOwner]) {
			continue
		}
		if err := removeContainer(ctx, ctr); err != nil {
			errs = append(errs, err)
			continue
		}
		l := Leftover{Container: ctr.ID(), Run: labels[LabelRun], Owner: labels[LabelOwner]}
		if dir := labels[LabelState]; dir != "" && filepath.IsAbs(dir) && strings.Contains(dir, "trio") {
			if err := os.RemoveAll(dir); err != nil {
				errs = append(errs, err)
			}
		}
		if ws, back := labels[LabelWorkspace], labels[LabelGiveBack]; ws != "" && back != "" {
			var uid, toUID, toGID int
			if _, err := fmt.Sscanf(back, "%d:%d:%d", &uid, &toUID, &toGID); err != nil {
				errs = append(errs, fmt.Errorf("container %s: label %s=%q: %w", ctr.ID(), LabelGiveBack, back, err))
			} else if err := giveBack(ws, uid, toUID, toGID); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("give %s back to uid %d: %w", ws, toUID, err))
			} else {
				l.Workspace = ws
			}
		}
		out = append(out, l)
	}
	if err := errors.Join(errs...); err != nil {
		return out, fmt.Errorf("remove leftovers of dead runs: %w", err)
	}
	return out, nil
}
