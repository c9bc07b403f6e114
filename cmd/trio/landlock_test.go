package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trioagent/trio/sandbox/landlock"
)

// On a machine with neither bwrap nor containerd, `trio demo` as an
// ordinary user runs isolated with the landlock kind, asks nothing, and
// exits 0: what a fresh machine with only Go gets. PATH is a folder of
// links to the host's programs without bwrap; containerd's address leads
// nowhere. Run as root, the demo runs as nobody (setpriv).
func TestDemoLandlockWithoutBwrapOrContainerd(t *testing.T) {
	if err := landlock.Available(context.Background()); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and Landlock is unavailable: %v", err)
		}
		t.Skipf("landlock unavailable: %v", err)
	}
	base, err := os.MkdirTemp("/tmp", "trio-landlock-demo-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	bins := filepath.Join(base, "bin")
	os.Mkdir(bins, 0o755)
	for _, dir := range []string{"/usr/bin", "/bin"} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if e.Name() != "bwrap" {
				os.Symlink(filepath.Join(dir, e.Name()), filepath.Join(bins, e.Name()))
			}
		}
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	self := filepath.Join(base, "trio")
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(self, b, 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{self, "demo", "--quiet"}
	if os.Getuid() == 0 {
		if err := os.Chown(base, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		args = append([]string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = base
	cmd.Env = []string{"PATH=" + filepath.Dir(goBin) + ":" + bins, "HOME=" + base, "TMPDIR=" + base,
		"TRIO_CONTAINERD_ADDRESS=" + filepath.Join(base, "no-containerd.sock")}
	var stderr bytes.Buffer
	cmd.Stderr, cmd.Stdout = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("trio demo: %v\n%s", err, stderr.String())
	}
	for _, want := range []string{"COMPLETED", "sandbox landlock; enforced:", "every process of a command killed"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stderr.String())
		}
	}
	if strings.Contains(stderr.String(), "not isolated") {
		t.Errorf("the demo ran without isolation:\n%s", stderr.String())
	}
}
