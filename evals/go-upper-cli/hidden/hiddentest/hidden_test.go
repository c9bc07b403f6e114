package hiddentest

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestHiddenFlags(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "upper")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-n")
	cmd.Stdin = strings.NewReader("a\nb\n")
	out, err := cmd.Output()
	if err != nil || string(out) != "1\tA\n2\tB\n" {
		t.Errorf("upper -n: %q, %v", out, err)
	}
	var ee *exec.ExitError
	if err := exec.Command(bin, "-x").Run(); !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Errorf("upper -x: %v, want exit status 2", err)
	}
}
