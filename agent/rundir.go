package agent

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/trioagent/trio/tools"
)

// Names of the files in a run folder.
const (
	StateFile = "state.json"
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
	if d, err := os.Open(dir); err == nil {
		d.Sync() // best effort: some file systems refuse to sync a directory
		d.Close()
	}
	return nil
}

// jsonl appends JSON lines to a file; safe for concurrent use.
type jsonl struct {
	mu   sync.Mutex
	f    *os.File
	path string
}

func openJSONL(path string) (*jsonl, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return &jsonl{f: f, path: path}, nil
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
}

func openWAL(path string) (*wal, error) {
	w := &wal{done: map[string]tools.Result{}}
	if err := w.load(path); err != nil {
		return nil, err
	}
	out, err := openJSONL(path)
	if err != nil {
		return nil, err
	}
	w.out = out
	return w, nil
}

// load reads an existing record; a torn last line (a crash mid-write) is
// ignored, any other malformed line is an error naming it.
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
				return fmt.Errorf("%s:%d: %w", path, line, jerr)
			}
			if e.Phase == "end" && e.Result != nil {
				w.done[e.Key] = *e.Result
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

func (w *wal) begin(key string, c tools.Call) error {
	return w.out.write(walEntry{Phase: "begin", Key: key, CallID: c.ID, Tool: c.Name, Args: validJSON(c.Arguments), Time: time.Now().UTC()}, true)
}

func (w *wal) end(key string, c tools.Call, r tools.Result) error {
	w.done[key] = r
	return w.out.write(walEntry{Phase: "end", Key: key, CallID: c.ID, Tool: c.Name, Result: &r, Time: time.Now().UTC()}, true)
}

// recorded returns the result of a call that completed before a crash.
func (w *wal) recorded(key string) (tools.Result, bool) {
	r, ok := w.done[key]
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
