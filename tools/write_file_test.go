package tools_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/trioagent/trio/tools"
)

// Only a write's own temporary files are removed after an interruption,
// anywhere in the workspace; files that merely look alike stay.
func TestRemoveInterruptedWrites(t *testing.T) {
	root := t.TempDir()
	files := map[string]bool{
		".a.txt.trio-0123456789ab.tmp":      true,
		"sub/.go.mod.trio-abcdefabcdef.tmp": true,
		"a.txt":                             false,
		".a.txt.trio-0123.tmp":              false, // too short
		".a.txt.trio-0123456789xz.tmp":      false, // not hex
		"a.txt.trio-0123456789ab.tmp":       false, // no leading dot
		".a.txt.trio-0123456789ab.tmp.bak":  false,
	}
	for name := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := tools.RemoveInterruptedWrites(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 2 {
		t.Errorf("removed %v, want the two temporary files", removed)
	}
	for name, gone := range files {
		_, err := os.Stat(filepath.Join(root, filepath.FromSlash(name)))
		if gone != (err != nil) {
			t.Errorf("%s: removed %v, want %v", name, err != nil, gone)
		}
	}
}
