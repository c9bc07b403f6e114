package sandbox_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/sandbox/containerd"
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
