package containerd

import (
	"context"
	"encoding/json"
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

// Leftover is what a dead run left (a container, or a state folder no
// container named) and what Prune did about it.
type Leftover = sandbox.Leftover

// Prune removes, from the containerd at cfg.Address (namespace
// cfg.Namespace), every container Trio made whose creating process has
// died on this host: its task, its snapshot, its state folder, and the
// ownership of a lent workspace, which goes back to its owner; then the
// state folders in cfg.StateDir of such runs that no container named (a
// run killed before its first command). It returns what it removed.
// Containers and folders of live runs and of other hosts are left alone.
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
	if cfg.StateDir == "" {
		cfg.StateDir = defaultStateDir()
	}
	c, err := connect(ctx, cfg.Address, cfg.Namespace, from)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return removeLeftovers(namespaces.WithNamespace(ctx, cfg.Namespace), c, cfg.StateDir)
}

// labelsFile, in a run's state folder, holds the labels its containers
// carry (see Sandbox.labels), written before anything else there.
const labelsFile = "labels.json"

// removeLeftovers deletes containers of earlier runs whose owner died,
// removes their state folders and gives lent workspaces back; then it
// does the same for the state folders in stateDir of dead runs that had
// no container left (a run dies before its first command, or between
// removing its containers and its folder).
func removeLeftovers(ctx context.Context, c *client.Client, stateDir string) ([]Leftover, error) {
	cs, err := c.Containers(ctx, fmt.Sprintf(`labels.%q==true`, LabelManaged))
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	var (
		errs []error
		out  []Leftover
		// The state folders of the containers seen: still there, or
		// removed already.
		handled = map[string]bool{}
	)
	for _, ctr := range cs {
		labels, err := ctr.Labels(ctx)
		if err != nil || !sandbox.OwnerGone(labels[LabelOwner]) {
			continue
		}
		handled[labels[LabelState]] = true
		if err := removeContainer(ctx, ctr); err != nil {
			errs = append(errs, err)
			continue
		}
		l := Leftover{Kind: Kind, Container: ctr.ID(), Run: labels[LabelRun], Owner: labels[LabelOwner]}
		if err := removeRun(labels, &l); err != nil {
			errs = append(errs, fmt.Errorf("container %s: %w", ctr.ID(), err))
		}
		out = append(out, l)
	}
	// What is left now of a dead run is a folder no container names. The
	// folders are root's alone (see sandbox.PrivateDir), and so must be
	// their labels: what they say is done as root.
	var folders []string
	if sandbox.Private(stateDir, true) == nil {
		folders, _ = filepath.Glob(filepath.Join(stateDir, "*", labelsFile))
	}
	for _, f := range folders {
		dir := filepath.Dir(f)
		if handled[dir] || sandbox.Private(dir, true) != nil || sandbox.Private(f, false) != nil {
			continue
		}
		b, err := os.ReadFile(f)
		var labels map[string]string
		if err != nil || json.Unmarshal(b, &labels) != nil || labels[LabelManaged] != "true" ||
			labels[LabelState] != dir || !sandbox.OwnerGone(labels[LabelOwner]) {
			continue
		}
		l := Leftover{Kind: Kind, Run: labels[LabelRun], Owner: labels[LabelOwner], State: dir}
		if err := removeRun(labels, &l); err != nil {
			errs = append(errs, fmt.Errorf("state folder %s: %w", dir, err))
		}
		out = append(out, l)
	}
	if err := errors.Join(errs...); err != nil {
		return out, fmt.Errorf("remove leftovers of dead runs: %w", err)
	}
	return out, nil
}

// removeRun removes what a dead run left outside containerd, by its
// labels. First the ownership of a lent workspace goes back to its owner
// (only a workspace lent to nobody, as pickUser lends it): until then the
// state folder's labels are its record. Then the state folder goes, what
// is mounted there first. The folder is moved aside before its labels
// are read again: a run given the same id meanwhile (trio resume) made a
// new folder there, which is put back untouched. l notes the workspace
// given back.
func removeRun(labels map[string]string, l *Leftover) error {
	if ws, back := labels[LabelWorkspace], labels[LabelGiveBack]; ws != "" && back != "" {
		var uid, toUID, toGID int
		if _, err := fmt.Sscanf(back, "%d:%d:%d", &uid, &toUID, &toGID); err != nil || uid != NobodyID {
			return fmt.Errorf("label %s=%q: not a workspace lent to nobody (%d)", LabelGiveBack, back, NobodyID)
		}
		if err := giveBack(ws, uid, toUID, toGID); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("give %s back to uid %d: %w", ws, toUID, err)
		}
		l.Workspace = ws
	}
	dir := labels[LabelState]
	if dir == "" || !filepath.IsAbs(dir) || !strings.Contains(dir, "trio") {
		return nil
	}
	tomb := filepath.Join(filepath.Dir(dir), fmt.Sprintf(".gone-%s-%d", filepath.Base(dir), os.Getpid()))
	if err := os.Rename(dir, tomb); errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("move %s aside: %w", dir, err)
	}
	if b, err := os.ReadFile(filepath.Join(tomb, labelsFile)); err == nil {
		var now map[string]string
		if json.Unmarshal(b, &now) != nil || now[LabelOwner] != labels[LabelOwner] {
			if err := os.Rename(tomb, dir); err != nil {
				return fmt.Errorf("put back %s, another run's: %w", dir, err)
			}
			return nil
		}
	}
	if err := unmountUnder(tomb); err != nil {
		return err
	}
	return os.RemoveAll(tomb)
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
