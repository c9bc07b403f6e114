package agent

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pmezard/go-difflib/difflib"
)

// StartDir is the run folder's snapshot of the workspace as the run found
// it: start/manifest.json lists every file with its SHA-256, and
// start/objects/<sha256> holds each distinct content once. It is taken once,
// when the run is created, and never again (a resume keeps it), so that
// Diff always compares with the workspace before the run touched it.
//
// A snapshot rather than git: it works for every workspace (most are not
// repositories, and the shipped policies hide .git from the run), and it
// never writes into the user's repository (no commit, stash or index).
const StartDir = "start"

// Limits of the starting snapshot: a file larger than snapshotMaxFile is
// recorded by hash only (a change to it is reported, its lines are not),
// and a workspace of more than snapshotMaxFiles files or snapshotMaxBytes
// bytes is recorded up to that point and marked incomplete.
const (
	snapshotMaxFile  = 8 << 20
	snapshotMaxFiles = 20000
	snapshotMaxBytes = 256 << 20
)

// diffMaxFile is the largest file whose lines Diff compares; beyond it a
// change is reported without lines.
const diffMaxFile = 2 << 20

// snapshotFile is one file of the starting workspace.
type snapshotFile struct {
	Path   string      `json:"path"`
	SHA256 string      `json:"sha256"`
	Size   int64       `json:"size"`
	Mode   fs.FileMode `json:"mode"`
	// Stored is false for a file recorded by hash only (too large).
	Stored bool `json:"stored"`
	// Link is a symbolic link's target (the link itself is not followed).
	Link string `json:"link,omitempty"`
}

// snapshotManifest is start/manifest.json.
type snapshotManifest struct {
	Taken     time.Time      `json:"taken"`
	Workspace string         `json:"workspace"`
	Files     []snapshotFile `json:"files"`
	// Incomplete says why files were left out (too many, too large in all).
	Incomplete string `json:"incomplete,omitempty"`
}

// takeSnapshot records the workspace ws into runDir/start, all at once:
// it is written into a temporary folder renamed into place, so a run
// folder has either a whole snapshot or none.
func takeSnapshot(ws, runDir string) error {
	final := filepath.Join(runDir, StartDir)
	if _, err := os.Stat(filepath.Join(final, "manifest.json")); err == nil {
		return nil // taken once: never retaken
	}
	tmp, err := os.MkdirTemp(runDir, "."+StartDir+"-*")
	if err != nil {
		return fmt.Errorf("snapshot of the workspace: %w", err)
	}
	defer os.RemoveAll(tmp) // gone after the rename; left only on failure
	objects := filepath.Join(tmp, "objects")
	if err := os.Mkdir(objects, 0o755); err != nil {
		return fmt.Errorf("snapshot of the workspace: %w", err)
	}
	m := snapshotManifest{Taken: time.Now().UTC(), Workspace: ws, Files: []snapshotFile{}}
	var total int64
	runs := absPath(filepath.Dir(runDir))
	err = filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: the run cannot read it either
		}
		if d.IsDir() {
			if p != ws && (skipDir(d.Name()) || p == runs) {
				return filepath.SkipDir // a runs folder inside the workspace is not the project's
			}
			return nil
		}
		if len(m.Files) >= snapshotMaxFiles {
			m.Incomplete = fmt.Sprintf("more than %d files: the rest are not recorded", snapshotMaxFiles)
			return filepath.SkipAll
		}
		rel, _ := filepath.Rel(ws, p)
		f := snapshotFile{Path: filepath.ToSlash(rel)}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		f.Mode = fi.Mode()
		if fi.Mode()&fs.ModeSymlink != 0 {
			f.Link, _ = os.Readlink(p)
			f.SHA256 = sum([]byte(f.Link))
			m.Files = append(m.Files, f)
			return nil
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		f.Size = fi.Size()
		store := f.Size <= snapshotMaxFile && total+f.Size <= snapshotMaxBytes
		if !store && total+f.Size > snapshotMaxBytes && m.Incomplete == "" {
			m.Incomplete = fmt.Sprintf("more than %s in all: later files are recorded by hash only", byteSize(snapshotMaxBytes))
		}
		h, err := copyObject(p, objects, store)
		if err != nil {
			return err
		}
		f.SHA256, f.Stored = h, store
		if store {
			total += f.Size
		}
		m.Files = append(m.Files, f)
		return nil
	})
	if err != nil {
		return fmt.Errorf("snapshot of the workspace %s: %w", ws, err)
	}
	b, err := json.MarshalIndent(&m, "", " ")
	if err != nil {
		return fmt.Errorf("snapshot of the workspace: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(tmp, "manifest.json"), append(b, '\n')); err != nil {
		return fmt.Errorf("snapshot of the workspace: %w", err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return fmt.Errorf("snapshot of the workspace: %w", err)
	}
	syncDir(runDir)
	return nil
}

// copyObject hashes the file at p and, when store, copies it to
// objects/<sha256> (once per content).
func copyObject(p, objects string, store bool) (string, error) {
	src, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer src.Close()
	h := sha256.New()
	if !store {
		if _, err := io.Copy(h, src); err != nil {
			return "", err
		}
		return hex.EncodeToString(h.Sum(nil)), nil
	}
	tmp, err := os.CreateTemp(objects, ".obj-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(io.MultiWriter(tmp, h), src); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	id := hex.EncodeToString(h.Sum(nil))
	dst := filepath.Join(objects, id)
	if _, err := os.Stat(dst); err == nil {
		return id, nil
	}
	return id, os.Rename(tmp.Name(), dst)
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func readManifest(runDir string) (*snapshotManifest, error) {
	p := filepath.Join(runDir, StartDir, "manifest.json")
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", runDir, ErrNoSnapshot)
	}
	if err != nil {
		return nil, err
	}
	var m snapshotManifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, invalidInput(fmt.Errorf("%s: damaged snapshot manifest: %w", p, err))
	}
	return &m, nil
}

// FileChange is one file the run created, changed or deleted, against the
// workspace as the run started.
type FileChange struct {
	Path string `json:"path"`
	// Status is "added", "modified" or "deleted".
	Status string `json:"status"`
	// Added and Removed count lines (0 for a binary or large file).
	Added   int `json:"added"`
	Removed int `json:"removed"`
	// Binary is set when the lines were not compared: a binary file, one
	// larger than 2 MiB, or a large start file recorded by hash only.
	Binary bool `json:"binary,omitempty"`
	// Note says why the lines are not shown, or what else changed (the
	// final newline, the file mode).
	Note string `json:"note,omitempty"`
}

// Changeset is the difference between the workspace as a run started and
// as it is now.
type Changeset struct {
	RunID     string       `json:"run_id"`
	Workspace string       `json:"workspace"`
	Files     []FileChange `json:"files"`
	// Incomplete is set when the starting snapshot left files out.
	Incomplete string `json:"incomplete,omitempty"`
	// diffs are the files' unified diffs, by path.
	diffs map[string]string
}

// Unified is the whole changeset as one unified diff (git's a/ b/
// prefixes, /dev/null for a created or deleted file), files in path order.
func (c *Changeset) Unified() string {
	var b strings.Builder
	for _, f := range c.Files {
		fmt.Fprintf(&b, "diff --trio a/%s b/%s\n", f.Path, f.Path)
		u := c.diffs[f.Path]
		switch {
		case f.Binary || u == "":
			if f.Note != "" {
				fmt.Fprintf(&b, "# %s: %s\n", f.Status, f.Note)
			}
		default:
			if f.Note != "" {
				fmt.Fprintf(&b, "# %s\n", f.Note)
			}
			b.WriteString(u)
		}
	}
	return b.String()
}

// FileDiff is one file's unified diff ("" for a binary or large file, or
// a path the changeset does not hold).
func (c *Changeset) FileDiff(path string) string { return c.diffs[path] }

// Totals are the lines added and removed over every file.
func (c *Changeset) Totals() (added, removed int) {
	for _, f := range c.Files {
		added += f.Added
		removed += f.Removed
	}
	return added, removed
}

// Diff compares the workspace of the run in runDir, as it is now, with the
// snapshot taken when the run started (see StartDir). It changes nothing.
// A run folder without a snapshot (made by an older version) is an error
// wrapping ErrNoSnapshot.
func Diff(runDir string) (*Changeset, error) {
	st, err := readState(runDir)
	if err != nil {
		return nil, fmt.Errorf("agent: diff: %w", err)
	}
	c, err := diffWorkspace(runDir, st.Workspace)
	if err != nil {
		return nil, fmt.Errorf("agent: diff: %w", err)
	}
	c.RunID = st.RunID
	return c, nil
}

func diffWorkspace(runDir, ws string) (*Changeset, error) {
	m, err := readManifest(runDir)
	if err != nil {
		return nil, err
	}
	c := &Changeset{Workspace: ws, Incomplete: m.Incomplete, Files: []FileChange{}, diffs: map[string]string{}}
	before := map[string]snapshotFile{}
	for _, f := range m.Files {
		before[f.Path] = f
	}
	now, err := workspaceFiles(ws, snapshotMaxFiles)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	seen := map[string]bool{}
	objects := filepath.Join(runDir, StartDir, "objects")
	runs := ""
	if rel, err := filepath.Rel(ws, absPath(filepath.Dir(runDir))); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
		runs = filepath.ToSlash(rel) + "/"
	}
	for _, p := range now {
		if runs != "" && strings.HasPrefix(p, runs) {
			continue // a runs folder inside the workspace is not the project's
		}
		seen[p] = true
		full := filepath.Join(ws, filepath.FromSlash(p))
		fi, err := os.Lstat(full)
		if err != nil {
			continue
		}
		b, ok := before[p]
		var cur []byte
		var curSum string
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(full)
			cur, curSum = []byte(l), sum([]byte(l))
		case !fi.Mode().IsRegular():
			continue
		case fi.Size() > diffMaxFile:
			h, err := copyObject(full, "", false)
			if err != nil {
				continue
			}
			curSum = h
		default:
			if cur, err = os.ReadFile(full); err != nil {
				continue
			}
			curSum = sum(cur)
		}
		if ok && b.SHA256 == curSum {
			if b.Mode.Perm() != fi.Mode().Perm() && b.Link == "" {
				c.Files = append(c.Files, FileChange{Path: p, Status: "modified", Note: fmt.Sprintf("mode %v → %v, content unchanged", b.Mode.Perm(), fi.Mode().Perm())})
			}
			continue
		}
		fc := FileChange{Path: p, Status: "modified"}
		var old []byte
		oldKnown := true
		if !ok {
			fc.Status = "added"
		} else if b.Link != "" {
			old = []byte(b.Link)
		} else if !b.Stored {
			oldKnown = false
		} else if old, err = os.ReadFile(filepath.Join(objects, b.SHA256)); err != nil {
			return nil, fmt.Errorf("snapshot object of %s: %w", p, err)
		}
		switch {
		case !oldKnown:
			fc.Binary, fc.Note = true, "the starting file was too large to keep; only its hash is known"
		case cur == nil:
			fc.Binary, fc.Note = true, fmt.Sprintf("larger than %s: lines not compared", byteSize(diffMaxFile))
		default:
			c.diffs[p] = lineDiff(&fc, old, cur, ok)
		}
		c.Files = append(c.Files, fc)
	}
	for _, f := range m.Files {
		if seen[f.Path] {
			continue
		}
		fc := FileChange{Path: f.Path, Status: "deleted"}
		var old []byte
		switch {
		case f.Link != "":
			old = []byte(f.Link)
		case !f.Stored:
			fc.Binary, fc.Note = true, "the starting file was too large to keep"
		default:
			if old, err = os.ReadFile(filepath.Join(objects, f.SHA256)); err != nil {
				return nil, fmt.Errorf("snapshot object of %s: %w", f.Path, err)
			}
		}
		if !fc.Binary {
			c.diffs[f.Path] = lineDiff(&fc, old, nil, true)
		}
		c.Files = append(c.Files, fc)
	}
	slices.SortFunc(c.Files, func(a, b FileChange) int { return strings.Compare(a.Path, b.Path) })
	return c, nil
}

// lineDiff returns the file's unified diff and fills in fc's line counts;
// existed says the file was in the starting workspace.
func lineDiff(fc *FileChange, old, cur []byte, existed bool) string {
	if isBinary(old) || isBinary(cur) {
		fc.Binary, fc.Note = true, "binary file"
		return ""
	}
	from, to := "a/"+fc.Path, "b/"+fc.Path
	if !existed {
		from = "/dev/null"
	}
	if fc.Status == "deleted" {
		to = "/dev/null"
	}
	a, aNL := splitLines(old)
	b, bNL := splitLines(cur)
	u, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: a, B: b, FromFile: from, ToFile: to, Context: 3})
	if err != nil {
		fc.Binary, fc.Note = true, "diff failed: "+err.Error()
		return ""
	}
	for _, l := range strings.SplitAfter(u, "\n") {
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
		case strings.HasPrefix(l, "+"):
			fc.Added++
		case strings.HasPrefix(l, "-"):
			fc.Removed++
		}
	}
	if aNL != bNL && len(old) > 0 && len(cur) > 0 {
		fc.Note = "the final newline was " + map[bool]string{true: "added", false: "removed"}[bNL]
	}
	if u == "" && fc.Note == "" {
		fc.Note = "content differs"
	}
	return u
}

// splitLines cuts text into lines that each end in "\n" (as difflib
// wants); nl says whether the text ended in one.
func splitLines(b []byte) (lines []string, nl bool) {
	if len(b) == 0 {
		return nil, false
	}
	s := string(b)
	nl = strings.HasSuffix(s, "\n")
	if !nl {
		s += "\n"
	}
	lines = strings.SplitAfter(s, "\n")
	return lines[:len(lines)-1], nl
}

// isBinary: a NUL in the first 8000 bytes (git's rule) or not UTF-8.
func isBinary(b []byte) bool {
	head := b[:min(len(b), 8000)]
	return bytes.IndexByte(head, 0) >= 0 || !utf8.Valid(b)
}

// changesOf is the report's changeset and its unified diff, or why there
// is none.
func changesOf(runDir, ws string) (files []FileChange, note, unified string) {
	c, err := diffWorkspace(runDir, ws)
	switch {
	case errors.Is(err, ErrNoSnapshot):
		return nil, "No snapshot of the starting workspace in this run folder (made by an older version): no diff.", ""
	case err != nil:
		return nil, "The diff could not be computed: " + err.Error(), ""
	}
	if c.Incomplete != "" {
		note = "The starting snapshot is incomplete (" + c.Incomplete + "): files it left out show as added."
	}
	return c.Files, note, c.Unified()
}
