package critic

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/trioagent/trio/planner"
)

// SuiteFile is one file of the canonical acceptance suite: a
// workspace-relative path inside the tests folder and its content.
type SuiteFile struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// Changes of the tests folder that RestoreSuite finds.
const (
	ChangeModified = "modified" // a suite file's content differs
	ChangeDeleted  = "deleted"  // a suite file is missing
	ChangeAdded    = "added"    // a file or folder the suite does not have
	ChangeReplaced = "replaced" // a suite file or folder is now another kind of file (a symlink, a folder)
)

// SuiteChange is one difference between the workspace's tests folder and
// the canonical suite, found and undone by RestoreSuite.
type SuiteChange struct {
	Path   string `json:"path"`
	Change string `json:"change"`
	// Detail says what was there, e.g. "sha256 1a2b3c4d, want 5e6f7a8b" or
	// "a symlink".
	Detail string `json:"detail,omitempty"`
	// During is set when the change happened while the Critic's own
	// commands ran the project's code, rather than before the check.
	During bool `json:"during_check,omitempty"`
}

func (c SuiteChange) String() string {
	s := c.Path + " " + c.Change
	if c.Detail != "" {
		s += " (" + c.Detail + ")"
	}
	if c.During {
		s += " while the checks ran"
	}
	return s
}

// Restore is what one RestoreSuite did.
type Restore struct {
	// Changes are the differences found, each undone, sorted by path.
	Changes []SuiteChange `json:"changes,omitempty"`
	// Caches are cache files and folders removed from the tests folder
	// (__pycache__, *.pyc ...): test runners write them, so they are no
	// sign of tampering, but a planted one could stand in for a test
	// (Python loads a .pyc whose recorded source size and time match).
	Caches []string `json:"caches,omitempty"`
}

// pyCache matches the cache files Python writes next to test modules.
var pyCache = regexp.MustCompile(`\.py[co]$`)

// suiteHash is a SHA-256 over the sorted paths and contents.
func suiteHash(files []SuiteFile) string {
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00%d\x00%s\x00", f.Path, len(f.Content), f.Content)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Verify reports whether files are exactly the suite s describes (the same
// paths and, by hash, the same contents), so that a copy read back from the
// run folder can be trusted.
func (s TestSuite) Verify(files []SuiteFile) error {
	sorted := slices.Clone(files)
	slices.SortFunc(sorted, func(a, b SuiteFile) int { return strings.Compare(a.Path, b.Path) })
	paths := make([]string, len(sorted))
	for i, f := range sorted {
		paths[i] = f.Path
	}
	if !slices.Equal(paths, s.Files) {
		return fmt.Errorf("suite version %d: files %q, want %q", s.Version, paths, s.Files)
	}
	if got := suiteHash(sorted); got != s.Hash {
		return fmt.Errorf("suite version %d: content hash %s, want %s", s.Version, short(got), short(s.Hash))
	}
	return nil
}

// SuiteFiles returns the canonical files of the current suite, sorted by
// path: what DesignTests wrote, or what WithSuiteFiles restored. The caller
// keeps them out of the Worker's reach (the agent keeps them in the run
// folder) and hands them back with WithSuiteFiles on resume.
func (c *Critic) SuiteFiles() []SuiteFile {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.files)
}

// RestoreSuite makes the workspace's tests folder the canonical suite
// again: every suite file with its content (compared by SHA-256), nothing
// else. What differed is in Restore.Changes, and is also kept for the next
// Check, which reports it as tampering; cache files are removed without
// counting. Without a canonical suite (no DesignTests, no WithSuiteFiles)
// it does nothing. Paths are judged without following symbolic links: a
// link in place of the tests folder, a folder in it or a suite file is a
// change, removed, never written through. An error means the folder could
// not be read or restored.
//
// Sentinel tests a check laid over the suite and could not remove (the
// session died while it ran) are removed without counting as changes.
func (c *Critic) RestoreSuite() (Restore, error) {
	return c.restoreSuite(c.leftovers())
}

// restoreSuite is RestoreSuite with the sentinel files quiet: files that
// are exactly one of them are put right without counting as changes.
func (c *Critic) restoreSuite(quiet []SuiteFile) (Restore, error) {
	r, err := c.restoreTo(c.SuiteFiles(), quiet)
	c.mu.Lock()
	c.pending = append(c.pending, r.Changes...)
	c.mu.Unlock()
	return r, err
}

// leftovers are the files the next check's sentinels would write, under
// either Python runner (Go's are the same under both).
func (c *Critic) leftovers() []SuiteFile {
	var out []SuiteFile
	for _, cmd := range []string{"python3 -m unittest", "python3 -m pytest"} {
		_, files := c.sentinels(planner.Plan{TestCommand: cmd})
		out = append(out, files...)
	}
	return out
}

// restoreTo makes the tests folder hold exactly files (see RestoreSuite)
// and returns what differed, except that a file whose content is exactly
// that of the same path in quiet is put right without counting.
func (c *Critic) restoreTo(files, quiet []SuiteFile) (Restore, error) {
	c.mu.Lock()
	dir := c.suite.Dir
	c.mu.Unlock()
	var r Restore
	if len(files) == 0 || dir == "" {
		return r, nil
	}
	isQuiet := func(p, sum string) bool {
		return slices.ContainsFunc(quiet, func(f SuiteFile) bool { return f.Path == p && contentHash(f.Content) == sum })
	}
	var hushed []string
	want := make(map[string]*SuiteFile, len(files))
	dirs := map[string]bool{}
	for i := range files {
		want[files[i].Path] = &files[i]
		for d := path.Dir(files[i].Path); d != "." && d != dir; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	root := c.ws.Root
	add := func(p, change, detail string) {
		r.Changes = append(r.Changes, SuiteChange{Path: p, Change: change, Detail: detail})
	}
	// The folders from the workspace down to the tests folder must be real
	// folders, or writes would land where a link points.
	for _, d := range ancestors(dir) {
		fi, err := root.Lstat(d)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return r, fmt.Errorf("critic: restore the acceptance suite: %w", err)
		case fi.IsDir():
			continue
		}
		add(d, ChangeReplaced, fileKind(fi.Mode())+" in place of a folder")
		if err := root.RemoveAll(d); err != nil {
			return r, fmt.Errorf("critic: restore the acceptance suite: remove %s: %w", d, err)
		}
	}
	seen := map[string]bool{}
	err := fs.WalkDir(root.FS(), dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if p == dir {
			return nil
		}
		typ := d.Type()
		switch {
		case typ.IsDir() && dirs[p]:
			return nil
		case typ.IsDir():
			if cacheDirs[d.Name()] {
				r.Caches = append(r.Caches, p+"/")
			} else {
				add(p+"/", ChangeAdded, "a folder the suite does not have")
			}
			if err := removeAll(root, p); err != nil {
				return err
			}
			return fs.SkipDir
		case want[p] != nil && typ.IsRegular():
			seen[p] = true
			got, err := fileHash(root.FS(), p)
			if err == nil && got == contentHash(want[p].Content) {
				return nil
			}
			if err == nil && isQuiet(p, got) {
				hushed = append(hushed, p)
				return removeAll(root, p)
			}
			detail := "unreadable"
			if err == nil {
				detail = fmt.Sprintf("sha256 %s, want %s", short(got), short(contentHash(want[p].Content)))
			}
			add(p, ChangeModified, detail)
			return removeAll(root, p)
		case want[p] != nil || dirs[p]:
			if want[p] != nil {
				seen[p] = true
			}
			add(p, ChangeReplaced, fileKind(typ))
			return removeAll(root, p)
		case typ.IsRegular() && pyCache.MatchString(d.Name()):
			r.Caches = append(r.Caches, p)
			return removeAll(root, p)
		default:
			if typ.IsRegular() {
				if got, err := fileHash(root.FS(), p); err == nil && isQuiet(p, got) {
					return removeAll(root, p)
				}
			}
			add(p, ChangeAdded, fileKind(typ)+" the suite does not have")
			return removeAll(root, p)
		}
	})
	if err != nil {
		return r, fmt.Errorf("critic: restore the acceptance suite in %s: %w", dir, err)
	}
	for _, f := range files {
		if seen[f.Path] {
			if !slices.Contains(hushed, f.Path) && !slices.ContainsFunc(r.Changes, func(x SuiteChange) bool { return x.Path == f.Path }) {
				continue // unchanged
			}
		} else {
			add(f.Path, ChangeDeleted, "")
		}
		if err := root.MkdirAll(path.Dir(f.Path), 0o755); err != nil {
			return r, fmt.Errorf("critic: restore %s: %w", f.Path, err)
		}
		err := root.WriteFile(f.Path, []byte(f.Content), 0o644)
		if errors.Is(err, fs.ErrPermission) && root.Chmod(path.Dir(f.Path), 0o755) == nil {
			err = root.WriteFile(f.Path, []byte(f.Content), 0o644)
		}
		if err != nil {
			return r, fmt.Errorf("critic: restore %s: %w", f.Path, err)
		}
	}
	slices.SortFunc(r.Changes, func(a, b SuiteChange) int { return strings.Compare(a.Path, b.Path) })
	return r, nil
}

// takePending returns the changes found since the last Check and forgets
// them.
func (c *Critic) takePending() []SuiteChange {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pending
	c.pending = nil
	return p
}

// PendingChanges returns the changes RestoreSuite found (or WithPending
// restored) that no Check has reported yet, so that a caller can keep them
// across a crash.
func (c *Critic) PendingChanges() []SuiteChange {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.pending)
}

// removeAll removes p, making its folder writable first when a command
// took that away.
func removeAll(root interface {
	RemoveAll(string) error
	Chmod(string, fs.FileMode) error
}, p string) error {
	err := root.RemoveAll(p)
	if err != nil && errors.Is(err, fs.ErrPermission) {
		if root.Chmod(path.Dir(p), 0o755) == nil {
			err = root.RemoveAll(p)
		}
	}
	if err != nil {
		return fmt.Errorf("remove %s: %w", p, err)
	}
	return nil
}

// ancestors lists dir and the folders above it, top first, without ".".
func ancestors(dir string) []string {
	var out []string
	for d := dir; d != "." && d != "/" && d != ""; d = path.Dir(d) {
		out = append(out, d)
	}
	slices.Reverse(out)
	return out
}

func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	case m.IsDir():
		return "a folder"
	case m.IsRegular():
		return "a file"
	}
	return "a special file"
}

func fileHash(fsys fs.FS, p string) (string, error) {
	f, err := fsys.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func contentHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
