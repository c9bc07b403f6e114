package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestResolveProgram: a program outside the visible folders brings its
// folders (symlinks resolved) and its script's, read-only; a bare name
// only the host's PATH finds is rewritten to its path; folders that
// would show more than the program are refused.
func TestResolveProgram(t *testing.T) {
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	pkg, bin, scripts := filepath.Join(base, "pkg"), filepath.Join(base, "bin"), filepath.Join(base, "scripts")
	for _, d := range []string{ws, pkg, bin, scripts} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(pkg, "server"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../pkg/server", filepath.Join(bin, "trio-test-server")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(scripts, "index.js"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":/usr/bin:/bin")
	home, _ := os.UserHomeDir()
	visible := []string{"/usr", "/bin"}
	rows := []struct {
		name     string
		argv     []string
		wantArgv string
		wantDirs []string
		refused  string
	}{
		{name: "toolchain program", argv: []string{"sh", "-c", "true"}, wantArgv: "sh"},
		{name: "bare name on the host's PATH", argv: []string{"trio-test-server"}, wantArgv: filepath.Join(bin, "trio-test-server"), wantDirs: []string{bin, pkg}},
		{name: "absolute symlink", argv: []string{filepath.Join(bin, "trio-test-server")}, wantArgv: filepath.Join(bin, "trio-test-server"), wantDirs: []string{bin, pkg}},
		{name: "interpreter script", argv: []string{"sh", "--", filepath.Join(scripts, "index.js")}, wantArgv: "sh", wantDirs: []string{scripts}},
		{name: "workspace program", argv: []string{filepath.Join(ws, "server")}, wantArgv: filepath.Join(ws, "server")},
		{name: "script in the home folder", argv: []string{"sh", filepath.Join(home, ".trio-test-nonexistent")}, wantArgv: "sh"},
		{name: "program in the temporary folder itself", argv: []string{filepath.Join(os.TempDir(), "x")}, refused: "shows it to no process"},
		{name: "program at the root", argv: []string{"/x"}, refused: "the root"},
		{name: "program beside the workspace", argv: []string{filepath.Join(base, "x")}, refused: "holding the workspace"},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			p, err := ResolveProgram(r.argv, DefaultPath, ws, visible, nil)
			if r.refused != "" {
				if err == nil || !strings.Contains(err.Error(), r.refused) {
					t.Fatalf("got %+v, %v; want refused (%s)", p, err, r.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Argv[0] != r.wantArgv || !slices.Equal(p.Dirs, r.wantDirs) {
				t.Errorf("got argv[0] %q dirs %q; want %q %q", p.Argv[0], p.Dirs, r.wantArgv, r.wantDirs)
			}
		})
	}
}
