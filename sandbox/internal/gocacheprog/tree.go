package gocacheprog

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Tree is a build cache folder that a trusted go command uses as its
// plain GOCACHE, with no cache program in between, and that starts as
// hard links to every entry of a base (a build cache the go command
// wrote): the layering an overlay would give, without a mount. The
// sandbox without overlays (the userns kind) gives it to its trusted
// builds, and to every other command read-only, through Prog.
//
// A hard link shares its file with the base, so every entry of the tree
// is made read-only (mode 0444) and the go command, which never changes
// a file's mode, cannot rewrite one in place: it adds files, and the
// files of the base are only ever read. Only Check makes what a build
// added part of the tree: after each build it keeps what has the disk
// cache's form (as Import does) and removes everything else.
//
// The base's files are shared with every other tree over it and with the
// base itself: their owner may change their mode or times (as the go
// command does with times), not their content through the tree, and
// LinkTree sets their mode back to 0444, Check their mode and
// modification time as they were when linked.
type Tree struct {
	dir string
	mu  sync.Mutex // guards known: Usage may run beside Check
	// known is each entry of the tree as it was when last linked or
	// checked, by its name in its shard ("ab/ab…-d").
	known map[string]treeEntry
	added atomic.Int64 // the space of the kept entries that are not the base's
}

type treeEntry struct {
	ino   uint64
	ctime syscall.Timespec // of a kept file, when Check kept it
	mtime syscall.Timespec // of a base file, when it was linked
	cost  int64            // 0 for the base's
	base  bool
}

// entryCost is what a file of the tree counts for against a disk limit:
// its allocated blocks, at least one block's worth, as a sandbox counts
// its other files.
func entryCost(st *syscall.Stat_t) int64 { return max(st.Blocks*512, 4096) }

// LinkTree makes dir, a new folder, a Tree over base: the 256 shards,
// a hard link to each of base's entries (each made mode 0444), base's
// README, and a trim.txt of now, so that no go command trims the tree
// (the trim would walk all of it and remove only links). dir must be on
// base's filesystem; an entry that cannot be linked is left out (a miss,
// built again).
func LinkTree(dir, base string) (*Tree, error) {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	t := &Tree{dir: dir, known: map[string]treeEntry{}}
	uid := os.Getuid()
	if err := os.WriteFile(filepath.Join(dir, "trim.txt"), []byte(strconv.FormatInt(time.Now().Unix(), 10)), 0o644); err != nil {
		return nil, err
	}
	if b, ok := readSmall(filepath.Join(base, "README"), 4096); ok {
		if err := os.WriteFile(filepath.Join(dir, "README"), b, 0o444); err != nil {
			return nil, err
		}
	}
	for i := range 256 {
		name := fmt.Sprintf("%02x", i)
		if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
			return nil, err
		}
		entries, err := os.ReadDir(filepath.Join(base, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if !e.Type().IsRegular() || !entryName(name, e.Name()) {
				continue
			}
			src := filepath.Join(base, name, e.Name())
			var st syscall.Stat_t
			if err := syscall.Lstat(src, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG || int(st.Uid) != uid {
				continue // a file of another user's is not trusted
			}
			if st.Mode&0o7777 != 0o444 && !chmodRegular(src, st.Ino, 0o444) {
				continue
			}
			if err := os.Link(src, filepath.Join(dir, name, e.Name())); err != nil {
				continue
			}
			t.known[name+"/"+e.Name()] = treeEntry{ino: st.Ino, mtime: st.Mtim, base: true}
		}
	}
	return t, nil
}

// chmodRegular sets the mode of the regular file at path, inode ino,
// through a descriptor that did not follow a symlink (O_PATH, so that a
// mode that denies reading does not stop it).
func chmodRegular(path string, ino uint64, mode uint32) bool {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Ino == ino &&
		unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), mode) == nil
}

// Dir is the tree's folder.
func (t *Tree) Dir() string { return t.dir }

// Added is the space that the entries Check kept, other than the base's,
// take, as of the last Check.
func (t *Tree) Added() int64 { return t.added.Load() }

// Usage is the space the tree's files that are not the base's take now,
// checked or not: what a build is adding while it runs. It only reads.
func (t *Tree) Usage() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var total int64
	// A folder it cannot read counts nothing until Check has reopened it.
	_ = t.walk(false, func(name string, st *syscall.Stat_t) {
		if k, ok := t.known[name]; !ok || !k.base || k.ino != st.Ino {
			total += entryCost(st)
		}
	}, func(string) {})
	return total
}

// Check makes what a go command did to the tree since it was linked or
// last checked part of it: each new or replaced file it keeps when it
// has the disk cache's form (an output whose content is its ID, an
// action entry of the cache's format naming its own action), made mode
// 0444; anything else (a file outside the shards, a folder or symlink in
// one, a forged output) it removes. A file of the base whose mode changed
// gets 0444 and its modification time back (the go command touches what
// it reads; the base's owner may change either). No process may write
// the tree while Check runs.
func (t *Tree) Check() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var errs []error
	seen := map[string]bool{}
	var added int64
	walkErr := t.walk(true, func(name string, st *syscall.Stat_t) {
		seen[name] = true
		k, ok := t.known[name]
		path := filepath.Join(t.dir, filepath.FromSlash(name))
		switch {
		case ok && k.base && k.ino == st.Ino:
			if st.Mode&0o7777 != 0o444 {
				errs = append(errs, os.Chmod(path, 0o444))
			}
			if st.Mtim != k.mtime {
				ts := []unix.Timespec{unix.NsecToTimespec(st.Atim.Nano()), unix.NsecToTimespec(k.mtime.Nano())}
				errs = append(errs, unix.UtimesNanoAt(unix.AT_FDCWD, path, ts, unix.AT_SYMLINK_NOFOLLOW))
			}
			return
		case ok && !k.base && k.ino == st.Ino && k.ctime == st.Ctim:
			added += k.cost
			return
		}
		if !validEntry(path, name, st) {
			delete(t.known, name)
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			return
		}
		if err := os.Chmod(path, 0o444); err != nil {
			errs = append(errs, err)
			return
		}
		var after syscall.Stat_t
		if err := syscall.Lstat(path, &after); err != nil {
			errs = append(errs, err)
			return
		}
		k = treeEntry{ino: after.Ino, ctime: after.Ctim, cost: entryCost(&after)}
		t.known[name] = k
		added += k.cost
	}, func(path string) {
		if err := os.RemoveAll(path); err != nil {
			errs = append(errs, err)
		}
	})
	if walkErr != nil {
		// Something in the tree went unseen: keep none of it.
		if err := t.empty(); err != nil {
			return fmt.Errorf("check the build cache %s: %w; and emptying it: %w", t.dir, walkErr, err)
		}
		return fmt.Errorf("check the build cache %s (emptied): %w", t.dir, walkErr)
	}
	for name := range t.known {
		if !seen[name] {
			delete(t.known, name) // trimmed by the go command
		}
	}
	t.added.Store(added)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("check the build cache %s: %w", t.dir, err)
	}
	return nil
}

// walk calls file for each regular file in a shard of the tree, by its
// name in its shard, and other for the path of everything else that is
// not the tree's own: a README and trim.txt that are not regular files
// of their size, a shard that is not a folder, a non-regular entry in a
// shard or one not named as the disk cache names them. With repair, the
// tree's folder and its shards get mode 0755 back first (a test binary
// may change a mode, and a shard it closed would hide what is in it);
// then a folder that cannot be read is an error.
func (t *Tree) walk(repair bool, file func(name string, st *syscall.Stat_t), other func(path string)) error {
	if repair {
		if err := repairDir(t.dir); err != nil {
			return err
		}
	}
	top, err := os.ReadDir(t.dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range top {
		path := filepath.Join(t.dir, e.Name())
		switch name := e.Name(); {
		case name == "README" || name == "trim.txt":
			if _, ok := readSmall(path, 4096); !ok {
				other(path)
			}
			continue
		case !e.IsDir() || len(name) != 2 || strings.Trim(name, "0123456789abcdef") != "":
			other(path)
			continue
		}
		if repair {
			if err := repairDir(path); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		entries, err := os.ReadDir(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, f := range entries {
			name := e.Name() + "/" + f.Name()
			var st syscall.Stat_t
			if !f.Type().IsRegular() || !entryName(e.Name(), f.Name()) {
				other(filepath.Join(path, f.Name()))
				continue
			}
			if err := syscall.Lstat(filepath.Join(path, f.Name()), &st); err != nil {
				errs = append(errs, err)
				continue
			}
			if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
				other(filepath.Join(path, f.Name()))
				continue
			}
			file(name, &st)
		}
	}
	return errors.Join(errs...)
}

// repairDir gives the tree's folder at path, which must be one, mode 0755.
func repairDir(path string) error {
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		return err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return fmt.Errorf("%s is not a folder", path)
	}
	if st.Mode&0o7777 != 0o755 {
		return os.Chmod(path, 0o755)
	}
	return nil
}

// empty removes every entry of every shard, in the tree's folder (not
// through a symlink in its place): what Check could not check is not kept.
func (t *Tree) empty() error {
	if err := repairDir(t.dir); err != nil {
		return err
	}
	var errs []error
	for i := range 256 {
		shard := filepath.Join(t.dir, fmt.Sprintf("%02x", i))
		errs = append(errs, os.RemoveAll(shard), os.Mkdir(shard, 0o755))
	}
	clear(t.known)
	t.added.Store(0)
	return errors.Join(errs...)
}

// entryName reports whether name is how the disk cache names an entry
// of the shard: 64 hex digits that start with the shard's two, "-a" or
// "-d".
func entryName(shard, name string) bool {
	id, kind, ok := strings.Cut(name, "-")
	return ok && (kind == "a" || kind == "d") && len(id) == 64 && id[:2] == shard &&
		strings.Trim(id, "0123456789abcdef") == ""
}

// validEntry reports whether the regular file at path, named name in the
// tree, has the disk cache's form: an output whose SHA-256 is its name,
// or an action entry of the cache's format for its own action.
func validEntry(path, name string, st *syscall.Stat_t) bool {
	id, kind, _ := strings.Cut(name[3:], "-")
	if kind == "d" {
		out, err := hex.DecodeString(id)
		return err == nil && sameContent(path, out, st.Size)
	}
	b, ok := readEntry(path)
	return ok && strings.HasPrefix(string(b), "v1 "+id+" ") && b[entrySize-1] == '\n'
}
