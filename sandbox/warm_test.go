package sandbox_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/sandbox/containerd"
	"github.com/trioagent/trio/sandbox/userns"
)

// The toolchain's key is stable and its version is the go command's: the
// userns kind reads the warm base through GOCACHEPROG only from go1.24 on.
func TestToolchainKey(t *testing.T) {
	out, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	key, version, ok := sandbox.ToolchainKey(containerd.DefaultToolchainDirs)
	if !ok {
		t.Skip("no go command in the sandbox's toolchain folders")
	}
	if want := strings.TrimSpace(string(out)); version != want {
		t.Errorf("version %q, want %q", version, want)
	}
	again, _, _ := sandbox.ToolchainKey(containerd.DefaultToolchainDirs)
	if len(key) != 16 || again != key {
		t.Errorf("keys %q and %q, want the same 16 hex digits", key, again)
	}
	if _, _, ok := sandbox.ToolchainKey([]string{"/nonexistent"}); ok {
		t.Error("a toolchain was found in folders that hold none")
	}
}

// Both isolating kinds keep their warm base in the same folder, so a base
// one kind built serves the other: here the userns kind builds it, as
// root, and then a containerd run's go test must pass on it, warm (its
// overlays need the base's folders open to the sandbox user: the go
// command fails on a package the base lacks when it cannot write the index
// of its folder), and the userns kind must still use it afterwards.
func TestWarmBaseServesEveryKind(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("the containerd kind needs root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for name, err := range map[string]error{"containerd": containerd.Available(ctx, ""), "userns": userns.Available(ctx, "")} {
		if err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("CI=true and the %s sandbox is unavailable: %v", name, err)
			}
			t.Skipf("%s sandbox unavailable: %v", name, err)
		}
	}
	warm := filepath.Join(t.TempDir(), "warm")
	limits := sandbox.Limits{Timeout: 5 * time.Minute, Memory: 1 << 30, Pids: 256, Output: 64 << 10}
	module := map[string]string{
		"go.mod":    "module example.test/m\n\ngo 1.21\n",
		"m_test.go": "package m\n\nimport (\n\t\"encoding/ascii85\"\n\t\"fmt\"\n\t\"testing\"\n)\n\nfunc TestM(t *testing.T) { _ = fmt.Sprint(ascii85.MaxEncodedLen(1)) }\n",
	}
	// goTest runs go test in a new sandbox of the kind and reports whether
	// fmt was already compiled, in the run's cache.
	goTest := func(kind string) {
		t.Helper()
		ws := t.TempDir()
		for name, content := range module {
			if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		var sb sandbox.Sandbox
		var err error
		if kind == "userns" {
			sb, err = userns.New(ctx, sandbox.RunSpec{Workspace: ws, Limits: limits, Settings: userns.Config{WarmCache: warm}})
		} else {
			sb, err = containerd.New(ctx, sandbox.RunSpec{Workspace: ws, Limits: limits, Settings: containerd.Config{WarmCache: warm}})
		}
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		defer func() {
			if err := sb.Close(); err != nil {
				t.Errorf("%s: Close: %v", kind, err)
			}
		}()
		for _, argv := range [][]string{{"go", "list", "-f", "{{.Stale}}", "fmt"}, {"go", "test", "./..."}} {
			res, err := sb.Exec(ctx, sandbox.Command{Argv: argv})
			if err != nil {
				t.Fatalf("%s: %q: %v", kind, argv, err)
			}
			if res.ExitCode != 0 || argv[1] == "list" && strings.TrimSpace(res.Stdout) != "false" {
				t.Fatalf("%s: %q on the shared base: exit code %d\n%s%s", kind, argv, res.ExitCode, res.Stdout, res.Stderr)
			}
		}
	}
	goTest("userns")
	goTest("containerd")
	goTest("userns")
}

// SealBase gives a base its one form and leaves a sealed base's inodes
// alone; it refuses a file of another user's rather than adopt it. The
// folder of the bases is closed to others.
func TestSealBase(t *testing.T) {
	warm := filepath.Join(t.TempDir(), "warm")
	if err := os.MkdirAll(warm, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := sandbox.WarmDir(warm); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(warm); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("the warm cache folder: %v %v, want mode 0700", st, err)
	}
	base := filepath.Join(warm, "go-build-x")
	entry := filepath.Join(base, "ab", "entry")
	if err := os.MkdirAll(filepath.Dir(entry), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(entry, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(base, "ab", "link")); err != nil {
		t.Fatal(err)
	}
	if err := sandbox.SealBase(base, -1); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{base: 0o777, filepath.Dir(entry): 0o777, entry: 0o444} {
		if st, err := os.Lstat(p); err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want mode %v", p, st, err, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(base, "ab", "link")); err == nil {
		t.Error("SealBase left a symlink in the base")
	}
	ctime := func() syscall.Timespec {
		var st syscall.Stat_t
		if err := syscall.Lstat(entry, &st); err != nil {
			t.Fatal(err)
		}
		return st.Ctim
	}
	before := ctime()
	if err := sandbox.SealBase(base, -1); err != nil {
		t.Fatal(err)
	}
	if ctime() != before {
		t.Error("sealing a sealed base changed a file's inode")
	}
	if os.Getuid() != 0 {
		return
	}
	planted := filepath.Join(base, "ab", "planted")
	if err := os.WriteFile(planted, []byte("x"), 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(planted, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := sandbox.SealBase(base, -1); err == nil || !strings.Contains(err.Error(), planted) {
		t.Errorf("SealBase over a file of uid 65534: %v, want an error naming it", err)
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(planted, &st); err != nil || st.Uid != 65534 {
		t.Errorf("SealBase adopted a file of another user's: %v, uid %d", err, st.Uid)
	}
	if err := sandbox.SealBase(base, 65534); err != nil {
		t.Errorf("SealBase of a base the sandbox user built: %v", err)
	}
}
