package userns_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trioagent/trio/internal/sandboxtest"
	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/sandbox/userns"
)

// Attacks on trusted builds (sandbox.TrustedGo): can the Worker make a
// later Critic check (after Reset) reuse a compiled package or a test
// result that the toolchain did not produce from the workspace's current
// sources? As an ordinary user, sharing one warm base. Each row was a
// working attack when the review found it. The fixes: -o makes a go
// command an ordinary one (sandbox.TrustedGo), what a trusted build's go
// command leaves in the trusted builds is kept only when it has the
// cache's form (gocacheprog.Tree.Check), and a workspace holding
// assembly, C or cgo sources, whose #includes the go command does not
// hash, has no trusted builds (sandbox.TrustedGoWorkspace).
func TestReviewTrusted(t *testing.T) {
	if asOrdinaryUser(t, "TestReviewTrusted") {
		return
	}
	requireUserns(t)
	warm := warmFor(t)
	sb, _ := open(t, sandbox.RunSpec{Settings: userns.Config{WarmCache: warm}}, nil)
	sb.Close()
	t.Run("go build -o writes into the trusted store", func(t *testing.T) { testTrustedOutputIntoStore(t, warm) })
	t.Run("go build -o overwrites a compiled package in the store", func(t *testing.T) { testTrustedOverwriteArchive(t, warm, false) })
	t.Run("go build -o through a workspace symlink overwrites a compiled package", func(t *testing.T) { testTrustedOverwriteArchive(t, warm, true) })
	t.Run("assembly #include outside the package is not hashed", func(t *testing.T) { testTrustedAsmInclude(t, warm) })
	t.Run("cgo #include outside the package is not hashed", func(t *testing.T) { testTrustedCgoInclude(t, warm) })
	t.Run("a test binary changes the base's files through the trusted builds", func(t *testing.T) { testTrustedTestTouchesBase(t, warm) })
}

// The trusted builds hold hard links to the warm base's files, which the
// run's user owns: a test binary in a trusted build, where Landlock does
// not let it write the trusted builds, still may change a file's mode and
// times (Landlock does not cover them). It must not change a base file's
// content, keep a link to one, or leave a mode or time changed after the
// build.
func testTrustedTestTouchesBase(t *testing.T, warm string) {
	bases, _ := filepath.Glob(filepath.Join(warm, "go-build-*[^k]"))
	if len(bases) != 1 {
		t.Fatalf("warm cache folder holds %v, want one base", bases)
	}
	before := fullStateAtStart(t, bases[0])
	sb, _ := open(t, sandbox.RunSpec{Settings: userns.Config{WarmCache: warm}}, map[string]string{
		"go.mod": "module m\n\ngo 1.21\n",
		"p/p_test.go": `package p

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestBase(t *testing.T) {
	files, _ := filepath.Glob("/.trio/trusted/??/*")
	if len(files) > 40 {
		files = files[:40]
	}
	for _, f := range files {
		if os.Chmod(f, 0o666) == nil {
			fmt.Println("CHMOD", f)
		}
		os.Chtimes(f, time.Unix(1, 0), time.Unix(1, 0))
		if w, err := os.OpenFile(f, os.O_WRONLY|os.O_APPEND, 0); err == nil {
			w.Write([]byte("FORGED"))
			w.Close()
			fmt.Println("DID: write", f)
		}
		if os.Truncate(f, 0) == nil {
			fmt.Println("DID: truncate", f)
		}
		if os.Link(f, filepath.Join(t.TempDir(), "l")) == nil {
			fmt.Println("DID: link", f)
		}
	}
	fmt.Println("TRIED", len(files))
}
`,
	})
	res := run(t, sb, "go", "test", "-v", "-count=1", "./p")
	if res.ExitCode != 0 || !strings.Contains(res.Stdout, "TRIED 40") || !strings.Contains(res.Stdout, "CHMOD") {
		t.Fatalf("the test did not run in a trusted build, or could not change a mode there (the test's premise): %+v", res)
	}
	if strings.Contains(res.Stdout, "DID:") {
		t.Errorf("a test binary in a trusted build changed the base's files:\n%s", res.Stdout)
	}
	if after := fullState(t, bases[0]); after != before {
		t.Error("after a trusted build whose test changed modes and times, the base is not as it was")
	}
	// The next command finds the base whole.
	if res := run(t, sb, "go", "list", "-f", "{{.Stale}}", "fmt"); strings.TrimSpace(res.Stdout) != "false" {
		t.Errorf("after the build the standard library is stale: %+v", res)
	}
}

// check resets the sandbox and runs argv as a Critic check.
func reviewCheck(t *testing.T, sb *userns.Sandbox, argv ...string) sandbox.Result {
	t.Helper()
	if err := sb.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	res, err := sb.Exec(context.Background(), sandbox.Command{Argv: argv, Check: true})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// -o is in trustedgo.yaml, and a trusted build's go command (not only its
// cache program) could write /.trio/trusted: go build -o put a file there
// that the cache program never stored.
func testTrustedOutputIntoStore(t *testing.T, warm string) {
	state := t.TempDir()
	sb, _ := open(t, sandbox.RunSpec{Settings: userns.Config{WarmCache: warm, StateDir: state}}, map[string]string{
		"go.mod":      "module m\n\ngo 1.21\n",
		"cmd/main.go": "package main\n\nfunc main() {}\n",
	})
	res := run(t, sb, "go", "build", "-o", "/.trio/trusted/forged", "./cmd")
	t.Logf("go build -o /.trio/trusted/forged: exit %d %s", res.ExitCode, res.Stderr)
	forged, _ := filepath.Glob(filepath.Join(treeDir(t, warm, state), "forged"))
	if len(forged) != 0 {
		t.Errorf("a trusted build's go command wrote %s into the trusted store (go build -o)", forged[0])
	}
}

// The Worker's package P really returns 2 and its test wants 1. The
// Worker compiles it (trusted build), learns the compiled archive's file
// in the store (go list -export), compiles the good version with -o at
// that file, so the store's archive for the bad sources holds the good
// code (same size: only an immediate differs), and puts the bad sources
// back. The Critic's check then links the good code for the bad sources
// and passes.
func testTrustedOverwriteArchive(t *testing.T, warm string, viaSymlink bool) {
	const (
		good = "package p\n\n//go:noinline\nfunc P() int { return 1 }\n"
		bad  = "package p\n\n//go:noinline\nfunc P() int { return 2 }\n"
	)
	sb, ws := open(t, sandbox.RunSpec{Settings: userns.Config{WarmCache: warm}}, map[string]string{
		"go.mod":      "module m\n\ngo 1.21\n",
		"p/p.go":      bad,
		"p/p_test.go": "package p_test\n\nimport (\n\t\"testing\"\n\n\t\"m/p\"\n)\n\nfunc TestP(t *testing.T) {\n\tif p.P() != 1 {\n\t\tt.Fatal(\"P() =\", p.P())\n\t}\n}\n",
	})
	if res := run(t, sb, "go", "build", "./p"); res.ExitCode != 0 {
		t.Fatalf("go build: %+v", res)
	}
	res := run(t, sb, "go", "list", "-export", "-f", "{{.Export}}", "./p")
	export := strings.TrimSpace(res.Stdout)
	if res.ExitCode != 0 || !strings.HasPrefix(export, "/.trio/trusted/") {
		t.Fatalf("the compiled package is not in the trusted store: %+v", res)
	}
	sandboxtest.WriteFiles(t, ws, map[string]string{"p/p.go": good})
	target := export
	if viaSymlink {
		if res := run(t, sb, "ln", "-s", export, "out.a"); res.ExitCode != 0 {
			t.Fatalf("ln: %+v", res)
		}
		target = "out.a"
	}
	res = run(t, sb, "go", "build", "-o", target, "./p")
	t.Logf("go build -o %s ./p: exit %d %s", target, res.ExitCode, res.Stderr)
	sandboxtest.WriteFiles(t, ws, map[string]string{"p/p.go": bad})
	os.Remove(filepath.Join(ws, "out.a"))

	res = reviewCheck(t, sb, "go", "test", "./p")
	if res.ExitCode == 0 {
		t.Errorf("the check passed a package whose test fails on its sources (P returns 2):\n%s%s", res.Stdout, res.Stderr)
	}
	// Premise: a build from the sources fails.
	res = reviewCheck(t, sb, "go", "test", "-a", "./p")
	if res.ExitCode == 0 {
		t.Errorf("premise: go test -a passed:\n%s%s", res.Stdout, res.Stderr)
	}
}

// The go command hashes a package's own files only; an assembly file may
// #include a header from another folder of the workspace. A trusted
// build compiles with V 1; the Worker then changes the header to V 2,
// which fails the test; the Critic's check reuses the compiled package
// (and the test result) of the old header.
func testTrustedAsmInclude(t *testing.T, warm string) {
	sb, ws := open(t, sandbox.RunSpec{Settings: userns.Config{WarmCache: warm}}, map[string]string{
		"go.mod":        "module m\n\ngo 1.21\n",
		"inc/v.h":       "#define V 1\n",
		"p/p.go":        "package p\n\nfunc V() int\n",
		"p/v_amd64.s":   "#include \"textflag.h\"\n#include \"../inc/v.h\"\n\nTEXT ·V(SB),NOSPLIT,$0-8\n\tMOVQ $V, ret+0(FP)\n\tRET\n",
		"p/p_test.go":   "package p_test\n\nimport (\n\t\"testing\"\n\n\t\"m/p\"\n)\n\nfunc TestV(t *testing.T) {\n\tif p.V() != 1 {\n\t\tt.Fatal(\"V() =\", p.V())\n\t}\n}\n",
		"inc/README.md": "headers\n",
	})
	if res := run(t, sb, "go", "test", "./p"); res.ExitCode != 0 {
		t.Fatalf("trusted go test: %+v", res)
	}
	sandboxtest.WriteFiles(t, ws, map[string]string{"inc/v.h": "#define V 2\n"})
	res := reviewCheck(t, sb, "go", "test", "-count=1", "./p")
	if res.ExitCode == 0 {
		t.Errorf("the check (go test -count=1) passed with a compiled package of a header that changed since:\n%s%s", res.Stdout, res.Stderr)
	}
	res = reviewCheck(t, sb, "go", "test", "./p")
	if res.ExitCode == 0 {
		t.Errorf("the check (go test) passed with a result for a header that changed since:\n%s%s", res.Stdout, res.Stderr)
	}
	if res := reviewCheck(t, sb, "go", "test", "-a", "./p"); res.ExitCode == 0 {
		t.Errorf("premise: go test -a passed:\n%s%s", res.Stdout, res.Stderr)
	}
}

// The same with cgo: a header of another folder, through #cgo CFLAGS.
func testTrustedCgoInclude(t *testing.T, warm string) {
	sb, ws := open(t, sandbox.RunSpec{Limits: sandbox.Limits{Timeout: 120e9}, Settings: userns.Config{WarmCache: warm}}, map[string]string{
		"go.mod":      "module m\n\ngo 1.21\n",
		"inc/v.h":     "#define V 1\n",
		"p/p.go":      "package p\n\n// #cgo CFLAGS: -I${SRCDIR}/../inc\n// #include \"v.h\"\n// static int trio_v(void) { return V; }\nimport \"C\"\n\nfunc V() int { return int(C.trio_v()) }\n",
		"p/p_test.go": "package p_test\n\nimport (\n\t\"testing\"\n\n\t\"m/p\"\n)\n\nfunc TestV(t *testing.T) {\n\tif p.V() != 1 {\n\t\tt.Fatal(\"V() =\", p.V())\n\t}\n}\n",
	})
	if res := run(t, sb, "go", "test", "./p"); res.ExitCode != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and cgo does not build here (gcc is a CI dependency): %+v", res)
		}
		t.Skipf("no cgo here: %+v", res)
	}
	sandboxtest.WriteFiles(t, ws, map[string]string{"inc/v.h": "#define V 2\n"})
	res := reviewCheck(t, sb, "go", "test", "./p")
	if res.ExitCode == 0 {
		t.Errorf("the check passed with a result for a header that changed since:\n%s%s", res.Stdout, res.Stderr)
	}
	if res := reviewCheck(t, sb, "go", "test", "-a", "./p"); res.ExitCode == 0 {
		t.Errorf("premise: go test -a passed:\n%s%s", res.Stdout, res.Stderr)
	}
}
