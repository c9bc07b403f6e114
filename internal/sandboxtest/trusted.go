package sandboxtest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trioagent/trio/sandbox"
)

// hostileTest is a test that tries, from inside the test binary, every way
// to change what the go command running it builds, caches or reads back:
// write the workspace, plant a file among the trusted builds or in the go
// command's work folder, open the go command's descriptors (its pipes to
// the cache program) through /proc, and signal it. It prints "DID: " for
// each that worked, and "TEMP ok" when its own TempDir works.
const hostileTest = `package p

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestHostile(t *testing.T) {
	did := func(what string, err error) {
		if err == nil {
			fmt.Println("DID: " + what)
		}
	}
	did("write the workspace", os.WriteFile("p.go", []byte("package p\n\nfunc P() int { return 2 }\n"), 0o644))
	// Where each kind's trusted builds are, or their go command's cache:
	// a forged file, and an action entry of the cache's format.
	action := strings.Repeat("f", 64)
	entry := fmt.Sprintf("v1 %s %s %20d %20d\n", action, strings.Repeat("0", 64), 1, 1)
	for _, dir := range []string{"/.trio/trusted", "/.trio/gocache/go-build"} {
		did("plant a trusted build in "+dir, os.WriteFile(filepath.Join(dir, "forged"), []byte("x"), 0o644))
		os.Mkdir(filepath.Join(dir, "ff"), 0o777)
		did("forge an action entry in "+dir, os.WriteFile(filepath.Join(dir, "ff", action+"-a"), []byte(entry), 0o644))
	}
	work := filepath.Dir(filepath.Dir(os.Args[0]))
	did("write the work folder", os.WriteFile(filepath.Join(work, "forged"), []byte("x"), 0o644))
	fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", os.Getppid()))
	for _, fd := range fds {
		if f, err := os.OpenFile(fd, os.O_WRONLY, 0); err == nil {
			f.Close()
			did("open the go command's descriptor", nil)
			break
		}
	}
	did("signal the go command", syscall.Kill(os.Getppid(), 0))
	if err := os.WriteFile(filepath.Join(t.TempDir(), "f"), []byte("x"), 0o644); err == nil {
		fmt.Println("TEMP ok")
	}
}
`

var hostileModule = map[string]string{
	"go.mod":      "module m\n\ngo 1.21\n",
	"p/p.go":      "package p\n\nfunc P() int { return 1 }\n",
	"p/p_test.go": hostileTest,
}

// TrustedOpener opens a sandbox of one kind with trusted builds (see
// sandbox.TrustedGo) on a workspace holding files, and returns it, its
// workspace and the host folder of its trusted builds.
type TrustedOpener func(t *testing.T, files map[string]string) (sb sandbox.Sandbox, ws, trusted string)

// TrustedBuildConfinesTests: a trusted build (sandbox.TrustedGo: go test, run as its argv) runs its
// test binaries confined apart from the go command: a test cannot write
// the workspace, the trusted builds or the go command's work folder, nor
// reach the go command through /proc or a signal, though it has a
// TempDir of its own. The same test in an ordinary command (through a
// shell) does all of that: the test's premise.
//
// An ordinary command cannot change the trusted builds either.
func TrustedBuildConfinesTests(t *testing.T, open TrustedOpener) {
	sb, ws, trusted := open(t, hostileModule)
	res := run(t, sb, "go", "test", "-v", "./p")
	if res.ExitCode != 0 || !strings.Contains(res.Stdout, "TEMP ok") {
		t.Fatalf("the hostile test did not run, or had no TempDir, in a trusted build:\n%s%s", res.Stdout, res.Stderr)
	}
	if strings.Contains(res.Stdout, "DID: ") {
		t.Errorf("a test binary in a trusted build reached past its confinement:\n%s", res.Stdout)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "p", "p.go")); string(b) != hostileModule["p/p.go"] {
		t.Errorf("the workspace changed: p.go is %q", b)
	}
	for _, f := range []string{"forged", filepath.Join("ff", strings.Repeat("f", 64)+"-a")} {
		if _, err := os.Stat(filepath.Join(trusted, f)); err == nil {
			t.Errorf("a test planted %s among the trusted builds", f)
		}
	}
	if entries, _ := os.ReadDir(trusted); len(entries) == 0 {
		t.Error("the trusted build stored nothing among the trusted builds")
	}

	before := ContentHash(t, trusted)
	res = run(t, sb, "sh", "-c", `for d in /.trio/trusted /.trio/gocache/go-build; do
for f in $(find $d -type f 2>/dev/null | head -3); do
for try in "echo x >> $f" "echo x > $f" "rm -f $f" "mv $f $f.moved" "chmod 777 $f"; do sh -c "$try" 2>/dev/null && echo "CHANGED: $try"; done
done
for try in "chmod 777 $d" "mkdir $d/00" "touch $d/forged"; do sh -c "$try" 2>/dev/null && echo "CHANGED: $try"; done
GOCACHEPROG= GOCACHE=$d go build -a fmt >/dev/null 2>&1
done; echo tried`)
	if !strings.Contains(res.Stdout, "tried") || strings.Contains(res.Stdout, "CHANGED") {
		t.Errorf("an ordinary command changed the trusted builds:\n%s%s", res.Stdout, res.Stderr)
	}
	if after := ContentHash(t, trusted); after != before {
		t.Errorf("the trusted builds changed under an ordinary command: %s, was %s", after, before)
	}

	res = run(t, sb, "sh", "-c", "go test -v ./p")
	for _, want := range []string{"DID: write the workspace", "DID: write the work folder", "DID: open the go command's descriptor", "DID: signal the go command"} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("in an ordinary command the test did not %q (the test's premise):\n%s%s", strings.TrimPrefix(want, "DID: "), res.Stdout, res.Stderr)
		}
	}
}

// The Critic's check reuses the packages the Worker's trusted builds
// compiled, through Reset, and never a test result: every check runs every
// test again (sandbox.CheckEnv's -count=1), since a test can read inputs
// the go command does not record. What an ordinary command compiled the
// check does not reuse, nor what a go test compiled while a started
// process could change the workspace. Run by the kind's warm-cache test.
func CheckReusesTrustedBuilds(t *testing.T, open TrustedOpener) {
	files := map[string]string{
		"go.mod":      "module m\n\ngo 1.21\n",
		"p/p.go":      "package p\n\nfunc P() int { return 1 }\n",
		"p/p_test.go": "package p\n\nimport \"testing\"\n\nfunc TestP(t *testing.T) {\n\tif P() != 1 {\n\t\tt.Fatal(P())\n\t}\n}\n",
	}
	// check runs the Critic's go test with -x, which prints every tool the
	// go command runs: a package taken from the cache is not compiled.
	type checked struct {
		out      string
		compiled bool // m/p was compiled, not reused
		cached   bool // a test result was reused
	}
	check := func(sb sandbox.Sandbox) checked {
		t.Helper()
		if err := sb.(sandbox.Resetter).Reset(context.Background()); err != nil {
			t.Fatal(err)
		}
		res, err := sb.Exec(context.Background(), sandbox.Command{Argv: []string{"go", "test", "-x", "./..."}, Check: true})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("check: %v %+v", err, res)
		}
		return checked{res.Stdout + res.Stderr, strings.Contains(res.Stderr, " -p m/p "), strings.Contains(res.Stdout, "(cached)")}
	}

	sb, ws, _ := open(t, files)
	if res := run(t, sb, "go", "test", "./..."); res.ExitCode != 0 {
		t.Fatalf("%+v", res)
	}
	c := check(sb)
	if c.compiled {
		t.Errorf("the check did not reuse the package the trusted build compiled:\n%s", c.out)
	}
	if c.cached {
		t.Errorf("the check reused the trusted build's test result:\n%s", c.out)
	}
	// A changed package is compiled again, and the check's own build is
	// reused by the next check.
	WriteFiles(t, ws, map[string]string{"p/p.go": "package p\n\nvar one = []int{1}\n\nfunc P() int { return one[0] }\n"})
	if c := check(sb); !c.compiled || c.cached {
		t.Errorf("the check reused a build or result for sources that changed since:\n%s", c.out)
	}
	if c := check(sb); c.compiled || c.cached {
		t.Errorf("the check did not reuse its own earlier build, or reused its test result:\n%s", c.out)
	}

	ordinary, _, _ := open(t, files)
	if res := run(t, ordinary, "sh", "-c", "go test ./... && go test ./..."); res.ExitCode != 0 || !strings.Contains(res.Stdout, "(cached)") {
		t.Fatalf("an ordinary command's result is not cached for the next (the test's premise): %+v", res)
	}
	if c := check(ordinary); !c.compiled || c.cached {
		t.Errorf("the check reused an ordinary command's build or test result:\n%s", c.out)
	}

	started, _, _ := open(t, files)
	p := Start(t, started.(sandbox.Starter), "sleep", "600")
	if res := run(t, started, "go", "test", "./..."); res.ExitCode != 0 {
		t.Fatalf("%+v", res)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if c := check(started); !c.compiled || c.cached {
		t.Errorf("the check reused a build or result from a go test that ran beside a started process:\n%s", c.out)
	}
}

func run(t *testing.T, sb sandbox.Sandbox, argv ...string) sandbox.Result {
	t.Helper()
	res, err := sb.Exec(context.Background(), sandbox.Command{Argv: argv})
	if err != nil {
		t.Fatalf("Exec %q: %v", argv, err)
	}
	return res
}
