package containerd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/trioagent/trio/sandbox"
)

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
		if err != nil || !sandbox.OwnerGone(labels[LabelOwner]) {
			continue
		}
		if err := removeContainer(ctx, ctr); err != nil {
			errs = append(errs, err)
			continue
		}
		l := Leftover{Container: ctr.ID(), Run: labels[LabelRun], Owner: labels[LabelOwner]}
		if dir := labels[LabelState]; dir != "" && filepath.IsAbs(dir) && strings.Contains(dir, "trio") {
			if err := unmountUnder(dir); err != nil {
				errs = append(errs, err)
			} else if err := os.RemoveAll(dir); err != nil {
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

// unmountUnder detaches every mount at or under dir, deepest first: a
// run's state folder holds the trusted builds' shared mount point (see
// trustedCacheDir), which a removal must not descend into.
func unmountUnder(dir string) error {
	ms, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		return fmt.Errorf("list mounts under %s: %w", dir, err)
	}
	slices.SortFunc(ms, func(a, b *mountinfo.Info) int { return strings.Compare(b.Mountpoint, a.Mountpoint) })
	var errs []error
	for _, m := range ms {
		if err := unix.Unmount(m.Mountpoint, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", m.Mountpoint, err))
		}
	}
	return errors.Join(errs...)
}
