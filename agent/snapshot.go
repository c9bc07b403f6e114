package agent

import (
	"bufio"
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
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/trioagent/trio/critic"
	"github.com/trioagent/trio/policy"
)

// StartDir is the run folder's snapshot of the workspace as the run found
// it. It is taken once, when the run is created, and never again (a resume
// keeps it), so that Diff always compares with the workspace before the run
// touched it, and the Critic knows which files were the person's (never
// stray, however many).
//
// It holds two files:
//
//   - manifest-<sha256>.jsonl, named by the SHA-256 of its own bytes (a
//     reader checks it): a header line (version, time, workspace, the
//     policy's read rules), one line per workspace entry in path order, and
//     a closing line with the count, so that a cut manifest is never taken
//     for a whole one. Every file is listed by name, whatever the tree's
//     size: its size, mode, time and, where the content was read, its
//     SHA-256. A name that is not UTF-8 is kept exactly (raw, in base64)
//     and shown escaped (path).
//   - pack, the contents kept, each distinct content once, at the offset its
//     entries name.
//
// Content is read only where the policy lets the run read the path and the
// file is at most 8 MiB: a file the policy denies (paths.deny, or outside
// paths.allow) or a larger one is recorded by name, size and time, and
// never opened. At most 256 MiB of contents are kept; later files are
// recorded by hash. Folders that are not the project's (.cache,
// node_modules, __pycache__) are listed as folders, not walked; .git is
// left out.
//
// A snapshot rather than git: it works for every workspace (most are not
// repositories, and the shipped policies hide .git from the run), and it
// never writes into the user's repository (no commit, stash or index).
// Run folders of older versions hold manifest.json and objects/<sha256>;
// Diff still reads them.
const StartDir = "start"

// Limits of the starting snapshot: a file larger than snapshotMaxFile is
// recorded by name, size and time only; once snapshotMaxBytes of contents
// are kept, later files are recorded by hash only.
const (
	snapshotMaxFile  = 8 << 20
	snapshotMaxBytes = 256 << 20
	snapshotVersion  = 2
	packFile         = "pack"
	manifestPrefix   = "manifest-"
	manifestSuffix   = ".jsonl"
)

// diffMaxFile is the largest file whose lines Diff compares; beyond it a
// change is reported without lines.
const diffMaxFile = 2 << 20

// Why an entry's content is not known (snapshotFile.Only).
const (
	onlyDenied     = "denied"     // the policy denies reading it
	onlyLarge      = "large"      // larger than snapshotMaxFile
	onlyUnreadable = "unreadable" // Trio could not open it
	onlyFolder     = "folder"     // a folder that is not the project's, not walked
	onlySkip       = "-"          // not recorded (never written)
)

// snapshotFile is one entry of the starting workspace.
type snapshotFile struct {
	// Path is the slash-separated name, byte for byte (it may not be UTF-8).
	Path   string
	SHA256 string
	Size   int64
	Mode   fs.FileMode
	// MTime is the modification time in Unix nanoseconds: what tells a
	// change to a file recorded by name only.
	MTime int64
	// Stored says the content is in the pack, at Off.
	Stored bool
	Off    int64
	// Link is a symbolic link's target (the link itself is not followed).
	Link string
	// Only says why the content is not known ("" when it is).
	Only string
}

// fileWire is snapshotFile as a manifest line. Version 1 manifests wrote
// path, sha256, size, mode, stored and link the same way.
type fileWire struct {
	Path    string      `json:"path"`
	Raw     []byte      `json:"raw,omitempty"`
	SHA256  string      `json:"sha256,omitempty"`
	Size    int64       `json:"size,omitempty"`
	Mode    fs.FileMode `json:"mode"`
	MTime   int64       `json:"mtime,omitempty"`
	Stored  bool        `json:"stored,omitempty"`
	Off     int64       `json:"off,omitempty"`
	Link    string      `json:"link,omitempty"`
	LinkRaw []byte      `json:"link_raw,omitempty"`
	Only    string      `json:"only,omitempty"`
}

func (f snapshotFile) MarshalJSON() ([]byte, error) {
	w := fileWire{Path: showPath(f.Path), SHA256: f.SHA256, Size: f.Size, Mode: f.Mode, MTime: f.MTime,
		Stored: f.Stored, Off: f.Off, Link: showPath(f.Link), Only: f.Only}
	if !utf8.ValidString(f.Path) {
		w.Raw = []byte(f.Path)
	}
	if !utf8.ValidString(f.Link) {
		w.LinkRaw = []byte(f.Link)
	}
	return json.Marshal(w)
}

func (f *snapshotFile) UnmarshalJSON(b []byte) error {
	var w fileWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*f = snapshotFile{Path: w.Path, SHA256: w.SHA256, Size: w.Size, Mode: w.Mode, MTime: w.MTime,
		Stored: w.Stored, Off: w.Off, Link: w.Link, Only: w.Only}
	if w.Raw != nil {
		f.Path = string(w.Raw)
	}
	if w.LinkRaw != nil {
		f.Link = string(w.LinkRaw)
	}
	return nil
}

// snapshotHeader is the manifest's first line.
type snapshotHeader struct {
	Version   int              `json:"version"`
	Taken     time.Time        `json:"taken"`
	Workspace string           `json:"workspace"`
	Read      policy.ReadRules `json:"read"`
}

// snapshotEnd is the manifest's last line.
type snapshotEnd struct {
	End   bool `json:"end"`
	Files int  `json:"files"`
}

// snapshotManifest is the snapshot as read back.
type snapshotManifest struct {
	snapshotHeader
	Files []snapshotFile `json:"files"`
	// Total counts the entries (Files may hold fewer: readManifestN).
	Total int `json:"-"`
	// Incomplete says why files were left out (version 1 only).
	Incomplete string `json:"incomplete,omitempty"`
	dir        string // the start folder
	denied     *policy.ReadFilter
}

// showPath is p as shown to people and in JSON: the same when it is UTF-8,
// otherwise with each byte that is not written \xNN.
func showPath(p string) string {
	if utf8.ValidString(p) {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); {
		r, n := utf8.DecodeRuneInString(p[i:])
		if r == utf8.RuneError && n <= 1 {
			fmt.Fprintf(&b, `\x%02x`, p[i])
			i++
			continue
		}
		b.WriteString(p[i : i+n])
		i += n
	}
	return b.String()
}

// walkWorkspace calls fn for every entry of the workspace ws that is part
// of the project, in path order: each non-folder, and each folder that is
// not the project's (skipDir, folder set), which it does not enter. .git
// and the runs folder runs (an absolute path, "" for none) are left out;
// so are folders Trio cannot read (the run cannot read them either). rel
// is slash-separated, byte for byte.
func walkWorkspace(ws, runs string, fn func(p, rel string, d fs.DirEntry, folder bool) error) error {
	ws = filepath.Clean(ws)
	prefix := ws + string(filepath.Separator)
	return filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if p == ws {
			return err
		}
		if err != nil {
			return nil
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, prefix))
		if d.IsDir() {
			switch {
			case p == runs || d.Name() == ".git":
				return filepath.SkipDir
			case skipDir(d.Name()):
				if err := fn(p, rel, d, true); err != nil {
					return err
				}
				return filepath.SkipDir
			}
			return nil
		}
		return fn(p, rel, d, false)
	})
}

// errTooLarge: the file is larger than the limit it was read with.
var errTooLarge = errors.New("larger than the limit")

// errNotRegular: what was opened is not a regular file.
var errNotRegular = errors.New("not a regular file")

// statInfo is what a look at a file tells of it without its content.
type statInfo struct {
	Size  int64
	Mode  fs.FileMode
	MTime int64 // Unix nanoseconds
}

func statOf(fi fs.FileInfo) statInfo {
	return statInfo{Size: fi.Size(), Mode: fi.Mode(), MTime: fi.ModTime().UnixNano()}
}

// statOfSys is statOf for an fstat of a regular file: the same mode bits
// os.Lstat gives.
func statOfSys(s *syscall.Stat_t) statInfo {
	m := fs.FileMode(s.Mode & 0o777)
	if s.Mode&syscall.S_IFMT != syscall.S_IFREG {
		m |= fs.ModeIrregular
	}
	if s.Mode&syscall.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if s.Mode&syscall.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if s.Mode&syscall.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return statInfo{Size: s.Size, Mode: m, MTime: s.Mtim.Sec*1e9 + s.Mtim.Nsec}
}

// readBounded reads the regular file at p into buf (grown as needed), at
// most limit bytes, and says what fstat told of it: a larger file is
// errTooLarge, anything else errNotRegular (neither read). It follows no
// symbolic link and never blocks on a FIFO put in the file's place.
func readBounded(p string, limit int64, buf []byte) ([]byte, statInfo, error) {
	var st statInfo
	fd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	for err == syscall.EINTR {
		fd, err = syscall.Open(p, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, st, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	defer syscall.Close(fd)
	var s syscall.Stat_t
	if err := syscall.Fstat(fd, &s); err != nil {
		return nil, st, &fs.PathError{Op: "fstat", Path: p, Err: err}
	}
	st = statOfSys(&s)
	switch {
	case !st.Mode.IsRegular():
		return nil, st, errNotRegular
	case st.Size > limit:
		return nil, st, errTooLarge
	}
	if int64(cap(buf)) < st.Size+1 {
		buf = make([]byte, 0, st.Size+512)
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return nil, st, &fs.PathError{Op: "read", Path: p, Err: err}
		case n == 0:
			st.Size = int64(len(buf))
			return buf, st, nil
		}
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, st, errTooLarge
		}
	}
}

// scanned is one workspace entry as walkWorkspace found it.
type scanned struct {
	p, rel string
	folder bool
	d      fs.DirEntry
}

// scanWorkspace lists the workspace's entries (see walkWorkspace).
func scanWorkspace(ws, runs string) ([]scanned, error) {
	var out []scanned
	err := walkWorkspace(ws, runs, func(p, rel string, d fs.DirEntry, folder bool) error {
		out = append(out, scanned{p: p, rel: rel, folder: folder, d: d})
		return nil
	})
	return out, err
}

// probe is what one look at a workspace entry found.
type probe struct {
	st statInfo
	// gone: the entry was not there any more.
	gone   bool
	denied bool   // the policy denies reading it: not opened
	link   string // a symbolic link's target
	sum    string // the content's SHA-256, when it was read
	// err says why a regular file's content was not read (errTooLarge,
	// or it could not be opened).
	err error
}

// probeAll looks at every entry, several at once (reading many small
// files is mostly waiting on system calls, which a few goroutines overlap
// on any number of cores): its size, mode and time, and for a regular
// file of at most snapshotMaxFile bytes the policy lets the run read, its
// content's hash. got, when not nil, receives each content read (from
// several goroutines at once; data is valid until it returns); its first
// error stops the rest and is returned.
func probeAll(entries []scanned, denied *policy.ReadFilter, got func(i int, data []byte, h [32]byte) error) ([]probe, error) {
	out := make([]probe, len(entries))
	var (
		next   atomic.Int64
		failed atomic.Bool
		first  error
		once   sync.Once
		wg     sync.WaitGroup
	)
	for range min(8, max(len(entries), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= len(entries) {
					return
				}
				e, pr := entries[i], &out[i]
				if e.folder {
					continue
				}
				pr.denied = denied.Denied(e.rel)
				if e.d.Type().IsRegular() && !pr.denied {
					data, st, err := readBounded(e.p, snapshotMaxFile, buf)
					switch {
					case err == nil:
						buf, pr.st = data, st
						h := sha256.Sum256(data)
						pr.sum = hex.EncodeToString(h[:])
						if got != nil {
							if err := got(i, data, h); err != nil {
								once.Do(func() { first = err })
								failed.Store(true)
								return
							}
						}
						continue
					case errors.Is(err, errTooLarge):
						pr.st, pr.err = st, err
						continue
					case !errors.Is(err, errNotRegular) && !errors.Is(err, syscall.ELOOP):
						pr.err = err // unreadable (or gone): lstat tells which
					}
				}
				fi, err := os.Lstat(e.p)
				if err != nil {
					pr.gone = true
					continue
				}
				pr.st = statOf(fi)
				switch {
				case pr.denied:
				case fi.Mode()&fs.ModeSymlink != 0:
					pr.link, _ = os.Readlink(e.p)
					pr.sum = sum([]byte(pr.link))
				case fi.Mode().IsRegular() && pr.err == nil:
					pr.err = errNotRegular // was not one when opened: changing now
				}
			}
		}()
	}
	wg.Wait()
	return out, first
}

// takeSnapshot records the workspace ws into runDir/start (see StartDir),
// all at once: it is written into a temporary folder renamed into place, so
// a run folder has either a whole snapshot or none. read are the policy's
// rules for reading paths: what they deny is recorded by name only.
func takeSnapshot(ws, runDir string, read policy.ReadRules) error {
	final := filepath.Join(runDir, StartDir)
	if _, err := os.Stat(final); err == nil {
		return nil // taken once: never retaken
	}
	fail := func(err error) error { return fmt.Errorf("snapshot of the workspace %s: %w", showPath(ws), err) }
	denied, err := read.Compile()
	if err != nil {
		return fail(err)
	}
	entries, err := scanWorkspace(ws, absPath(filepath.Dir(runDir)))
	if err != nil {
		return fail(err)
	}
	tmp, err := os.MkdirTemp(runDir, "."+StartDir+"-*")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(tmp) // gone after the rename; left only on failure
	pack, err := os.Create(filepath.Join(tmp, packFile))
	if err != nil {
		return fail(err)
	}
	defer pack.Close()
	// The contents, several files at once; each distinct content is kept
	// once, while there is room.
	var (
		mu         sync.Mutex
		pw         = bufio.NewWriterSize(pack, 1<<20)
		off, total int64
		kept       = map[[32]byte]int64{}
		offs       = make([]int64, len(entries)) // each content's offset + 1 (0: not kept)
	)
	probes, err := probeAll(entries, denied, func(i int, data []byte, h [32]byte) error {
		mu.Lock()
		defer mu.Unlock()
		if o, ok := kept[h]; ok {
			offs[i] = o + 1
		} else if n := int64(len(data)); total+n <= snapshotMaxBytes {
			if _, err := pw.Write(data); err != nil {
				return err
			}
			kept[h], offs[i] = off, off+1
			off += n
			total += n
		}
		return nil
	})
	if err != nil {
		return fail(err)
	}
	if err := pw.Flush(); err != nil {
		return fail(err)
	}
	if err := pack.Sync(); err != nil {
		return fail(err)
	}
	// The manifest, in path order, named by its own hash.
	var mb bytes.Buffer
	enc := json.NewEncoder(&mb)
	if err := enc.Encode(snapshotHeader{Version: snapshotVersion, Taken: time.Now().UTC(), Workspace: ws, Read: read}); err != nil {
		return fail(err)
	}
	count := 0
	for i, e := range entries {
		pr := probes[i]
		f := snapshotFile{Path: e.rel, Size: pr.st.Size, Mode: pr.st.Mode, MTime: pr.st.MTime}
		switch {
		case e.folder:
			f.Mode, f.Only = fs.ModeDir|0o755, onlyFolder
		case pr.gone:
			continue
		case pr.denied:
			f.Only = onlyDenied
		case pr.link != "" || pr.st.Mode&fs.ModeSymlink != 0:
			f.Link, f.SHA256 = pr.link, pr.sum
		case errors.Is(pr.err, errTooLarge):
			f.Only = onlyLarge
		case !pr.st.Mode.IsRegular():
			continue // a FIFO, socket or device: not the project's
		case pr.err != nil:
			f.Only = onlyUnreadable
		default:
			f.SHA256 = pr.sum
			f.Stored, f.Off = offs[i] > 0, max(offs[i]-1, 0)
		}
		if err := enc.Encode(f); err != nil {
			return fail(err)
		}
		count++
	}
	if err := enc.Encode(snapshotEnd{End: true, Files: count}); err != nil {
		return fail(err)
	}
	name := manifestPrefix + sum(mb.Bytes()) + manifestSuffix
	if err := writeFileAtomic(filepath.Join(tmp, name), mb.Bytes()); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return fail(err)
	}
	syncDir(runDir)
	return nil
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// readManifest reads the run's start snapshot back, checking that the
// manifest is the one its name promises and whole.
func readManifest(runDir string) (*snapshotManifest, error) {
	return readManifestN(runDir, -1)
}

// readManifestN is readManifest keeping at most limit entries (all when
// limit < 0); Total counts them all, and the whole manifest is checked.
func readManifestN(runDir string, limit int) (*snapshotManifest, error) {
	dir := filepath.Join(runDir, StartDir)
	names, _ := filepath.Glob(filepath.Join(dir, manifestPrefix+"*"+manifestSuffix))
	if len(names) == 0 {
		return readManifestV1(dir)
	}
	if len(names) > 1 {
		return nil, invalidInput(fmt.Errorf("%s: %d manifests, want one", dir, len(names)))
	}
	p := names[0]
	damaged := func(format string, a ...any) error {
		return invalidInput(fmt.Errorf("%s: damaged snapshot manifest: %s", p, fmt.Sprintf(format, a...)))
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	sc := bufio.NewScanner(io.TeeReader(f, h))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	m := &snapshotManifest{dir: dir, Files: []snapshotFile{}}
	var end *snapshotEnd
	for line := 1; sc.Scan(); line++ {
		b := sc.Bytes()
		switch {
		case end != nil:
			return nil, damaged("line %d after the closing line", line)
		case line == 1:
			if err := json.Unmarshal(b, &m.snapshotHeader); err != nil || m.Version != snapshotVersion {
				return nil, damaged("line 1 is not a version %d header", snapshotVersion)
			}
		case bytes.HasPrefix(b, []byte(`{"end":`)):
			end = &snapshotEnd{}
			if err := json.Unmarshal(b, end); err != nil {
				return nil, damaged("line %d: %v", line, err)
			}
		case limit >= 0 && len(m.Files) >= limit:
			m.Total++
		default:
			var e snapshotFile
			if err := json.Unmarshal(b, &e); err != nil {
				return nil, damaged("line %d: %v", line, err)
			}
			m.Files = append(m.Files, e)
			m.Total++
		}
	}
	if err := sc.Err(); err != nil {
		return nil, damaged("%v", err)
	}
	if end == nil || end.Files != m.Total {
		return nil, damaged("cut short (no closing line, or a count that differs)")
	}
	if got := hex.EncodeToString(h.Sum(nil)); filepath.Base(p) != manifestPrefix+got+manifestSuffix {
		return nil, damaged("its content's SHA-256 is %s", got)
	}
	if m.denied, err = m.Read.Compile(); err != nil {
		return nil, damaged("%v", err)
	}
	return m, nil
}

// readManifestV1 reads an older run folder's start/manifest.json.
func readManifestV1(dir string) (*snapshotManifest, error) {
	p := filepath.Join(dir, "manifest.json")
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", filepath.Dir(dir), ErrNoSnapshot)
	}
	if err != nil {
		return nil, err
	}
	var m snapshotManifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, invalidInput(fmt.Errorf("%s: damaged snapshot manifest: %w", p, err))
	}
	m.dir, m.Version, m.Total = dir, 1, len(m.Files)
	m.denied, _ = policy.ReadRules{}.Compile()
	return &m, nil
}

// content is a kept file's starting content, checked against its hash.
func (m *snapshotManifest) content(f snapshotFile) ([]byte, error) {
	var b []byte
	var err error
	if m.Version == 1 {
		b, err = os.ReadFile(filepath.Join(m.dir, "objects", f.SHA256))
	} else {
		var pack *os.File
		if pack, err = os.Open(filepath.Join(m.dir, packFile)); err == nil {
			b = make([]byte, f.Size)
			_, err = pack.ReadAt(b, f.Off)
			pack.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("snapshot content of %s: %w", showPath(f.Path), err)
	}
	if sum(b) != f.SHA256 {
		return nil, fmt.Errorf("snapshot content of %s: damaged (its SHA-256 differs from the manifest's)", showPath(f.Path))
	}
	return b, nil
}

// paths are the starting workspace's entries, files and the folders not
// walked: what the Critic never calls stray.
func (m *snapshotManifest) paths() []string {
	out := make([]string, len(m.Files))
	for i, f := range m.Files {
		out[i] = f.Path
	}
	return out
}

// listing is the starting workspace for the Planner: at most max names,
// shown escaped, and how many more there are.
func (m *snapshotManifest) listing(max int) string {
	var b strings.Builder
	n := 0
	for _, f := range m.Files[:min(max, len(m.Files))] {
		b.WriteString(showPath(f.Path))
		if f.Only == onlyFolder {
			b.WriteString("/ (its files not listed)")
		}
		b.WriteByte('\n')
		n++
	}
	if m.Total > n {
		fmt.Fprintf(&b, "… and %d more (not listed)\n", m.Total-n)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// FileChange is one file the run created, changed or deleted, against the
// workspace as the run started.
type FileChange struct {
	// Path is the workspace-relative path, with each byte of a name that
	// is not UTF-8 written \xNN.
	Path string `json:"path"`
	// Status is "added", "modified" or "deleted".
	Status string `json:"status"`
	// Added and Removed count lines (0 for a binary or large file).
	Added   int `json:"added"`
	Removed int `json:"removed"`
	// Binary is set when the lines were not compared: a binary file, one
	// larger than 2 MiB, a start file recorded by name or hash only, or a
	// path the policy denies (its content is never read).
	Binary bool `json:"binary,omitempty"`
	// Note says why the lines are not shown, or what else changed (the
	// final newline, the file mode).
	Note string `json:"note,omitempty"`
	// raw is the path byte for byte; denied says the policy denies
	// reading it.
	raw    string
	denied bool
}

// Changeset is the difference between the workspace as a run started and
// as it is now.
type Changeset struct {
	RunID     string       `json:"run_id"`
	Workspace string       `json:"workspace"`
	Files     []FileChange `json:"files"`
	// Incomplete is set when the starting snapshot left files out (run
	// folders of older versions).
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
// snapshot taken when the run started (see StartDir). It changes nothing,
// and it never reads a path the run's policy denied: such a file's change
// is told by its size and time. A run folder without a snapshot (made by
// an older version) is an error wrapping ErrNoSnapshot.
func Diff(runDir string) (*Changeset, error) {
	st, err := readState(runDir)
	if err != nil {
		return nil, fmt.Errorf("agent: diff: %w", err)
	}
	c, err := diffWorkspace(runDir, st.Workspace, true)
	if err != nil {
		return nil, fmt.Errorf("agent: diff: %w", err)
	}
	c.RunID = st.RunID
	return c, nil
}

// sameStat: a file recorded by name only is unchanged when its size, time
// and mode are.
func sameStat(b *snapshotFile, st statInfo) bool {
	return b.Size == st.Size && b.MTime == st.MTime && b.Mode == st.Mode
}

// unknownNote says why a start file's content is not known.
func unknownNote(why string) string {
	switch why {
	case onlyDenied:
		return "denied by the policy: content not read"
	case onlyLarge:
		return fmt.Sprintf("larger than %s: content not compared", byteSize(snapshotMaxFile))
	}
	return "the starting file could not be read: content not compared"
}

// diffWorkspace compares the workspace ws with the run's start snapshot;
// with lines false it only tells which files changed (no line counts, no
// diffs, no start content read).
func diffWorkspace(runDir, ws string, lines bool) (*Changeset, error) {
	m, err := readManifest(runDir)
	if err != nil {
		return nil, err
	}
	c := &Changeset{Workspace: ws, Incomplete: m.Incomplete, Files: []FileChange{}, diffs: map[string]string{}}
	before := make(map[string]int, len(m.Files))
	for i, f := range m.Files {
		before[f.Path] = i
	}
	seen := make([]bool, len(m.Files))
	entries, err := scanWorkspace(ws, absPath(filepath.Dir(runDir)))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	// The contents' hashes, several files at once; what the policy denies
	// and what is larger than the snapshot's limit is never read.
	probes, err := probeAll(entries, m.denied, nil)
	if err != nil {
		return nil, err
	}
	for ei, e := range entries {
		i, ok := before[e.rel]
		var b *snapshotFile
		if ok {
			b = &m.Files[i]
			seen[i] = true
			if b.Only == onlyFolder != e.folder {
				ok, seen[i] = false, false // a file where a folder was, or the reverse
			}
		}
		pr := probes[ei]
		if e.folder || pr.gone {
			continue // a folder that is not the project's is not compared
		}
		st := pr.st
		fc := FileChange{Path: showPath(e.rel), raw: e.rel, Status: "modified"}
		if !ok {
			fc.Status = "added"
		}
		add := func(binary bool, note string) {
			fc.Binary, fc.Note = binary, note
			c.Files = append(c.Files, fc)
		}
		var cur []byte
		switch {
		case pr.denied:
			fc.denied = true
			if !ok || !sameStat(b, st) {
				add(true, unknownNote(onlyDenied))
			}
			continue
		case st.Mode&fs.ModeSymlink != 0:
			cur = []byte(pr.link)
		case errors.Is(pr.err, errTooLarge):
			if !ok || !sameStat(b, st) {
				add(true, unknownNote(onlyLarge))
			}
			continue
		case !st.Mode.IsRegular() || pr.err != nil:
			continue // not a file, or unreadable now: nothing to compare
		}
		switch {
		case ok && b.Only != "":
			if !sameStat(b, st) {
				add(true, unknownNote(b.Only))
			}
			continue
		case ok && b.SHA256 == pr.sum:
			if b.Mode.Perm() != st.Mode.Perm() && b.Link == "" {
				add(false, fmt.Sprintf("mode %v → %v, content unchanged", b.Mode.Perm(), st.Mode.Perm()))
			}
			continue
		case !lines:
			add(false, "")
			continue
		}
		var old []byte
		switch {
		case !ok:
		case b.Link != "":
			old = []byte(b.Link)
		case !b.Stored:
			add(true, "the starting file was not kept (the snapshot's room was used up); only its hash is known")
			continue
		default:
			if old, err = m.content(*b); err != nil {
				return nil, err
			}
		}
		if cur == nil {
			cur, _, err = readBounded(e.p, diffMaxFile, nil)
			switch {
			case errors.Is(err, errTooLarge):
				add(true, fmt.Sprintf("larger than %s: lines not compared", byteSize(diffMaxFile)))
				continue
			case err != nil:
				continue
			}
		}
		c.diffs[fc.Path] = lineDiff(&fc, old, cur, ok)
		c.Files = append(c.Files, fc)
	}
	for i := range m.Files {
		f := &m.Files[i]
		if seen[i] || f.Only == onlyFolder {
			continue
		}
		fc := FileChange{Path: showPath(f.Path), raw: f.Path, Status: "deleted", denied: f.Only == onlyDenied}
		var old []byte
		switch {
		case f.Only != "":
			fc.Binary, fc.Note = true, unknownNote(f.Only)
		case f.Link != "":
			old = []byte(f.Link)
		case !f.Stored:
			fc.Binary, fc.Note = true, "the starting file was not kept (the snapshot's room was used up)"
		case lines:
			if old, err = m.content(*f); err != nil {
				return nil, err
			}
		}
		if lines && !fc.Binary {
			c.diffs[fc.Path] = lineDiff(&fc, old, nil, true)
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

// maxReportChanges bounds the changes report.json lists (trio diff and Diff
// give them all; report.md cuts the diff at reportDiffMax).
const maxReportChanges = 1000

// changesOf is the report's changeset and its unified diff, or why there
// is none. The list is bounded, so that report.json stays small whatever
// the run did to the tree.
func changesOf(runDir, ws string) (files []FileChange, note, unified string) {
	c, err := diffWorkspace(runDir, ws, true)
	switch {
	case errors.Is(err, ErrNoSnapshot):
		return nil, "No snapshot of the starting workspace in this run folder (made by an older version): no diff.", ""
	case err != nil:
		return nil, "The diff could not be computed: " + err.Error(), ""
	}
	if c.Incomplete != "" {
		note = "The starting snapshot is incomplete (" + c.Incomplete + "): files it left out show as added."
	}
	unified = c.Unified()
	if n := len(c.Files); n > maxReportChanges {
		note = strings.TrimSpace(note + fmt.Sprintf(" %d files changed; the first %d are listed (trio diff lists them all).", n, maxReportChanges))
		c.Files = c.Files[:maxReportChanges]
	}
	// The report holds what report.json holds: a report read back equals
	// the one returned.
	for i := range c.Files {
		c.Files[i].raw, c.Files[i].denied = "", false
	}
	return c.Files, note, unified
}

// changedFiles lists the files the run created, changed or deleted, for
// the reviewer: by hash, without lines, and without the paths the policy
// denies (their content never goes to a model).
func changedFiles(runDir, ws string) ([]critic.ChangedFile, error) {
	c, err := diffWorkspace(runDir, ws, false)
	if err != nil {
		return nil, err
	}
	out := make([]critic.ChangedFile, 0, len(c.Files))
	for _, f := range c.Files {
		if !f.denied && (f.Status != "modified" || !strings.HasPrefix(f.Note, "mode ")) {
			out = append(out, critic.ChangedFile{Path: f.raw, Status: f.Status})
		}
	}
	return out, nil
}

// startListing is the Planner's view of the starting workspace: the start
// snapshot's names (at most 2,000, and how many more), or, in a run folder
// of an older version, the workspace's files.
func (r *run) startListing() (string, error) {
	m, err := readManifestN(r.dir, 2000)
	if errors.Is(err, ErrNoSnapshot) {
		files, err := workspaceFiles(r.ws.Dir, 2000)
		return strings.Join(files, "\n"), err
	}
	if err != nil {
		return "", err
	}
	return m.listing(2000), nil
}

// baselineOptions tell the Critic what the workspace held before the run:
// every entry of the start snapshot is never stray, and the reviewer's
// change list is the snapshot's diff. A run folder of an older version
// uses the checkpoint's lists instead.
func (r *run) baselineOptions() ([]critic.Option, error) {
	m, err := readManifest(r.dir)
	if errors.Is(err, ErrNoSnapshot) {
		return []critic.Option{critic.WithBaseline(r.st.Baseline...), critic.WithBaselineSums(r.st.BaselineSums)}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("agent: the start snapshot: %w", err)
	}
	dir, ws := r.dir, r.st.Workspace
	paths := m.paths()
	if m.Version == 1 {
		paths = append(paths, r.st.Baseline...) // a version 1 snapshot stopped at 20,000 files
	}
	return []critic.Option{
		critic.WithBaseline(paths...),
		critic.WithChangeList(func() ([]critic.ChangedFile, error) { return changedFiles(dir, ws) }),
	}, nil
}
