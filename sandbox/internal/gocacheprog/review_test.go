package gocacheprog

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// serveTimeout bounds each serve call.
var serveTimeout = 5 * time.Second

// serve runs Serve over the request lines and returns its responses and
// error; it fails the test if Serve takes longer than serveTimeout.
func serve(t *testing.T, input string, dir string, bases ...string) ([]response, error) {
	t.Helper()
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- Serve(strings.NewReader(input), &out, dir, bases...) }()
	select {
	case err := <-done:
		var rs []response
		dec := json.NewDecoder(&out)
		for {
			var r response
			if dec.Decode(&r) != nil {
				break
			}
			rs = append(rs, r)
		}
		return rs, err
	case <-time.After(serveTimeout):
		t.Fatalf("Serve did not answer within %v (input %.200q)", serveTimeout, input)
		return nil, nil
	}
}

func id(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

func b64s(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// tree lists every path under dir with its type, for "nothing else was
// written" checks.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var l []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			rel, _ := filepath.Rel(dir, p)
			l = append(l, rel+" "+d.Type().String())
		}
		return nil
	})
	sort.Strings(l)
	return l
}

// Malformed and hostile requests: Serve reports an error or answers with
// one, never panics, never hangs, and writes nothing outside dir, and
// nothing in a base.
func TestReviewMalformedRequests(t *testing.T) {
	root := t.TempDir()
	dir, base := filepath.Join(root, "dir"), filepath.Join(root, "base")
	os.MkdirAll(dir, 0o755)
	os.MkdirAll(base, 0o755)
	a, o := b64s(id(1)), b64s(id(2))
	cases := map[string]string{
		"garbage":               "not json\n",
		"truncated":             `{"ID":1,"Command":"get"`,
		"get no id":             `{"ID":1,"Command":"get"}` + "\n",
		"get 1-byte id":         `{"ID":1,"Command":"get","ActionID":"AQ=="}` + "\n",
		"get huge id":           fmt.Sprintf(`{"ID":1,"Command":"get","ActionID":"%s"}`, b64s(bytes.Repeat([]byte{7}, 4096))) + "\n",
		"put short ids":         `{"ID":1,"Command":"put","ActionID":"AQ==","OutputID":"Ag==","BodySize":1}` + "\n" + `"eA=="` + "\n",
		"put negative size":     fmt.Sprintf(`{"ID":1,"Command":"put","ActionID":"%s","OutputID":"%s","BodySize":-5}`, a, o) + "\n",
		"put size mismatch":     fmt.Sprintf(`{"ID":1,"Command":"put","ActionID":"%s","OutputID":"%s","BodySize":100}`, a, o) + "\n" + `"eA=="` + "\n",
		"put missing body":      fmt.Sprintf(`{"ID":1,"Command":"put","ActionID":"%s","OutputID":"%s","BodySize":3}`, a, o) + "\n",
		"put body not a string": fmt.Sprintf(`{"ID":1,"Command":"put","ActionID":"%s","OutputID":"%s","BodySize":3}`, a, o) + "\n" + `{"x":1}` + "\n",
		"put huge size":         fmt.Sprintf(`{"ID":1,"Command":"put","ActionID":"%s","OutputID":"%s","BodySize":%d}`, a, o, int64(1)<<62) + "\n" + `"eA=="` + "\n",
		"unknown command":       `{"ID":1,"Command":"rm","ActionID":"AQ=="}` + "\n",
		"path in command":       `{"ID":1,"Command":"../../x"}` + "\n",
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("panic: %v", r)
				}
			}()
			rs, err := serve(t, in, dir, base)
			for _, r := range rs {
				if r.ID == 1 && r.Err == "" && !r.Miss {
					t.Errorf("accepted: %+v", r)
				}
			}
			_ = err
		})
	}
	if l := tree(t, dir); len(l) != 1 {
		t.Errorf("hostile requests wrote into dir: %v", l)
	}
	if l := tree(t, base); len(l) != 1 {
		t.Errorf("hostile requests wrote into the base: %v", l)
	}
	if l := tree(t, root); len(l) != 3 {
		t.Errorf("hostile requests wrote beside dir: %v", l)
	}
}

// A put whose output already exists in dir as a symlink (to a file
// outside) replaces the symlink: nothing is written through it.
func TestReviewPutOverSymlink(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "dir")
	victim := filepath.Join(root, "victim")
	os.WriteFile(victim, []byte("keep"), 0o644)
	sum := sha256.Sum256([]byte("FORGED"))
	out := file(dir, sum[:], "d")
	act := file(dir, id(1), "a")
	os.MkdirAll(filepath.Dir(out), 0o755)
	os.MkdirAll(filepath.Dir(act), 0o755)
	os.Symlink(victim, out)
	os.Symlink(victim, act)
	in := fmt.Sprintf(`{"ID":1,"Command":"put","ActionID":"%s","OutputID":"%s","BodySize":6}`, b64s(id(1)), b64s(sum[:])) + "\n" + `"Rk9SR0VE"` + "\n"
	rs, err := serve(t, in, dir)
	if err != nil || len(rs) != 2 || rs[1].Err != "" {
		t.Fatalf("put: %v %+v", err, rs)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Fatalf("a put wrote through a symlink: victim holds %q", b)
	}
	if st, _ := os.Lstat(out); st.Mode()&fs.ModeSymlink != 0 {
		t.Error("the symlink is still there")
	}
}

// A put stores only a body whose SHA-256 is its output ID, as the go
// command computes it: another body under that name is refused and
// leaves nothing, so a lookup never answers content its name does not
// promise.
func TestPutChecksTheOutputID(t *testing.T) {
	dir := t.TempDir()
	in := fmt.Sprintf(`{"ID":1,"Command":"put","ActionID":"%s","OutputID":"%s","BodySize":6}`, b64s(id(1)), b64s(id(2))) + "\n" + `"Rk9SR0VE"` + "\n" +
		fmt.Sprintf(`{"ID":2,"Command":"get","ActionID":"%s"}`, b64s(id(1))) + "\n"
	rs, err := serve(t, in, dir)
	if err != nil || len(rs) != 3 || !strings.Contains(rs[1].Err, "output ID") || !rs[2].Miss {
		t.Fatalf("a put whose body is not its output ID: %v %+v", err, rs)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*", "*")); len(left) != 0 {
		t.Errorf("the refused put left %v", left)
	}
}

// An action entry in the writable folder that is a FIFO made a get hang,
// and a symlink to /dev/zero made it read until it ran out of memory: the go
// command's own disk cache would never open such a file (it reads at most
// an entry's size from a regular file). A command can only do this to its
// own cache (Reset drops it), so it is its own builds it hangs.
func TestReviewGetOnSpecialEntry(t *testing.T) {
	for _, kind := range []string{"fifo", "dev-zero"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			a := file(dir, id(1), "a")
			os.MkdirAll(filepath.Dir(a), 0o755)
			switch kind {
			case "fifo":
				if err := syscall.Mkfifo(a, 0o644); err != nil {
					t.Skip(err)
				}
			case "dev-zero":
				os.Symlink("/dev/zero", a)
			}
			in := fmt.Sprintf(`{"ID":1,"Command":"get","ActionID":"%s"}`, b64s(id(1))) + "\n"
			rs, _ := serve(t, in, dir)
			if len(rs) != 2 || !rs[1].Miss {
				t.Errorf("get on a %s entry: %+v, want a miss", kind, rs)
			}
		})
	}
}

// An entry whose output is a symlink (here to a file of the right size
// outside every cache folder) is answered with the symlink's path: the go
// command then reads whatever it names. In the sandbox that is only what
// the command could read anyway, and only in its own cache.
func TestReviewGetSymlinkedOutput(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "dir")
	outside := filepath.Join(root, "outside")
	os.WriteFile(outside, []byte("secret"), 0o644)
	out := file(dir, id(2), "d")
	os.MkdirAll(filepath.Dir(out), 0o755)
	os.Symlink(outside, out)
	a := file(dir, id(1), "a")
	os.MkdirAll(filepath.Dir(a), 0o755)
	os.WriteFile(a, []byte(fmt.Sprintf("v1 %x %x %20d %20d\n", id(1), id(2), 6, time.Now().UnixNano())), 0o644)
	in := fmt.Sprintf(`{"ID":1,"Command":"get","ActionID":"%s"}`, b64s(id(1))) + "\n"
	rs, _ := serve(t, in, dir)
	if len(rs) != 2 {
		t.Fatalf("%+v", rs)
	}
	t.Logf("get of an entry whose output is a symlink out of the cache: %+v", rs[1])
}

// A put's body was decoded whole into memory (the JSON string, then its
// base64 decoding: 160 MiB for 32 MiB), where the go command's own disk
// cache streams it, so under Limits.Memory (RLIMIT_DATA) a large output
// (a package embedding a big file, a cached go run binary) could make the
// program fail where a plain GOCACHE would not. It streams now.
func TestReviewPutMemory(t *testing.T) {
	const size = 32 << 20
	defer func(d time.Duration) { serveTimeout = d }(serveTimeout)
	serveTimeout = time.Minute
	dir := t.TempDir()
	body := bytes.Repeat([]byte{'x'}, size)
	sum := sha256.Sum256(body)
	in := fmt.Sprintf(`{"ID":1,"Command":"put","ActionID":"%s","OutputID":"%s","BodySize":%d}`, b64s(id(1)), b64s(sum[:]), size) +
		"\n\"" + b64s(body) + "\"\n"
	body = nil
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	rs, err := serve(t, in, dir)
	runtime.ReadMemStats(&m1)
	if err != nil || len(rs) != 2 || rs[1].Err != "" {
		t.Fatalf("%v %+v", err, rs)
	}
	// Streamed, the body costs buffers, not its size.
	if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > size/4 {
		t.Errorf("a put of %d MiB allocated %d MiB in the cache program", size>>20, alloc>>20)
	}
}
