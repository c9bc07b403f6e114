package sandboxtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// BuildMCPServer builds testdata/mcpserver, an MCP stdio server made with
// the go-sdk's server API ("echo" says its text back, "read" returns a
// file's content), as a static executable at dst, so that it runs in any
// sandbox kind.
func BuildMCPServer(t testing.TB, dst string) {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	cmd := exec.Command("go", "build", "-o", dst, ".")
	cmd.Dir = filepath.Join(filepath.Dir(file), "testdata", "mcpserver")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the MCP server: %v\n%s", err, out)
	}
	if err := os.Chmod(dst, 0o755); err != nil {
		t.Fatal(err)
	}
}
