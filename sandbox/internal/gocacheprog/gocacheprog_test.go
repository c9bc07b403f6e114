package gocacheprog_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trioagent/trio/internal/sandboxtest"
	"github.com/trioagent/trio/sandbox/internal/gocacheprog"
)

// The test binary is the cache program when the go command starts it with
// these variables set.
func TestMain(m *testing.M) {
	if dir := os.Getenv("TEST_CACHEPROG_DIR"); dir != "" {
		if err := gocacheprog.Serve(os.Stdin, os.Stdout, dir, os.Getenv("TEST_CACHEPROG_BASE")); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The real go command, with a base the go command built as GOCACHE: what
// the base holds is not built again, what is built lands in the writable
// folder only, cached test results are found there, and the base does not
// change.
func TestGoCommandUsesTheLayers(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	tmp := t.TempDir()
	base, dir, mod := filepath.Join(tmp, "base"), filepath.Join(tmp, "dir"), filepath.Join(tmp, "mod")
	writeModule(t, mod)
	goCmd := func(env []string, args ...string) string {
		t.Helper()
		c := exec.Command("go", args...)
		c.Dir = mod
		c.Env = append(os.Environ(), append([]string{"GOFLAGS=", "GOPROXY=off", "GOTOOLCHAIN=local"}, env...)...)
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	goCmd([]string{"GOCACHE=" + base}, "build", "strings", "fmt")
	before := sandboxtest.ContentHash(t, base)

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	layered := []string{"GOCACHE=" + dir, "GOCACHEPROG=" + exe, "TEST_CACHEPROG_DIR=" + dir, "TEST_CACHEPROG_BASE=" + base}
	if out := goCmd(layered, "list", "-f", "{{.ImportPath}} {{.Stale}}", "fmt", "strings"); out != "fmt false\nstrings false\n" {
		t.Fatalf("the base's packages are stale through the cache program:\n%s", out)
	}
	if out := goCmd(layered, "test", "./..."); !strings.Contains(out, "ok") || strings.Contains(out, "(cached)") {
		t.Fatalf("first go test:\n%s", out)
	}
	if out := goCmd(layered, "test", "./..."); !strings.Contains(out, "(cached)") {
		t.Fatalf("the second go test found no cached result in the writable folder:\n%s", out)
	}
	if entries, _ := filepath.Glob(filepath.Join(dir, "??", "*-a")); len(entries) == 0 {
		t.Error("nothing was put in the writable folder")
	}
	if after := sandboxtest.ContentHash(t, base); after != before {
		t.Error("the go command changed the base through the cache program")
	}
	// Without the writable folder's entries the result is not cached.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if out := goCmd(layered, "test", "./..."); strings.Contains(out, "(cached)") {
		t.Fatalf("a cached result survived its folder's removal:\n%s", out)
	}
}

// A request the program does not know, and a malformed one, are answered
// or end the program with an error; neither writes anything.
func TestBadRequests(t *testing.T) {
	dir := t.TempDir()
	var out strings.Builder
	err := gocacheprog.Serve(strings.NewReader(`{"ID":1,"Command":"frob"}
{"ID":2,"Command":"get"}
{"ID":3,"Command":"put","ActionID":"AAAA","OutputID":"AAAA"}
{"ID":4,"Command":"get","ActionID":"`+strings.Repeat("A", 43)+`="}
{"ID":5,"Command":"close"}
`), &out, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`"KnownCommands":["get","put","close"]`, `{"ID":1,"Err":"unknown command \"frob\""}`,
		`{"ID":2,"Err":"get needs a 32-byte action ID"}`, `{"ID":3,"Err":"put needs 32-byte action and output IDs"}`,
		`{"ID":4,"Miss":true}`, `{"ID":5}`}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != len(want) {
		t.Fatalf("responses:\n%s", out.String())
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("response %d = %s, want %s", i, lines[i], w)
		}
	}
	if err := gocacheprog.Serve(strings.NewReader("{not json\n"), &out, dir); err == nil {
		t.Error("a malformed request was not an error")
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("bad requests wrote %v", left)
	}
}

func writeModule(t *testing.T, dir string) {
	t.Helper()
	files := map[string]string{
		"go.mod":    "module layered\n\ngo 1.21\n",
		"a.go":      "package layered\n\nimport \"strings\"\n\nfunc Up(s string) string { return strings.ToUpper(s) }\n",
		"a_test.go": "package layered\n\nimport \"testing\"\n\nfunc TestUp(t *testing.T) {\n\tif Up(\"a\") != \"A\" {\n\t\tt.Fatal(Up(\"a\"))\n\t}\n}\n",
	}
	for name, content := range files {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// ReadOnly turns a cache program that writes its folder into one that
// reads it as a base and keeps its own puts apart; anything else stays.
func TestReadOnly(t *testing.T) {
	const path = "/.trio/init"
	tests := []struct{ in, want string }{
		{gocacheprog.Prog(path, "/.trio/trusted", "/.trio/go-build"), gocacheprog.Prog(path, "", "/.trio/trusted", "/.trio/go-build")},
		{gocacheprog.Prog(path, "", "/.trio/go-build"), gocacheprog.Prog(path, "", "/.trio/go-build")},
		{"/usr/bin/other-cacheprog /x", "/usr/bin/other-cacheprog /x"},
		{"/elsewhere/init " + gocacheprog.Flag + " /dir", "/elsewhere/init " + gocacheprog.Flag + " /dir"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := gocacheprog.ReadOnly(tt.in, path); got != tt.want {
			t.Errorf("ReadOnly(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// Import keeps only what has the disk cache's form: an output whose
// content is its ID, an action entry of the right length naming its own
// action, the trim time. A forged output, a short or mislabelled entry, a
// symlink, a file outside the shards are left out.
func TestImport(t *testing.T) {
	src, store := t.TempDir(), t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(src, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := "compiled"
	sum := sha256.Sum256([]byte(out))
	outID := hex.EncodeToString(sum[:])
	action := strings.Repeat("a", 64)
	entry := fmt.Sprintf("v1 %s %s %20d %20d\n", action, outID, len(out), 1)
	write(outID[:2]+"/"+outID+"-d", out)
	write("aa/"+action+"-a", entry)
	write("trim.txt", "1700000000")
	forged := strings.Repeat("b", 64)
	write("bb/"+forged+"-d", "not what the name says")
	other := strings.Repeat("c", 64)
	write("cc/"+other+"-a", strings.Replace(entry, action, strings.Repeat("d", 64), 1)) // names another action
	write("dd/"+strings.Repeat("d", 64)+"-a", "v1 short\n")
	write("forged", "x")
	write("ee/"+strings.Repeat("e", 64)+"-x", "x")
	if err := os.Symlink("/etc/passwd", filepath.Join(src, "aa", strings.Repeat("f", 64)+"-a")); err != nil {
		t.Fatal(err)
	}
	n, err := gocacheprog.Import(store, src)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	filepath.WalkDir(store, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(store, p)
			got = append(got, rel)
		}
		return err
	})
	want := []string{"aa/" + action + "-a", outID[:2] + "/" + outID + "-d", "trim.txt"}
	slices.Sort(got)
	slices.Sort(want)
	if n != 2 || !slices.Equal(got, want) {
		t.Errorf("imported %d: %q, want 2: %q", n, got, want)
	}
	if st, err := os.Stat(filepath.Join(store, "aa")); err != nil || st.Mode().Perm() != 0o777 {
		t.Errorf("shard folder: %v %v, want mode 0777 (the go command adds entries to it in the overlay)", st, err)
	}
}
