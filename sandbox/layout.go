package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"syscall"
)

// Access is what commands may do with one workspace path.
type Access uint8

// The accesses a PathRules function returns.
const (
	// Writable paths may be read and written (the default).
	Writable Access = iota
	// ReadOnly paths may be read, not changed; a read-only folder admits
	// no new entries.
	ReadOnly
	// Hidden paths may be neither read nor written: an isolating sandbox
	// binds an empty file or folder over them.
	Hidden
)

func (a Access) String() string {
	switch a {
	case ReadOnly:
		return "read-only"
	case Hidden:
		return "hidden"
	}
	return "writable"
}

// PathRules says what commands may do with a slash-separated,
// workspace-relative path ("." is the workspace itself). It is the policy's
// path rules with the meaning the file tools give them (paths.deny: Hidden,
// paths.read_only: ReadOnly), so that one rule means the same for both. It
// must be safe for concurrent use and must not touch the file system.
type PathRules func(rel string) Access

// Entry is one workspace path a Layout covers.
type Entry struct {
	Path string `json:"path"` // slash-separated, relative to the workspace
	Dir  bool   `json:"dir,omitempty"`
}

// Layout is what PathRules select in one workspace at one moment: the
// entries an isolating sandbox hides and those it binds read-only, each
// sorted by path. A read-only folder's own entries are not listed again
// unless they are hidden.
type Layout struct {
	Hidden   []Entry `json:"hidden,omitempty"`
	ReadOnly []Entry `json:"read_only,omitempty"`
}

// Empty reports whether the layout covers nothing.
func (l Layout) Empty() bool { return len(l.Hidden) == 0 && len(l.ReadOnly) == 0 }

// Equal reports whether two layouts cover the same entries alike.
func (l Layout) Equal(o Layout) bool {
	return slices.Equal(l.Hidden, o.Hidden) && slices.Equal(l.ReadOnly, o.ReadOnly)
}

// NewHidden lists the entries hidden in l that old did not hide: paths
// that appeared (or became hidden) between the two layouts.
func (l Layout) NewHidden(old Layout) []Entry {
	var out []Entry
	for _, e := range l.Hidden {
		if _, found := slices.BinarySearchFunc(old.Hidden, e.Path, func(x Entry, p string) int { return cmpString(x.Path, p) }); !found {
			out = append(out, e)
		}
	}
	return out
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// maxLayoutEntries bounds a layout: past it, PlanLayout fails rather than
// ask a runtime for thousands of mounts.
const maxLayoutEntries = 4096

// ErrLayoutTooLarge is wrapped when the rules select more than a sandbox can
// lay out as mounts.
var ErrLayoutTooLarge = errors.New("path rules select too many entries")

// PlanLayout walks the workspace folder dir without following symlinks and
// applies rules to every entry. A hidden folder is not entered, except to
// find its files with more than one link: any other name of such a file
// (a hard link made while the rule did not apply) is hidden too, so that a
// second name never reaches a hidden file's content. A symlink is never
// covered itself: whatever it points to inside the workspace is judged by
// its own name, and a sandbox binds over targets, not links.
//
// The walk only reads; nothing it does follows a link out of dir.
func PlanLayout(dir string, rules PathRules) (Layout, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return Layout{}, fmt.Errorf("sandbox layout: %w", err)
	}
	defer root.Close()
	fsys := root.FS()
	var (
		l      Layout
		linked = map[fileID]bool{} // hidden files with more than one name
		multi  []Entry             // visible files with more than one name
		ids    = map[string]fileID{}
	)
	walkErr := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while we walked: nothing to cover
			}
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		a := rules(p)
		if p == "." && a != Writable {
			// The workspace itself: a sandbox cannot bind over its own
			// root, and rules that hide it leave nothing to run in.
			a = Writable
		}
		switch a {
		case Hidden:
			l.Hidden = append(l.Hidden, Entry{Path: p, Dir: d.IsDir()})
			if d.IsDir() {
				collectLinked(fsys, p, linked)
				return fs.SkipDir
			}
			if id, ok := linkedID(d); ok {
				linked[id] = true
			}
			return nil
		case ReadOnly:
			if !readOnlyParent(l.ReadOnly, p) {
				l.ReadOnly = append(l.ReadOnly, Entry{Path: p, Dir: d.IsDir()})
			}
		}
		if !d.IsDir() {
			if id, ok := linkedID(d); ok {
				multi = append(multi, Entry{Path: p})
				ids[p] = id
			}
		}
		if len(l.Hidden)+len(l.ReadOnly) > maxLayoutEntries {
			return fmt.Errorf("%w: more than %d in %s", ErrLayoutTooLarge, maxLayoutEntries, dir)
		}
		return nil
	})
	if walkErr != nil {
		return Layout{}, fmt.Errorf("sandbox layout: %w", walkErr)
	}
	for _, e := range multi {
		if linked[ids[e.Path]] {
			l.Hidden = append(l.Hidden, e)
		}
	}
	sortEntries(l.Hidden)
	sortEntries(l.ReadOnly)
	return l, nil
}

// readOnlyParent reports whether a folder already listed read-only holds p.
func readOnlyParent(ro []Entry, p string) bool {
	for i := len(ro) - 1; i >= 0; i-- {
		e := ro[i]
		if e.Dir && len(p) > len(e.Path) && p[len(e.Path)] == '/' && p[:len(e.Path)] == e.Path {
			return true
		}
	}
	return false
}

func sortEntries(es []Entry) {
	slices.SortFunc(es, func(a, b Entry) int { return cmpString(a.Path, b.Path) })
}

// fileID is a file's device and inode.
type fileID struct{ dev, ino uint64 }

// linkedID is d's identity when it is a regular file with more than one
// link.
func linkedID(d fs.DirEntry) (fileID, bool) {
	if !d.Type().IsRegular() {
		return fileID{}, false
	}
	info, err := d.Info()
	if err != nil {
		return fileID{}, false
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok || st.Nlink < 2 {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino}, true
}

// collectLinked adds the files under dir with more than one link.
func collectLinked(fsys fs.FS, dir string, into map[fileID]bool) {
	_ = fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if id, ok := linkedID(d); ok {
			into[id] = true
		}
		return nil
	})
}
