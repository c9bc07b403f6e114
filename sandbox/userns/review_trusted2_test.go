package userns_test

import (
	"strings"
	"testing"

	"github.com/trioagent/trio/internal/sandboxtest"
	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/sandbox/userns"
)

// Second review of trusted builds. Each row is an attack; a failing row
// is a working attack. The five replace/go.work/import rows worked when
// the review found them (TrustedGoWorkspace skipped testdata, _ and .
// folders); it now walks every folder.
func TestReviewTrusted2(t *testing.T) {
	if asOrdinaryUser(t, "TestReviewTrusted2") {
		return
	}
	requireUserns(t)
	warm := warmFor(t)
	sb, _ := open(t, sandbox.RunSpec{Settings: userns.Config{WarmCache: warm}}, nil)
	sb.Close()
	for _, c := range []struct{ name, dir, gomod, gowork string }{
		{"replace to a _ folder holding assembly", "_dep", "replace dep => ./_dep\n", ""},
		{"replace to a testdata folder holding assembly", "testdata/dep", "replace dep => ./testdata/dep\n", ""},
		{"replace to a . folder holding assembly", ".dep", "replace dep => ./.dep\n", ""},
		{"go.work use of a _ folder holding assembly", "_dep", "", "go 1.21\n\nuse (\n\t.\n\t./_dep\n)\n"},
	} {
		t.Run(c.name, func(t *testing.T) { testTrustedIgnoredFolderAsm(t, warm, c.dir, c.gomod, c.gowork) })
	}
	t.Run("import of a _ package holding assembly", func(t *testing.T) { testTrustedUnderscorePackage(t, warm) })
	t.Run("test binary reaches a socket of the go command", func(t *testing.T) { testTrustedSocketFD(t, warm) })
}

const asmTest = "package m_test\n\nimport (\n\t\"testing\"\n\n\t\"dep\"\n)\n\nfunc TestV(t *testing.T) {\n\tif dep.V() != 1 {\n\t\tt.Fatal(\"V() =\", dep.V())\n\t}\n}\n"

// TrustedGoWorkspace skipped folders the go command ignores as package
// patterns (testdata, _x, .x), but a go.mod replace or a go.work use
// makes the go command compile a module there all the same: its
// assembly #includes a header of another folder, which the go command
// does not hash. A trusted build compiles with V 1; the Worker changes
// the header to V 2; the Critic's check reuses the old package.
func testTrustedIgnoredFolderAsm(t *testing.T, warm, dir, gomod, gowork string) {
	files := map[string]string{
		"go.mod":           "module m\n\ngo 1.21\n\nrequire dep v0.0.0\n" + gomod,
		"m_test.go":        asmTest,
		"_inc/v.h":         "#define V 1\n",
		dir + "/go.mod":    "module dep\n\ngo 1.21\n",
		dir + "/dep.go":    "package dep\n\nfunc V() int\n",
		dir + "/v_amd64.s": "#include \"textflag.h\"\n#include \"../" + strings.Repeat("../", strings.Count(dir, "/")) + "_inc/v.h\"\n\nTEXT ·V(SB),NOSPLIT,$0-8\n\tMOVQ $V, ret+0(FP)\n\tRET\n",
	}
	if gowork != "" {
		files["go.mod"] = "module m\n\ngo 1.21\n"
		files["go.work"] = gowork
	}
	sb, ws := open(t, sandbox.RunSpec{Settings: userns.Config{WarmCache: warm}}, files)
	res := run(t, sb, "go", "test", ".")
	if res.ExitCode != 0 {
		t.Fatalf("go test: %+v", res)
	}
	res = run(t, sb, "go", "list", "-export", "-f", "{{.Export}}", "dep")
	t.Logf("dep's archive: %s %s", strings.TrimSpace(res.Stdout), res.Stderr)
	sandboxtest.WriteFiles(t, ws, map[string]string{"_inc/v.h": "#define V 2\n"})
	res = reviewCheck(t, sb, "go", "test", "-count=1", ".")
	if res.ExitCode == 0 {
		t.Errorf("the check (go test -count=1) passed with dep compiled from a header that changed since:\n%s%s", res.Stdout, res.Stderr)
	}
	res = reviewCheck(t, sb, "go", "test", ".")
	if res.ExitCode == 0 {
		t.Errorf("the check (go test) passed with a result for a header that changed since:\n%s%s", res.Stdout, res.Stderr)
	}
	if res := reviewCheck(t, sb, "go", "test", "-a", "."); res.ExitCode == 0 {
		t.Errorf("premise: go test -a passed:\n%s%s", res.Stdout, res.Stderr)
	}
}

// The same through an import of m/_p: the go command compiles a package
// of a _ folder it is asked for by import path.
func testTrustedUnderscorePackage(t *testing.T, warm string) {
	sb, ws := open(t, sandbox.RunSpec{Settings: userns.Config{WarmCache: warm}}, map[string]string{
		"go.mod":       "module m\n\ngo 1.21\n",
		"m_test.go":    "package m_test\n\nimport (\n\t\"testing\"\n\n\tdep \"m/_p\"\n)\n\nfunc TestV(t *testing.T) {\n\tif dep.V() != 1 {\n\t\tt.Fatal(\"V() =\", dep.V())\n\t}\n}\n",
		"_inc/v.h":     "#define V 1\n",
		"_p/dep.go":    "package dep\n\nfunc V() int\n",
		"_p/v_amd64.s": "#include \"textflag.h\"\n#include \"../_inc/v.h\"\n\nTEXT ·V(SB),NOSPLIT,$0-8\n\tMOVQ $V, ret+0(FP)\n\tRET\n",
	})
	res := run(t, sb, "go", "test", ".")
	if res.ExitCode != 0 {
		t.Skipf("the go command does not import m/_p: %s%s", res.Stdout, res.Stderr)
	}
	sandboxtest.WriteFiles(t, ws, map[string]string{"_inc/v.h": "#define V 2\n"})
	res = reviewCheck(t, sb, "go", "test", "-count=1", ".")
	if res.ExitCode == 0 {
		t.Errorf("the check passed with m/_p compiled from a header that changed since:\n%s%s", res.Stdout, res.Stderr)
	}
}

// A test binary looks for any way to a socket of the go command or of its
// helpers (a cache server's, as trusted builds once had): fd 100 of its
// own, any socket of any process through /proc and pidfd_getfd.
func testTrustedSocketFD(t *testing.T, warm string) {
	sb, _ := open(t, sandbox.RunSpec{Settings: userns.Config{WarmCache: warm}}, map[string]string{
		"go.mod": "module m\n\ngo 1.21\n",
		"p/p_test.go": `package p

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

func TestFD(t *testing.T) {
	var got []string
	if _, err := os.Readlink("/proc/self/fd/100"); err == nil {
		got = append(got, "own fd 100")
	}
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, p := range fds {
		l, err := os.Readlink(p)
		if err != nil || len(l) < 7 || l[:7] != "socket:" {
			continue
		}
		got = append(got, "readlink "+p+" "+l)
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(p))))
		fd, _ := strconv.Atoi(filepath.Base(p))
		pfd, _, e := syscall.Syscall(434, uintptr(pid), 0, 0) // pidfd_open
		if e != 0 {
			continue
		}
		nfd, _, e := syscall.Syscall(438, pfd, uintptr(fd), 0) // pidfd_getfd
		if e == 0 {
			got = append(got, fmt.Sprintf("pidfd_getfd %d/%d -> %d", pid, fd, nfd))
		}
	}
	for _, g := range got {
		fmt.Println("REACH", g)
	}
}
`,
	})
	res := run(t, sb, "go", "test", "-v", "-count=1", "./p")
	t.Logf("%s%s", res.Stdout, res.Stderr)
	if res.ExitCode != 0 || !strings.Contains(res.Stdout, "--- PASS: TestFD") {
		t.Fatalf("the test binary did not run: %+v", res)
	}
	for _, l := range strings.Split(res.Stdout, "\n") {
		if strings.HasPrefix(l, "REACH") && (strings.Contains(l, "pidfd_getfd") || strings.Contains(l, "own fd")) {
			t.Errorf("a test binary reached a socket of the command: %s", l)
		}
	}
}
