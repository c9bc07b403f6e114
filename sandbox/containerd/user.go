package containerd

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// pickUser decides the uid/gid commands run as (see Config.UID).
func (s *Sandbox) pickUser() error {
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
	return adoptTree(s.cfg.Workspace, NobodyID, NobodyID)
}

// giveBack hands every entry under root owned by uid (what adoptTree gave
// the sandbox user and what its commands created) to toUID:toGID, without
// following symlinks, so the user finds their files as theirs after the run.
func giveBack(root string, uid, toUID, toGID int) error {
	return chownTree(root, toUID, toGID, func(st *syscall.Stat_t) bool { return int(st.Uid) == uid })
}

// adoptTree gives uid:gid every entry under root that is not already
// theirs, without following symlinks. It runs before each command so that
// files the host wrote since (as root) stay writable inside.
func adoptTree(root string, uid, gid int) error {
	return chownTree(root, uid, gid, func(st *syscall.Stat_t) bool { return int(st.Uid) != uid || int(st.Gid) != gid })
}

// chownTree gives uid:gid every entry under root whose stat passes want,
// without following symlinks. Entries that vanish during the walk are skipped.
func chownTree(root string, uid, gid int, want func(*syscall.Stat_t) bool) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := info.Sys().(*syscall.Stat_t); !ok || !want(st) {
			return nil
		}
		if err := os.Lchown(p, uid, gid); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	})
}
