package sandbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
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
	// ID is the entry's device and inode: the same file under a new name
	// (its folder renamed) is not a new entry.
	ID FileID `json:"-"`
}

// FileID is a file's device and inode.
type FileID struct{ Dev, Ino uint64 }

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

// Size is the number of entries the layout covers.
func (l Layout) Size() int { return len(l.Hidden) + len(l.ReadOnly) }

// Equal reports whether two layouts cover the same files at the same
// paths alike.
func (l Layout) Equal(o Layout) bool {
	return slices.Equal(l.Hidden, o.Hidden) && slices.Equal(l.ReadOnly, o.ReadOnly)
}

// NewHidden lists the entries hidden in l that are not files old hid:
// what appeared (or became hidden) between the two layouts. Files are
// compared by identity, so a hidden file whose folder was renamed is not
// new, while a file put in place of a hidden one is.
func (l Layout) NewHidden(old Layout) []Entry {
	known := make(map[FileID]bool, len(old.Hidden))
	for _, e := range old.Hidden {
		known[e.ID] = true
	}
	var out []Entry
	for _, e := range l.Hidden {
		if !known[e.ID] {
			out = append(out, e)
		}
	}
	return out
}

// MaxLayoutEntries is the most entries a sandbox lays out as mounts; a
// layout past it is an error (ErrLayoutTooLarge) rather than thousands of
// mounts.
const MaxLayoutEntries = 4096

// ErrLayoutTooLarge is wrapped when the rules select more than a sandbox can
// lay out as mounts.
var ErrLayoutTooLarge = errors.New("path rules select too many entries")

// CheckSize is an error wrapping ErrLayoutTooLarge when l covers more than
// MaxLayoutEntries.
func (l Layout) CheckSize() error {
	if n := l.Size(); n > MaxLayoutEntries {
		return fmt.Errorf("%w: %d hidden or read-only entries, at most %d", ErrLayoutTooLarge, n, MaxLayoutEntries)
	}
	return nil
}

// PlanLayout walks the workspace folder dir without following symlinks and
// applies rules to every entry. A hidden folder is not entered, except to
// find its files with more than one link: any other name of such a file
// (a hard link made while the rule did not apply) is hidden too, so that a
// second name never reaches a hidden file's content. A symlink is never
// covered itself: whatever it points to inside the workspace is judged by
// its own name, and a sandbox binds over targets, not links.
//
// The walk only reads, through an os.Root, so nothing leads it out of dir;
// names that are not UTF-8 are walked like any other. It does not bound
// the layout's size: see CheckSize.
func PlanLayout(dir string, rules PathRules) (Layout, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return Layout{}, fmt.Errorf("sandbox layout: %w", err)
	}
	defer root.Close()
	var (
		l      Layout
		linked = map[FileID]bool{} // hidden files with more than one name
		multi  []Entry             // visible files with more than one name
	)
	walkErr := WalkRoot(root, func(p string, info fs.FileInfo) bool {
		if info.Mode()&fs.ModeSymlink != 0 {
			return false
		}
		id, nlink := Identity(info)
		a := rules(p)
		if p == "." && a != Writable {
			// The workspace itself: a sandbox cannot bind over its own
			// root, and rules that hide it leave nothing to run in.
			a = Writable
		}
		switch a {
		case Hidden:
			l.Hidden = append(l.Hidden, Entry{Path: p, Dir: info.IsDir(), ID: id})
			if info.IsDir() {
				WalkRoot(root, func(q string, qi fs.FileInfo) bool {
					if qid, n := Identity(qi); qi.Mode().IsRegular() && n > 1 {
						linked[qid] = true
					}
					return true
				}, p)
				return false
			}
			if info.Mode().IsRegular() && nlink > 1 {
				linked[id] = true
			}
			return false
		case ReadOnly:
			if !readOnlyParent(l.ReadOnly, p) {
				l.ReadOnly = append(l.ReadOnly, Entry{Path: p, Dir: info.IsDir(), ID: id})
			}
		}
		if info.Mode().IsRegular() && nlink > 1 {
			multi = append(multi, Entry{Path: p, ID: id})
		}
		return true
	}, ".")
	if walkErr != nil {
		return Layout{}, fmt.Errorf("sandbox layout: %w", walkErr)
	}
	for _, e := range multi {
		if linked[e.ID] {
			l.Hidden = append(l.Hidden, e)
		}
	}
	sortEntries(l.Hidden)
	sortEntries(l.ReadOnly)
	return l, nil
}

// WalkRoot calls fn for start (a path relative to root) and, when fn
// returns true for a folder, for everything below it, parents before
// children and each folder's entries in name order, without following
// symlinks. Unlike fs.WalkDir over root.FS(), it walks names that are not
// valid UTF-8 (a sandboxed program can make them) instead of failing.
// Entries that vanish while it walks are skipped; other errors are
// returned once the walk is done with what it could reach.
func WalkRoot(root *os.Root, fn func(rel string, info fs.FileInfo) bool, start string) error {
	info, err := root.Lstat(start)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	var errs []error
	var walk func(rel string, info fs.FileInfo)
	walk = func(rel string, info fs.FileInfo) {
		if !fn(rel, info) || !info.IsDir() {
			return
		}
		f, err := root.Open(rel)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			return
		}
		names, err := f.Readdirnames(-1)
		f.Close()
		if err != nil {
			errs = append(errs, err)
		}
		slices.Sort(names)
		for _, name := range names {
			child := name
			if rel != "." {
				child = rel + "/" + name
			}
			ci, err := root.Lstat(child)
			if err != nil {
				if !errors.Is(err, fs.ErrNotExist) {
					errs = append(errs, err)
				}
				continue
			}
			walk(child, ci)
		}
	}
	walk(start, info)
	return errors.Join(errs...)
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
	slices.SortFunc(es, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
}

// Identity is a file's device and inode and its number of links (zero
// where the platform does not say).
func Identity(info fs.FileInfo) (FileID, uint64) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return FileID{}, 0
	}
	return FileID{Dev: uint64(st.Dev), Ino: st.Ino}, uint64(st.Nlink)
}

// RemoveNewHidden removes from the workspace folder dir every entry rules
// hide now that before did not hide (compared by identity: a hidden file
// whose folder was renamed is the same file and stays), and returns their
// paths. A command that creates a hidden path, such as a .git folder with
// a hostile core.fsmonitor in a workspace that had none, wrote it itself,
// so nothing of the user's is lost, and it could otherwise act on the host
// later. The plan has no size bound, so making many hidden files does not
// dodge the removal. Removal goes through an os.Root.
func RemoveNewHidden(dir string, rules PathRules, before Layout) ([]string, error) {
	after, err := PlanLayout(dir, rules)
	if err != nil {
		return nil, err
	}
	fresh := after.NewHidden(before)
	if len(fresh) == 0 {
		return nil, nil
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	var (
		removed []string
		errs    []error
	)
	for _, e := range fresh {
		if err := root.RemoveAll(e.Path); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, e.Path)
	}
	return removed, errors.Join(errs...)
}

// NoteRemoved tells a command's stderr what RemoveNewHidden removed.
func NoteRemoved(w io.Writer, removed []string) {
	for _, p := range removed {
		fmt.Fprintf(w, "\ntrio: removed %s, which this command created: the policy's paths.deny hides it from commands\n", p)
	}
}
