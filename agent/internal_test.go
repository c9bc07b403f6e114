package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trioagent/trio/tools"
)

func TestAlternating(t *testing.T) {
	t.Parallel()
	tests := []struct {
		xs   []string
		want bool
	}{
		{nil, false},
		{[]string{"a", "b", "a"}, false},
		{[]string{"a", "b", "a", "b"}, true},
		{[]string{"x", "a", "b", "a", "b"}, true},
		{[]string{"a", "a", "a", "a"}, false},
		{[]string{"a", "b", "c", "b"}, false},
	}
	for _, tt := range tests {
		if got := alternating(tt.xs); got != tt.want {
			t.Errorf("alternating(%q) = %v, want %v", tt.xs, got, tt.want)
		}
	}
}

func TestCanonicalJSON(t *testing.T) {
	t.Parallel()
	if canonicalJSON(`{"b": 1, "a": [1, 2]}`) != canonicalJSON(`{"a":[1,2],"b":1}`) {
		t.Error("key order or spacing makes two identical calls differ")
	}
	if got := canonicalJSON(`{"a": `); got != `{"a": ` {
		t.Errorf("malformed arguments changed: %q", got)
	}
}

func TestWALLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, CallsFile)
	w, _, err := openWAL(path)
	if err != nil {
		t.Fatal(err)
	}
	c := tools.Call{ID: "c1", Name: "write_file", Arguments: []byte(`{"path": `)}
	if err := w.begin("1.0", c); err != nil {
		t.Fatal(err)
	}
	if err := w.end("1.0", c, tools.Result{OK: true, Output: "done"}); err != nil {
		t.Fatal(err)
	}
	if err := w.begin("1.1", c); err != nil {
		t.Fatal(err)
	}
	w.out.close()
	// A torn last line, as after a crash mid-write.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"phase":"end","key":"1.1","res`)
	f.Close()

	w2, cut, err := openWAL(path)
	if err != nil {
		t.Fatalf("reopen with a torn line: %v", err)
	}
	if cut != int64(len(`{"phase":"end","key":"1.1","res`)) {
		t.Errorf("cut %d bytes, want the torn line's", cut)
	}
	defer w2.out.close()
	if r, ok := w2.recorded("1.0", c); !ok || r.Output != "done" {
		t.Errorf("1.0: %+v %v, want the recorded result", r, ok)
	}
	// The same key with another call (the model asked anew after a fall
	// back to an earlier checkpoint) is not answered from the record.
	if _, ok := w2.recorded("1.0", tools.Call{ID: "c9", Name: "write_file", Arguments: []byte(`{"path": "other"}`)}); ok {
		t.Error("1.0 with other arguments: answered from the record")
	}
	if _, ok := w2.recorded("1.1", c); ok {
		t.Error("1.1 has only a begin: it must run again")
	}

	// A malformed line in the middle is an error naming it.
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte("{}\nnot json\n{}\n"), 0o644)
	if _, _, err := openWAL(bad); err == nil || !strings.Contains(err.Error(), "bad.jsonl:2") {
		t.Errorf("malformed record: %v, want an error naming line 2", err)
	}
}

func TestWriteFileAtomic(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "state.json")
	for _, content := range []string{"one", "two"} {
		if err := writeFileAtomic(p, []byte(content)); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(p); string(b) != content {
			t.Errorf("content %q, want %q", b, content)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%d files left, want 1 (no temp files)", len(entries))
	}
}

func TestStopReasonsExplained(t *testing.T) {
	t.Parallel()
	for _, r := range StopReasons() {
		if e := r.Explain(); e == "" || strings.HasPrefix(e, "unknown") {
			t.Errorf("%s has no explanation", r)
		}
	}
}
