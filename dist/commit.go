package dist

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/dist/store"
	"github.com/trioagent/trio/policy"
)

const (
	// maxFile is the largest file a commit carries; a larger one fails
	// the commit, naming it.
	maxFile = 512 << 20
	// maxParts bounds the appended pieces a file is kept in before it is
	// stored whole again.
	maxParts = 64
	// headProbe bounds how far Head walks past the head hint.
	headProbe = 1 << 20
	// beginTries bounds Begin's races with sessions committing meanwhile.
	beginTries = 16
)

// Entry is one entry of a committed tree, as the start snapshot lists it:
// a file by its content's SHA-256, kept as Parts (the blobs whose
// concatenation is the content: a record file that grew by appending
// adds only its new records), a link by its target, a denied file and a
// cache folder by name only.
type Entry struct {
	// Path is slash-separated; Raw holds its exact bytes when they are
	// not UTF-8 (Path then shows them escaped).
	Path   string      `json:"path"`
	Raw    []byte      `json:"raw,omitempty"`
	Mode   fs.FileMode `json:"mode"`
	Size   int64       `json:"size,omitempty"`
	SHA256 string      `json:"sha256,omitempty"`
	Parts  []string    `json:"parts,omitempty"`
	Link   string      `json:"link,omitempty"`
	Denied bool        `json:"denied,omitempty"`
	Folder bool        `json:"folder,omitempty"`
}

func (e Entry) name() string {
	if e.Raw != nil {
		return string(e.Raw)
	}
	return e.Path
}

// Manifest is what one commit holds: the run folder's records and the
// workspace. It is stored as a blob named by the SHA-256 of its bytes.
type Manifest struct {
	Version   int     `json:"version"`
	Run       string  `json:"run"`
	Records   []Entry `json:"records"`
	Workspace []Entry `json:"workspace"`
}

// Commit is one link of a run's chain, stored at runs/<run>/commit/<seq>.
type Commit struct {
	Run   string `json:"run"`
	Seq   int    `json:"seq"`
	Epoch int64  `json:"epoch"`
	// Manifest is the SHA-256 of the manifest blob ("" before anything
	// was committed).
	Manifest string `json:"manifest,omitempty"`
	// Marker says a session started here (its manifest is its parent's).
	Marker bool      `json:"marker,omitempty"`
	Host   string    `json:"host,omitempty"`
	Time   time.Time `json:"time"`
}

func commitKey(run string, seq int) string { return fmt.Sprintf("runs/%s/commit/%010d", run, seq) }
func headKey(run string) string            { return "runs/" + run + "/head" }
func blobKey(sum string) string            { return "blobs/" + sum }

func hash(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// readCommit is commit seq of run, ErrNotFound when there is none.
func readCommit(ctx context.Context, st store.Store, run string, seq int) (*Commit, error) {
	b, err := store.ReadAll(ctx, st, commitKey(run, seq))
	if err != nil {
		return nil, err
	}
	var c Commit
	if err := json.Unmarshal(b, &c); err != nil || c.Seq != seq || c.Run != run {
		return nil, fmt.Errorf("%s: %w", commitKey(run, seq), ErrDamaged)
	}
	return &c, nil
}

// Head is the run's latest commit, nil when it has none. The head record
// is a hint (Put, possibly behind); the chain itself is what counts.
func Head(ctx context.Context, st store.Store, run string) (*Commit, error) {
	seq := 0
	if b, err := store.ReadAll(ctx, st, headKey(run)); err == nil {
		seq, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	var head *Commit
	if seq > 0 {
		c, err := readCommit(ctx, st, run, seq)
		if err != nil {
			return nil, err
		}
		head = c
	}
	for range headProbe {
		c, err := readCommit(ctx, st, run, seq+1)
		if errors.Is(err, store.ErrNotFound) {
			return head, nil
		}
		if err != nil {
			return nil, err
		}
		head, seq = c, seq+1
	}
	return nil, fmt.Errorf("dist: run %s: more than %d commits past the head record", run, headProbe)
}

// Session is one session's hold on a run: its epoch and the chain's link
// it last wrote.
type Session struct {
	st    store.Store
	run   string
	epoch int64
	host  string
	seq   int
	prev  map[string]Entry // the last commit's files, by path
	known map[string]bool  // blobs known to be stored
	stale bool
}

// Begin starts a session of run with epoch: it puts a marker commit at the
// head of the run's chain. base is the commit the session continues from
// (nil for a run with none): its content is what the session's folders
// must hold (Restore). A head with the same or a newer epoch is ErrStale.
func Begin(ctx context.Context, st store.Store, run string, epoch int64, host string) (s *Session, base *Commit, err error) {
	for range beginTries {
		head, err := Head(ctx, st, run)
		if err != nil {
			return nil, nil, err
		}
		m := Commit{Run: run, Seq: 1, Epoch: epoch, Marker: true, Host: host, Time: time.Now().UTC()}
		if head != nil {
			if head.Epoch >= epoch {
				return nil, nil, fmt.Errorf("run %s: epoch %d, but commit %d has epoch %d: %w", run, epoch, head.Seq, head.Epoch, ErrStale)
			}
			m.Seq, m.Manifest = head.Seq+1, head.Manifest
		}
		err = putJSON(ctx, st, commitKey(run, m.Seq), m)
		if errors.Is(err, store.ErrExists) {
			continue // a session committed meanwhile: look again
		}
		if err != nil {
			return nil, nil, err
		}
		s = &Session{st: st, run: run, epoch: epoch, host: host, seq: m.Seq, known: map[string]bool{}}
		if head != nil && head.Manifest != "" {
			man, err := ReadManifest(ctx, st, head.Manifest)
			if err != nil {
				return nil, nil, err
			}
			s.remember(man)
		}
		_ = st.Put(ctx, headKey(run), strings.NewReader(strconv.Itoa(m.Seq)))
		return s, head, nil
	}
	return nil, nil, fmt.Errorf("run %s: the chain kept moving while epoch %d started: %w", run, epoch, ErrStale)
}

// Epoch is the session's epoch.
func (s *Session) Epoch() int64 { return s.epoch }

// Seq is the last link of the chain the session wrote.
func (s *Session) Seq() int { return s.seq }

func (s *Session) remember(m *Manifest) {
	s.prev = map[string]Entry{}
	for _, list := range [][]Entry{m.Records, m.Workspace} {
		for _, e := range list {
			s.prev[e.name()] = e
			for _, p := range e.Parts {
				s.known[p] = true
			}
		}
	}
}

func putJSON(ctx context.Context, st store.Store, key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return st.PutIfAbsent(ctx, key, bytes.NewReader(b))
}

// putBlob stores data under its hash unless the session knows it is there.
func (s *Session) putBlob(ctx context.Context, sum string, data []byte) error {
	if s.known[sum] {
		return nil
	}
	err := s.st.PutIfAbsent(ctx, blobKey(sum), bytes.NewReader(data))
	if err != nil && !errors.Is(err, store.ErrExists) {
		return err
	}
	s.known[sum] = true
	return nil
}

// recordSkipped says which run folder entries are not committed: the
// session's own lock files and the temporary files of writes in progress
// (a resume sweeps them).
func recordSkipped(rel string) bool {
	base := path.Base(rel)
	first, _, _ := strings.Cut(rel, "/")
	return rel == agent.LockFile || strings.HasSuffix(base, ".trio-lock") ||
		strings.HasPrefix(base, ".") && strings.HasSuffix(base, ".tmp") ||
		strings.HasPrefix(first, ".new-") || strings.HasPrefix(first, ".start-") || strings.HasPrefix(first, ".restore-")
}

// Commit writes the run folder runDir and the workspace ws, as they are
// now, as the next link of the chain: each content the store lacks as a
// blob (a file that grew by appending, as the run's records do, only its
// new part), then the manifest, then the commit with the session's epoch.
// read are the policy's read rules: what they deny is listed by name,
// never copied. A link taken by another session is ErrStale, and every
// later Commit fails the same way.
func (s *Session) Commit(ctx context.Context, runDir, ws string, read policy.ReadRules) (*Commit, error) {
	if s.stale {
		return nil, fmt.Errorf("run %s, epoch %d: %w", s.run, s.epoch, ErrStale)
	}
	runDir, ws = abs(runDir), abs(ws)
	man := &Manifest{Version: 1, Run: s.run, Records: []Entry{}, Workspace: []Entry{}}
	add := func(list *[]Entry, skip func(string) bool) func(agent.TreeEntry) error {
		return func(t agent.TreeEntry) error {
			if skip != nil && skip(t.Path) {
				return nil
			}
			e := Entry{Path: t.Path, Mode: t.Mode, Link: t.Link, SHA256: t.SHA256, Denied: t.Denied, Folder: t.Folder}
			if !utf8.ValidString(t.Path) {
				e.Path, e.Raw = strings.ToValidUTF8(t.Path, "\uFFFD"), []byte(t.Path)
			}
			if !utf8.ValidString(t.Link) {
				return fmt.Errorf("%s: a link whose target is not UTF-8 is not carried", e.Path)
			}
			if t.Data != nil || (t.Mode.IsRegular() && !t.Denied) {
				e.Size = int64(len(t.Data))
				parts, err := s.partsOf(ctx, t.Path, t.Data, t.SHA256)
				if err != nil {
					return err
				}
				e.Parts = parts
			}
			*list = append(*list, e)
			return nil
		}
	}
	skipRecords := ""
	if inside(ws, runDir) {
		skipRecords = ws
	}
	if err := agent.WalkTree(runDir, skipRecords, policy.ReadRules{}, maxFile, add(&man.Records, recordSkipped)); err != nil {
		return nil, fmt.Errorf("dist: commit the run folder %s: %w", runDir, err)
	}
	if err := agent.WalkTree(ws, filepath.Dir(runDir), read, maxFile, add(&man.Workspace, nil)); err != nil {
		return nil, fmt.Errorf("dist: commit the workspace %s: %w", ws, err)
	}
	mb, err := json.Marshal(man)
	if err != nil {
		return nil, err
	}
	msum := hash(mb)
	if err := s.putBlob(ctx, msum, mb); err != nil {
		return nil, fmt.Errorf("dist: commit: %w", err)
	}
	c := Commit{Run: s.run, Seq: s.seq + 1, Epoch: s.epoch, Manifest: msum, Host: s.host, Time: time.Now().UTC()}
	err = putJSON(ctx, s.st, commitKey(s.run, c.Seq), c)
	if errors.Is(err, store.ErrExists) {
		s.stale = true
		return nil, fmt.Errorf("run %s: commit %d was taken by another session, epoch %d is stale: %w", s.run, c.Seq, s.epoch, ErrStale)
	}
	if err != nil {
		return nil, fmt.Errorf("dist: commit: %w", err)
	}
	s.seq = c.Seq
	s.remember(man)
	_ = s.st.Put(ctx, headKey(s.run), strings.NewReader(strconv.Itoa(c.Seq)))
	return &c, nil
}

// partsOf stores a file's content and says which blobs make it: the last
// commit's parts plus the appended bytes when the file only grew, else
// the whole content.
func (s *Session) partsOf(ctx context.Context, rel string, data []byte, sum string) ([]string, error) {
	prev, ok := s.prev[rel]
	switch {
	case ok && prev.SHA256 == sum && len(prev.Parts) > 0:
		return prev.Parts, nil
	case ok && len(prev.Parts) > 0 && len(prev.Parts) < maxParts && prev.Size > 0 &&
		prev.Size < int64(len(data)) && hash(data[:prev.Size]) == prev.SHA256:
		tail := data[prev.Size:]
		ts := hash(tail)
		if err := s.putBlob(ctx, ts, tail); err != nil {
			return nil, err
		}
		return append(append([]string{}, prev.Parts...), ts), nil
	}
	if err := s.putBlob(ctx, sum, data); err != nil {
		return nil, err
	}
	return []string{sum}, nil
}

// ReadManifest reads the manifest blob sum, checking its hash.
func ReadManifest(ctx context.Context, st store.Store, sum string) (*Manifest, error) {
	b, err := store.ReadAll(ctx, st, blobKey(sum))
	if err != nil {
		return nil, fmt.Errorf("dist: manifest %s: %w", sum, err)
	}
	if hash(b) != sum {
		return nil, fmt.Errorf("manifest %s: its SHA-256 differs: %w", sum, ErrDamaged)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil || m.Version != 1 {
		return nil, fmt.Errorf("manifest %s: %w", sum, ErrDamaged)
	}
	return &m, nil
}

// Restore writes commit c into a fresh run folder runDir and workspace ws
// (neither may exist, unless ws is an empty folder), each in a temporary
// folder renamed into place, so a host that dies meanwhile leaves no half
// run. Every content is checked against its hash. Files the policy denied
// and cache folders are not restored.
func Restore(ctx context.Context, st store.Store, c *Commit, runDir, ws string) error {
	if c == nil || c.Manifest == "" {
		return fmt.Errorf("dist: restore: nothing committed yet")
	}
	runDir, ws = abs(runDir), abs(ws)
	man, err := ReadManifest(ctx, st, c.Manifest)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(runDir); err == nil {
		return fmt.Errorf("dist: restore: %s exists", runDir)
	}
	if err := restoreTree(ctx, st, man.Records, runDir); err != nil {
		return fmt.Errorf("dist: restore the run folder of commit %d: %w", c.Seq, err)
	}
	if err := os.Remove(ws); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("dist: restore: workspace %s: %w", ws, err)
	}
	if err := restoreTree(ctx, st, man.Workspace, ws); err != nil {
		return fmt.Errorf("dist: restore the workspace of commit %d: %w", c.Seq, err)
	}
	return nil
}

func restoreTree(ctx context.Context, st store.Store, entries []Entry, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dst), ".restore-"+filepath.Base(dst)+"-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // gone after the rename; left only on failure
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		rel := e.name()
		if !relative(rel) {
			return fmt.Errorf("entry %q: not a relative path: %w", e.Path, ErrDamaged)
		}
		p := filepath.Join(tmp, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		switch {
		case e.Denied:
		case e.Folder:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		case e.Mode&fs.ModeSymlink != 0:
			if err := os.Symlink(e.Link, p); err != nil {
				return err
			}
		default:
			if err := restoreFile(ctx, st, e, p); err != nil {
				return err
			}
		}
	}
	return os.Rename(tmp, dst)
}

func restoreFile(ctx context.Context, st store.Store, e Entry, p string) error {
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	whole := sha256.New()
	for _, part := range e.Parts {
		b, err := store.ReadAll(ctx, st, blobKey(part))
		if err != nil {
			return fmt.Errorf("%s: %w", e.Path, err)
		}
		if hash(b) != part {
			return fmt.Errorf("%s: blob %s: %w", e.Path, part, ErrDamaged)
		}
		whole.Write(b)
		if _, err := f.Write(b); err != nil {
			return err
		}
	}
	if got := hex.EncodeToString(whole.Sum(nil)); got != e.SHA256 {
		return fmt.Errorf("%s: content %s, want %s: %w", e.Path, got, e.SHA256, ErrDamaged)
	}
	if err := f.Chmod(e.Mode.Perm()); err != nil {
		return err
	}
	return f.Sync()
}

func abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return filepath.Clean(p)
}

// relative says rel names an entry below a folder: slash-separated, no
// empty, "." or ".." segment, no NUL (any other byte is allowed: names
// need not be UTF-8).
func relative(rel string) bool {
	if rel == "" || strings.ContainsRune(rel, 0) {
		return false
	}
	for _, seg := range strings.Split(rel, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// inside says p is dir or below it.
func inside(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}
