package dist_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trioagent/trio/dist"
	"github.com/trioagent/trio/dist/store"
	"github.com/trioagent/trio/dist/store/storetest"
	"github.com/trioagent/trio/policy"
)

// write makes files under dir: name → content ("->target" makes a link).
func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(content, "->"); ok {
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// tree is every entry below dir with what identifies it byte for byte:
// a file's mode and content, a link's target. skip leaves names out.
func tree(t *testing.T, dir string, skip ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		for _, s := range skip {
			if rel == s {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			out[rel] = "link " + l
		case fi.IsDir():
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = fi.Mode().String() + " " + string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func same(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for k, w := range want {
		if g, ok := got[k]; !ok {
			t.Errorf("%s: %q missing after restore", what, k)
		} else if g != w {
			t.Errorf("%s: %q = %.60q, want %.60q", what, k, g, w)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: %q appeared after restore", what, k)
		}
	}
}

// TestCommitRestoreRoundTrip commits a run folder and its workspace (the
// run's default layout: the workspace inside the run folder) twice, the
// second time after records were appended and files changed, removed and
// added, and restores the last commit into a fresh folder elsewhere:
// every file, mode and link is the same byte for byte, the session's
// lock and temporary files stay behind, and a record file that grew is
// stored as its new records only.
func TestCommitRestoreRoundTrip(t *testing.T) {
	t.Parallel()
	eachStore(t, testCommitRestoreRoundTrip)
}

// eachStore runs test on a fresh Folder and on a fresh S3 store (on an
// S3-compatible server in the test, see storetest.FakeS3).
func eachStore(t *testing.T, test func(t *testing.T, st store.Store)) {
	t.Run("Folder", func(t *testing.T) {
		t.Parallel()
		st, err := store.NewFolder(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		test(t, st)
	})
	t.Run("S3", func(t *testing.T) {
		t.Parallel()
		test(t, storetest.NewFakeS3(t))
	})
}

func testCommitRestoreRoundTrip(t *testing.T, st store.Store) {
	ctx := context.Background()
	runDir := filepath.Join(t.TempDir(), "runs", "r1")
	ws := filepath.Join(runDir, "workspace")
	write(t, runDir, map[string]string{
		"state.json":             `{"phase":"build"}`,
		"goal.md":                "a goal\n",
		"calls.jsonl":            `{"key":"1.0","begin":true}` + "\n",
		"trace.jsonl":            `{"kind":"model"}` + "\n",
		"start/manifest-x.jsonl": "{}\n",
		"suite/1/test_a.py":      "assert True\n",
		"run.lock":               "pid 1 host a\n",
		".state.json.abc.tmp":    "torn",
	})
	write(t, ws, map[string]string{
		"main.go":           "package main\n",
		"pkg/util.go":       "package pkg\n",
		"old.txt":           "to be removed\n",
		"link":              "->main.go",
		"bad\xffname.txt":   "not UTF-8 name\n",
		"node_modules/x.js": "cache",
	})
	if err := os.Chmod(filepath.Join(ws, "main.go"), 0o755); err != nil {
		t.Fatal(err)
	}
	s, base, err := dist.Begin(ctx, st, "r1", 1, "host-a")
	if err != nil || base != nil {
		t.Fatalf("Begin = %v, %v; want no base", base, err)
	}
	if _, err := s.Commit(ctx, runDir, ws, policy.ReadRules{}); err != nil {
		t.Fatal(err)
	}
	// The session goes on: records appended, files changed.
	appended := `{"key":"1.0","end":true}` + "\n"
	f, err := os.OpenFile(filepath.Join(runDir, "calls.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(appended)
	f.Close()
	write(t, runDir, map[string]string{"state.json": `{"phase":"check"}`})
	write(t, ws, map[string]string{"pkg/util.go": "package pkg\n\nfunc F() {}\n", "new/file.txt": "new\n"})
	os.Remove(filepath.Join(ws, "old.txt"))
	c, err := s.Commit(ctx, runDir, ws, policy.ReadRules{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Seq != 3 || c.Epoch != 1 {
		t.Fatalf("second commit is seq %d epoch %d, want 3 (after the marker and the first) epoch 1", c.Seq, c.Epoch)
	}
	man, err := dist.ReadManifest(ctx, st, c.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range man.Records {
		if e.Path != "calls.jsonl" {
			continue
		}
		if len(e.Parts) != 2 {
			t.Fatalf("calls.jsonl is kept in %d parts, want 2 (the first commit's, then the appended record)", len(e.Parts))
		}
		tail, err := store.ReadAll(ctx, st, "blobs/"+e.Parts[1])
		if err != nil || string(tail) != appended {
			t.Fatalf("the second part of calls.jsonl is %q (%v), want the appended record only", tail, err)
		}
	}

	// Another host: the head is the last commit, restored into a fresh folder.
	head, err := dist.Head(ctx, st, "r1")
	if err != nil || head == nil || head.Seq != 3 {
		t.Fatalf("Head = %+v, %v; want seq 3", head, err)
	}
	other := filepath.Join(t.TempDir(), "elsewhere", "runs", "r1")
	ows := filepath.Join(other, "workspace")
	if err := dist.Restore(ctx, st, head, other, ows); err != nil {
		t.Fatal(err)
	}
	same(t, "run folder", tree(t, other, "workspace"), tree(t, runDir, "workspace", "run.lock", ".state.json.abc.tmp"))
	want := tree(t, ws, "node_modules")
	got := tree(t, ows, "node_modules")
	same(t, "workspace", got, want)
	if fi, err := os.Stat(filepath.Join(ows, "node_modules")); err != nil || !fi.IsDir() {
		t.Errorf("the cache folder node_modules is not there as a folder: %v", err)
	}
	// Restoring over an existing run folder is refused.
	if err := dist.Restore(ctx, st, head, other, ows); err == nil {
		t.Fatal("Restore over an existing run folder succeeded")
	}
}

// TestCommitDeniedNotCopied: a file the policy denies reading is listed by
// name and its content reaches no blob.
func TestCommitDeniedNotCopied(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.NewFolder(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	runDir := filepath.Join(dir, "runs", "r")
	ws := filepath.Join(runDir, "workspace")
	write(t, runDir, map[string]string{"state.json": "{}"})
	write(t, ws, map[string]string{".env": "SECRET=canary-4f1e", "a.txt": "a"})
	s, _, err := dist.Begin(ctx, st, "r", 1, "h")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(ctx, runDir, ws, policy.ReadRules{Deny: []string{"**/.env"}}); err != nil {
		t.Fatal(err)
	}
	filepath.WalkDir(st.Dir(), func(p string, d fs.DirEntry, _ error) error {
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte("canary-4f1e")) {
			t.Errorf("%s holds the denied file's content", p)
		}
		return nil
	})
}

// TestStaleEpoch: a session whose run was taken over by a newer epoch
// fails its next commit with ErrStale, and so does every later one; a
// session cannot start with an epoch older than the chain's.
func TestStaleEpoch(t *testing.T) {
	t.Parallel()
	eachStore(t, testStaleEpoch)
}

func testStaleEpoch(t *testing.T, st store.Store) {
	ctx := context.Background()
	dir := t.TempDir()
	runDir := filepath.Join(dir, "runs", "r")
	ws := filepath.Join(runDir, "workspace")
	write(t, runDir, map[string]string{"state.json": "{}"})
	write(t, ws, map[string]string{"a.txt": "a"})
	old, _, err := dist.Begin(ctx, st, "r", 1, "host-a")
	if err != nil {
		t.Fatal(err)
	}
	first, err := old.Commit(ctx, runDir, ws, policy.ReadRules{})
	if err != nil {
		t.Fatal(err)
	}
	// host-a is cut off; host-b takes the run over with epoch 2.
	newer, base, err := dist.Begin(ctx, st, "r", 2, "host-b")
	if err != nil {
		t.Fatal(err)
	}
	if base == nil || base.Seq != first.Seq || base.Manifest != first.Manifest {
		t.Fatalf("epoch 2 continues from %+v, want the first session's commit %+v", base, first)
	}
	write(t, ws, map[string]string{"a.txt": "changed by the stale host"})
	for range 2 {
		if _, err := old.Commit(ctx, runDir, ws, policy.ReadRules{}); !errors.Is(err, dist.ErrStale) {
			t.Fatalf("commit with the stale epoch 1: %v, want ErrStale", err)
		}
	}
	if _, err := newer.Commit(ctx, runDir, ws, policy.ReadRules{}); err != nil {
		t.Fatalf("commit of the current epoch: %v", err)
	}
	for _, e := range []int64{1, 2} {
		if _, _, err := dist.Begin(ctx, st, "r", e, "host-c"); !errors.Is(err, dist.ErrStale) {
			t.Errorf("Begin with epoch %d after epoch 2 committed: %v, want ErrStale", e, err)
		}
	}
}
