package containerd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/trioagent/trio/sandbox"
)

// pickUser decides the uid/gid commands run as (see Config.UID) and the
// init uid, which must differ from it so that commands cannot signal or
// trace init.
func (s *Sandbox) pickUser() error {
	defer func() {
		s.initUID = InitID
		if s.uid == InitID {
			s.initUID = InitID - 1
		}
	}()
	if s.cfg.UID != 0 {
		s.uid, s.gid = s.cfg.UID, s.cfg.GID
		if s.gid == 0 {
			s.gid = s.uid
		}
		return nil
	}
	st, err := os.Stat(s.cfg.Workspace)
	if err != nil {
		return fmt.Errorf("workspace %s: %w", s.cfg.Workspace, err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if ok && sys.Uid != 0 {
		s.uid, s.gid = sys.Uid, sys.Gid
		if s.gid == 0 {
			s.gid = s.uid
		}
		return nil
	}
	if ok {
		s.ownerUID, s.ownerGID = sys.Uid, sys.Gid
	}
	s.uid, s.gid, s.adopt = NobodyID, NobodyID, true
	return nil
}

// giveBack hands every entry under root owned by uid (what adoptTree gave
// the sandbox user and what its commands created) to toUID:toGID, so the
// user finds their files as theirs after the run.
func giveBack(root string, uid, toUID, toGID int) error {
	return chownTree(root, toUID, toGID, nil, func(st *syscall.Stat_t) bool { return int(st.Uid) == uid })
}

// adoptTree gives uid:gid every writable entry under root that is not
// already theirs, so that files the host wrote since (as root) stay
// writable inside. Entries the rules hide or make read-only keep their
// owner: commands need not write them.
func adoptTree(root string, uid, gid int, rules sandbox.PathRules) error {
	return chownTree(root, uid, gid, rules, func(st *syscall.Stat_t) bool { return int(st.Uid) != uid || int(st.Gid) != gid })
}

// chownTree gives uid:gid every entry under dir whose stat passes want,
// skipping what rules do not leave writable. It works through an os.Root
// opened on dir, so no symlink, however it was swapped in, leads the walk
// or a chown outside dir; callers also run it only while no sandboxed
// process is alive to swap anything. A file with more than one link is
// left alone: its other names may lie outside the workspace (a hard link
// into a package cache), and an inode's owner is the same under every
// name. Entries that vanish are skipped.
func chownTree(dir string, uid, gid int, rules sandbox.PathRules, want func(*syscall.Stat_t) bool) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	var errs []error
	walkErr := sandbox.WalkRoot(root, func(p string, info fs.FileInfo) bool {
		if rules != nil && p != "." && rules(p) != sandbox.Writable {
			return false
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok || (!info.IsDir() && st.Nlink > 1) || !want(st) {
			return true
		}
		if err := root.Lchown(p, uid, gid); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
		return true
	}, ".")
	return errors.Join(walkErr, errors.Join(errs...))
}
