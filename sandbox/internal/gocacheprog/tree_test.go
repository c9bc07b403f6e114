package gocacheprog_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trioagent/trio/internal/sandboxtest"
	"github.com/trioagent/trio/sandbox/internal/gocacheprog"
)

// The real go command with a tree over a base as its plain GOCACHE: what
// the base holds is not built again, what it builds and its test results
// land in the tree, Check keeps them, and the base does not change.
func TestTreeServesTheGoCommand(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	tmp := t.TempDir()
	base, mod := filepath.Join(tmp, "base"), filepath.Join(tmp, "mod")
	writeModule(t, mod)
	goCmd := func(cache string, args ...string) string {
		t.Helper()
		c := exec.Command("go", args...)
		c.Dir = mod
		c.Env = append(os.Environ(), "GOFLAGS=", "GOPROXY=off", "GOTOOLCHAIN=local", "GOCACHEPROG=", "GOCACHE="+cache)
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	goCmd(base, "build", "strings", "fmt", "testing")
	before := sandboxtest.ContentHash(t, base)

	tree, err := gocacheprog.LinkTree(filepath.Join(tmp, "tree"), base)
	if err != nil {
		t.Fatal(err)
	}
	if out := goCmd(tree.Dir(), "list", "-f", "{{.ImportPath}} {{.Stale}}", "fmt", "strings"); out != "fmt false\nstrings false\n" {
		t.Fatalf("the base's packages are stale in the tree:\n%s", out)
	}
	if out := goCmd(tree.Dir(), "test", "./..."); !strings.Contains(out, "ok") || strings.Contains(out, "(cached)") {
		t.Fatalf("first go test:\n%s", out)
	}
	if err := tree.Check(); err != nil {
		t.Fatal(err)
	}
	if tree.Added() == 0 {
		t.Error("Check counts nothing the build added")
	}
	if out := goCmd(tree.Dir(), "test", "./..."); !strings.Contains(out, "(cached)") {
		t.Fatalf("the second go test found no cached result in the tree:\n%s", out)
	}
	if after := sandboxtest.ContentHash(t, base); after != before {
		t.Error("the go command changed the base through the tree")
	}
	files, _ := filepath.Glob(filepath.Join(base, "??", "*"))
	for _, f := range files {
		if st, err := os.Lstat(f); err != nil || st.Mode().Perm() != 0o444 {
			t.Fatalf("%s of the base: %v %v, want mode 0444", f, st.Mode(), err)
		}
	}
}

// Check keeps what has the disk cache's form and removes everything else:
// a forged output, an entry naming another action, a symlink, a folder
// in a shard, a file outside the shards, a base entry replaced by
// another file. A base file whose mode or time changed gets 0444 and its
// time back, and Added
// counts only what Check kept that is not the base's.
func TestTreeCheck(t *testing.T) {
	tmp := t.TempDir()
	base := filepath.Join(tmp, "base")
	write := func(dir, rel, content string) string {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		os.Remove(p)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	output := func(content string) (string, string) {
		sum := sha256.Sum256([]byte(content))
		id := hex.EncodeToString(sum[:])
		return id, id[:2] + "/" + id + "-d"
	}
	entry := func(action, out string, size int) string {
		return fmt.Sprintf("v1 %s %s %20d %20d\n", action, out, size, 1)
	}
	baseOut, baseOutName := output("compiled by the base")
	baseAction := strings.Repeat("a", 64)
	write(base, baseOutName, "compiled by the base")
	write(base, "aa/"+baseAction+"-a", entry(baseAction, baseOut, 20))
	write(base, "README", "This directory holds cached build artifacts from the Go build system.\n")

	tree, err := gocacheprog.LinkTree(filepath.Join(tmp, "tree"), base)
	if err != nil {
		t.Fatal(err)
	}
	dir := tree.Dir()
	var st syscall.Stat_t
	if err := syscall.Lstat(filepath.Join(dir, baseOutName), &st); err != nil || st.Nlink != 2 {
		t.Fatalf("the base's output in the tree: %v, %d links, want a hard link", err, st.Nlink)
	}

	// What a build may leave.
	newOut, newOutName := output("compiled in the run")
	newAction := strings.Repeat("b", 64)
	write(dir, newOutName, "compiled in the run")
	write(dir, "bb/"+newAction+"-a", entry(newAction, newOut, 19))
	// What Check must remove.
	forged := strings.Repeat("c", 64)
	write(dir, "cc/"+forged+"-d", "not what the name says")
	other := strings.Repeat("d", 64)
	write(dir, "dd/"+other+"-a", entry(strings.Repeat("e", 64), newOut, 19))
	write(dir, "forged", "x")
	write(dir, "ee/"+strings.Repeat("e", 64)+"-x", "x")
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "ff", strings.Repeat("f", 64)+"-a")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "ab", strings.Repeat("ab", 32)+"-d"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The base's entry replaced by another file of the same name (the
	// base's file itself cannot be written: it is mode 0444).
	write(dir, "aa/"+baseAction+"-a", entry(baseAction, newOut, 19)+"x")
	// A base file's mode and time changed by its owner.
	linked, err := os.Stat(filepath.Join(base, baseOutName))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, baseOutName), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(dir, baseOutName), time.Unix(1, 0), time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}

	if err := tree.Check(); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{newOutName, "bb/" + newAction + "-a", baseOutName} {
		st, err := os.Lstat(filepath.Join(dir, rel))
		if err != nil || st.Mode() != 0o444 {
			t.Errorf("%s: %v %v, want kept, mode 0444", rel, st, err)
		}
	}
	for _, rel := range []string{"cc/" + forged + "-d", "dd/" + other + "-a", "forged", "ee/" + strings.Repeat("e", 64) + "-x", "ff/" + strings.Repeat("f", 64) + "-a",
		"ab/" + strings.Repeat("ab", 32) + "-d", "aa/" + baseAction + "-a"} {
		if _, err := os.Lstat(filepath.Join(dir, rel)); err == nil {
			t.Errorf("Check kept %s", rel)
		}
	}
	if b, err := os.ReadFile(filepath.Join(base, "aa", baseAction+"-a")); err != nil || string(b) != entry(baseAction, baseOut, 20) {
		t.Errorf("the base's entry is %q, %v", b, err)
	}
	if st, err := os.Stat(filepath.Join(base, baseOutName)); err != nil || st.Mode().Perm() != 0o444 || !st.ModTime().Equal(linked.ModTime()) {
		t.Errorf("the base's output: %v %v, want its mode 0444 and its time %v back", st, err, linked.ModTime())
	}
	if got := tree.Added(); got != 2*4096 {
		t.Errorf("Added() = %d, want two blocks' worth (the output and the entry the build added)", got)
	}
	if got := tree.Usage(); got != tree.Added() {
		t.Errorf("Usage() = %d after Check, want Added() = %d", got, tree.Added())
	}
	// A checked file replaced later is checked again.
	write(dir, newOutName, "rewritten")
	if err := tree.Check(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(dir, newOutName)); err == nil {
		t.Error("Check kept a checked output rewritten since")
	}
}

// A test binary may change modes (Landlock does not cover chmod): one that
// changes a base file's mode and then closes its shard and the tree's
// folder does not hide either from Check, which opens them again and puts
// the base file's mode back. A file of the base that is not this user's
// is never linked.
func TestTreeCheckReopensClosedFolders(t *testing.T) {
	tmp := t.TempDir()
	base := filepath.Join(tmp, "base")
	content := "compiled by the base"
	sum := sha256.Sum256([]byte(content))
	id := hex.EncodeToString(sum[:])
	name := id[:2] + "/" + id + "-d"
	if err := os.MkdirAll(filepath.Join(base, id[:2]), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, name), []byte(content), 0o444); err != nil {
		t.Fatal(err)
	}
	foreign := ""
	if os.Getuid() == 0 {
		other := sha256.Sum256([]byte("planted"))
		oid := hex.EncodeToString(other[:])
		foreign = oid[:2] + "/" + oid + "-d"
		if err := os.MkdirAll(filepath.Join(base, oid[:2]), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(base, foreign), []byte("planted"), 0o444); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(filepath.Join(base, foreign), 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	tree, err := gocacheprog.LinkTree(filepath.Join(tmp, "tree"), base)
	if err != nil {
		t.Fatal(err)
	}
	dir := tree.Dir()
	if foreign != "" {
		if _, err := os.Lstat(filepath.Join(dir, foreign)); err == nil {
			t.Error("LinkTree linked a base file of another user's")
		}
	}
	if err := os.Chmod(filepath.Join(dir, name), 0o666); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Join(dir, id[:2]), dir} {
		if err := os.Chmod(d, 0); err != nil {
			t.Fatal(err)
		}
	}
	defer os.Chmod(dir, 0o755) // so that TempDir's cleanup can remove it
	if err := tree.Check(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, filepath.Join(dir, id[:2])} {
		if st, err := os.Lstat(d); err != nil || st.Mode().Perm() != 0o755 {
			t.Errorf("%s after Check: %v %v, want mode 0755", d, st, err)
		}
	}
	if st, err := os.Lstat(filepath.Join(base, name)); err != nil || st.Mode().Perm() != 0o444 {
		t.Errorf("the base's output after Check: %v %v, want mode 0444 back", st, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, name)); err != nil {
		t.Errorf("Check removed the base's output: %v", err)
	}
}
