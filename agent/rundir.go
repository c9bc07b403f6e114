package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/trioagent/trio/tools"
)

// Names of the files in a run folder.
const (
	StateFile = "state.json"
	// GoalFile holds the goal, written once when the run is created.
	GoalFile  = "goal.md"
	CallsFile = "calls.jsonl"
	// HistoryFile holds the Worker's messages, one a line; state.json says
	// how many of them it covers.
	HistoryFile = "history.jsonl"
	TraceFile   = "trace.jsonl"
	AuditFile   = "audit.jsonl"
	ReportJSON  = "report.json"
	ReportMD    = "report.md"
)

// writeFileAtomic writes data to path so that a reader sees either the old
// or the new content, never a torn file: temp file, fsync, rename, fsync dir.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	cleanup := func(e error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, e)
	}
	if _, err := f.Write(data); err != nil {
		return cleanup(err)
	}
	if err := f.Sync(); err != nil {
		return cleanup(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	syncDir(dir)
	return nil
}

// jsonl appends JSON lines to a file; safe for concurrent use.
type jsonl struct {
	mu   sync.Mutex
	f    *os.File
	path string
}

// openJSONL opens path for appending after healing it (see healJSONL);
// cut is how many bytes of a torn last record were cut off.
func openJSONL(path string) (j *jsonl, cut int64, err error) {
	if cut, err = healJSONL(path); err != nil {
		return nil, 0, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, 0, fmt.Errorf("open %s: %w", path, err)
	}
	return &jsonl{f: f, path: path}, cut, nil
}

// healJSONL cuts a JSONL file back to its last complete record, so that
// what is appended next does not glue onto a record torn by a crash or a
// full disk. A record is complete once its newline is written: JSON
// encoding escapes newlines, so the bytes after the last one are a torn
// record, and a complete line that is not JSON is damage in the middle of
// the file, an error naming the file and line. It returns the bytes cut.
func healJSONL(path string) (int64, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	var good, size int64
	for line := 1; ; line++ {
		b, err := r.ReadBytes('\n')
		size += int64(len(b))
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("read %s: %w", path, err)
		}
		if t := bytes.TrimSpace(b); len(t) > 0 && !json.Valid(t) {
			return 0, invalidInput(fmt.Errorf("%s:%d: damaged record in the middle of the file (not a torn last record): %q", path, line, oneLine(string(t), 80)))
		}
		good = size
	}
	if size == good {
		return 0, nil
	}
	if err := f.Truncate(good); err != nil {
		return 0, fmt.Errorf("heal %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("heal %s: %w", path, err)
	}
	return size - good, nil
}

// write appends v as one line; sync makes it durable before returning.
func (j *jsonl) write(v any, sync bool) error {
	if j == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s line: %w", filepath.Base(j.path), err)
	}
	b = append(b, '\n')
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return fmt.Errorf("write %s: closed", j.path)
	}
	if _, err := j.f.Write(b); err != nil {
		return fmt.Errorf("write %s: %w", j.path, err)
	}
	if sync {
		if err := j.f.Sync(); err != nil {
			return fmt.Errorf("sync %s: %w", j.path, err)
		}
	}
	return nil
}

// sync makes what was written durable.
func (j *jsonl) sync() error {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return nil
	}
	return j.f.Sync()
}

func (j *jsonl) close() error {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	return err
}

// walEntry is one line of calls.jsonl. A "begin" is durable before the call
// runs; an "end" holds the result the model received.
type walEntry struct {
	Phase  string          `json:"phase"` // "begin" or "end"
	Key    string          `json:"key"`   // unique in the run: <turn>.<index>
	CallID string          `json:"call_id"`
	Tool   string          `json:"tool"`
	Args   json.RawMessage `json:"args,omitempty"`
	Result *tools.Result   `json:"result,omitempty"`
	Time   time.Time       `json:"time"`
}

// wal is the write-ahead record of the Worker's tool calls. A call with a
// "begin" and no "end" was in flight when the run stopped: it runs again.
type wal struct {
	out  *jsonl
	done map[string]tools.Result // key → recorded result
	// begun are keys with a "begin" in an earlier session: a call run
	// again under such a key without an "end" was in flight when it died.
	begun map[string]bool
	// calls are the tool and arguments each key began with: a recorded
	// result answers only the same call. After a fall back to the previous
	// checkpoint a key can come again with another call (the model asked
	// anew), whose result the record does not hold.
	calls map[string]string
}

// callSig is what identifies a call under its key: tool and arguments.
func callSig(tool string, args json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, validJSON(args)) != nil {
		b.Reset()
		b.Write(args)
	}
	return tool + "\x00" + b.String()
}

func openWAL(path string) (*wal, int64, error) {
	w := &wal{done: map[string]tools.Result{}, begun: map[string]bool{}, calls: map[string]string{}}
	cut, err := healJSONL(path)
	if err != nil {
		return nil, 0, err
	}
	if err := w.load(path); err != nil {
		return nil, 0, err
	}
	out, _, err := openJSONL(path)
	if err != nil {
		return nil, 0, err
	}
	w.out = out
	return w, cut, nil
}

// load reads an existing record (healed first: a torn last line is gone);
// a malformed line is an error naming it.
func (w *wal) load(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	r := bufio.NewReader(f)
	for line := 1; ; line++ {
		b, err := r.ReadBytes('\n')
		if len(b) > 0 && b[len(b)-1] == '\n' {
			var e walEntry
			if jerr := json.Unmarshal(b, &e); jerr != nil {
				return invalidInput(fmt.Errorf("%s:%d: %w", path, line, jerr))
			}
			switch {
			case e.Phase == "end" && e.Result != nil:
				w.done[e.Key] = *e.Result
			case e.Phase == "begin":
				w.begun[e.Key] = true
				w.calls[e.Key] = callSig(e.Tool, e.Args)
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
	}
}

// ranBefore reports whether an earlier session began the call under key
// without recording its end: it was in flight when that session died.
func (w *wal) ranBefore(key string) bool {
	_, done := w.done[key]
	return w.begun[key] && !done
}

func (w *wal) begin(key string, c tools.Call) error {
	w.calls[key] = callSig(c.Name, c.Arguments)
	return w.out.write(walEntry{Phase: "begin", Key: key, CallID: c.ID, Tool: c.Name, Args: validJSON(c.Arguments), Time: time.Now().UTC()}, true)
}

func (w *wal) end(key string, c tools.Call, r tools.Result) error {
	w.done[key] = r
	return w.out.write(walEntry{Phase: "end", Key: key, CallID: c.ID, Tool: c.Name, Result: &r, Time: time.Now().UTC()}, true)
}

// recorded returns the result of call c that completed before a crash
// under key.
func (w *wal) recorded(key string, c tools.Call) (tools.Result, bool) {
	r, ok := w.done[key]
	if ok && w.calls[key] != callSig(c.Name, c.Arguments) {
		delete(w.done, key) // another call under a reused key: it runs
		delete(w.begun, key)
		return tools.Result{}, false
	}
	return r, ok
}

// validJSON keeps malformed arguments readable in the record: raw JSON when
// valid, else a JSON string of the text.
func validJSON(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	if json.Valid(b) {
		return b
	}
	s, _ := json.Marshal(string(b))
	return s
}

// newFolderPrefix starts the name of a run folder being created.
const newFolderPrefix = ".new-"

// createRunFolder makes <runs>/<id>/ holding its first checkpoint, goal.md,
// an empty calls.jsonl and the session's lock, all at once: they are
// written into a temporary folder that is then renamed, so that no run
// folder ever exists without a checkpoint, whenever the process dies.
func createRunFolder(runs, id string, st *state) (string, *fileLock, error) {
	dir := filepath.Join(runs, id)
	if err := os.MkdirAll(runs, 0o755); err != nil {
		return "", nil, invalidInput(fmt.Errorf("runs folder: %w", err))
	}
	tmp, err := os.MkdirTemp(runs, newFolderPrefix+id+"-")
	if err != nil {
		return "", nil, invalidInput(fmt.Errorf("runs folder %s: %w", runs, err))
	}
	// The folder's lock goes with it through the rename (it is the same
	// inode).
	l, err := acquireDirLock(tmp, filepath.Join(tmp, LockFile), "run "+id, id)
	if err != nil {
		os.RemoveAll(tmp)
		return "", nil, err
	}
	fail := func(err error) (string, *fileLock, error) {
		l.release()
		os.RemoveAll(tmp)
		return "", nil, err
	}
	b, err := encodeState(st)
	if err != nil {
		return fail(fmt.Errorf("encode checkpoint: %w", err))
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{GoalFile, []byte(st.Goal)}, {CallsFile, nil}, {StateFile, b}} {
		if err := writeFileAtomic(filepath.Join(tmp, f.name), f.data); err != nil {
			return fail(err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Rename replaces only an empty folder: a run of that id exists.
		if errors.Is(err, os.ErrExist) || errors.Is(err, syscall.ENOTEMPTY) {
			return fail(invalidInput(fmt.Errorf("run %s already exists in %s (resume it or choose another run id)", id, dir)))
		}
		return fail(fmt.Errorf("create run folder %s: %w", dir, err))
	}
	syncDir(runs)
	return dir, l, nil
}

// sweepUnfinished removes the temporary folders of run folders whose
// creation was interrupted (their creator died: nobody holds their lock).
func sweepUnfinished(runs string) {
	entries, err := os.ReadDir(runs)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), newFolderPrefix) {
			continue
		}
		p := filepath.Join(runs, e.Name())
		if !isDirBusy(p) && !isLockBusy(filepath.Join(p, LockFile)) {
			os.RemoveAll(p)
		}
	}
}

// sweepTemps removes the temporary files of atomic writes that a killed
// session left in the run folder dir; the caller holds the run's lock, so
// no writer of them is alive.
func sweepTemps(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if n := e.Name(); !e.IsDir() && strings.HasPrefix(n, ".") && strings.HasSuffix(n, ".tmp") {
			os.Remove(filepath.Join(dir, n))
		}
	}
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync() // best effort: some file systems refuse to sync a directory
		d.Close()
	}
}
