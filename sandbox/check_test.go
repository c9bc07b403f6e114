package sandbox_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trioagent/trio/sandbox"
)

// A folder a sandbox keeps apart (the warm cache, the module cache, the
// state folder) may not be the workspace or inside it, also through a
// symlink or before it exists; beside it or above it is fine.
func TestOutsideWorkspace(t *testing.T) {
	root := t.TempDir()
	ws := filepath.Join(root, "home")
	if err := os.MkdirAll(filepath.Join(ws, ".cache"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(ws, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		bad  bool
	}{
		{filepath.Join(ws, ".cache", "trio"), true},           // not made yet
		{filepath.Join(root, "link", ".cache", "trio"), true}, // through a symlink
		{ws, true}, // the workspace itself
		{filepath.Join(root, "elsewhere"), false}, // beside it
		{root, false},   // above it
		{"none", false}, // turned off
		{filepath.Join(root, "home-other", "trio"), false}, // a sibling sharing the prefix
	}
	for _, tt := range tests {
		err := sandbox.OutsideWorkspace(ws, sandbox.Folder{Name: "warm build cache", Path: tt.path})
		if tt.bad != (err != nil) {
			t.Errorf("%s: %v, want an error: %v", tt.path, err, tt.bad)
		}
		if err != nil && (!strings.Contains(err.Error(), "warm build cache") || !strings.Contains(err.Error(), tt.path)) {
			t.Errorf("%s: the error does not name the folder: %v", tt.path, err)
		}
	}
}
