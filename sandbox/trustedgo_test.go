package sandbox_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trioagent/trio/internal/sandboxtest"
	"github.com/trioagent/trio/sandbox"
)

func TestTrustedGo(t *testing.T) {
	tests := []struct {
		argv string
		want bool
	}{
		{"go test ./...", true},
		{"go test -json ./md/", true},
		{"go test", true},
		{"go vet ./...", true},
		{"go build ./cmd/x", true},
		{"go build -o bin/x ./cmd/x", false},
		{"go test -c ./p", false},
		{"go test ./a ./b -run TestX -count=1 -v", true},
		{"go test -race -tags integration -timeout 30s ./...", true},
		{"go test --tags=x ./...", true},
		{"go test ./x -args -exec evil -update", true},
		// A flag that could run a workspace program as the toolchain, or
		// one the table does not know.
		{"go test -exec ./evil ./...", false},
		{"go test -exec=./evil ./...", false},
		{"go test -toolexec ./evil ./...", false},
		{"go test -overlay=o.json ./...", false},
		{"go test -vettool=./evil ./...", false},
		{"go test -gcflags=all=-N ./...", false},
		{"go test -ldflags=-extld=./evil ./...", false},
		{"go test -modfile=evil.mod ./...", false},
		{"go test -C dir ./...", false},
		{"go test ./... -update", false},
		{"go test ---v ./...", false},
		// A value missing, or one that is a flag.
		{"go test -run", false},
		{"go test -run -exec=./evil ./...", false},
		{"go test - ./...", false},
		// Other subcommands and programs.
		{"go run .", false},
		{"go generate ./...", false},
		{"go", false},
		{"./go test ./...", false}, // the workspace's program, not the toolchain's
		{"/usr/local/go/bin/go test ./...", false},
		{"gofmt -l .", false},
	}
	for _, tt := range tests {
		if got := sandbox.TrustedGo(strings.Fields(tt.argv)); got != tt.want {
			t.Errorf("TrustedGo(%s) = %v, want %v", tt.argv, got, tt.want)
		}
	}
}

func TestTrustedGoWorkspace(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		links map[string]string // name: target
		want  bool
	}{
		{"go only", map[string]string{"go.mod": "module m\n", "p/p.go": "package p\n", "p/p_test.go": "package p\n", "README.md": "x"}, nil, true},
		{"assembly", map[string]string{"p/p.go": "package p\n", "p/v_amd64.s": "#include \"../inc/v.h\"\n"}, nil, false},
		{"a header anywhere", map[string]string{"p/p.go": "package p\n", "inc/v.h": "#define V 1\n"}, nil, false},
		{"cgo", map[string]string{"p/p.go": "package p\n\n// #include \"../inc/v.txt\"\nimport \"C\"\n"}, nil, false},
		{"cgo among imports", map[string]string{"p/p.go": "package p\n\nimport (\n\t\"fmt\"\n\t\"C\"\n)\n"}, nil, false},
		{"a prebuilt object", map[string]string{"p/p.go": "package p\n", "p/x_amd64.syso": "x"}, nil, false},
		// Folders the go command ignores.
		// Folders ./... leaves out, which a replace line or an import can
		// still name.
		{"testdata", map[string]string{"p/p.go": "package p\n", "p/testdata/x.c": "x"}, nil, false},
		{"a _ folder", map[string]string{"p/p.go": "package p\n", "_dep/y.s": "x"}, nil, false},
		{"a . folder", map[string]string{"p/p.go": "package p\n", ".dep/c.go": "package dep\n\nimport \"C\"\n"}, nil, false},
		// Symlinks: the go command follows them.
		{"a symlinked assembly file", map[string]string{"p/p.go": "package p\n", "_src/v.txt": "x"}, map[string]string{"p/v_amd64.s": "../_src/v.txt"}, false},
		{"a symlink to a header", map[string]string{"p/p.go": "package p\n", "_src/v.h": "x"}, map[string]string{"p/v": "../_src/v.h"}, false},
		{"a symlinked cgo file", map[string]string{"p/p.go": "package p\n", "_src/c.txt": "package p\n\nimport \"C\"\n"}, map[string]string{"p/c.go": "../_src/c.txt"}, false},
		{"a symlinked folder", map[string]string{"p/p.go": "package p\n", "_src/q/q.go": "package q\n"}, map[string]string{"q": "_src/q"}, false},
		{"a symlinked Go file", map[string]string{"p/p.go": "package p\n", "_src/x.txt": "package p\n"}, map[string]string{"p/x.go": "../_src/x.txt"}, true},
	}
	for _, tt := range tests {
		dir := t.TempDir()
		sandboxtest.WriteFiles(t, dir, tt.files)
		for name, target := range tt.links {
			if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
		if got := sandbox.TrustedGoWorkspace(dir); got != tt.want {
			t.Errorf("%s: TrustedGoWorkspace = %v, want %v", tt.name, got, tt.want)
		}
	}
}
