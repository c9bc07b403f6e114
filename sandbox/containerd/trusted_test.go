package containerd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/trioagent/trio/internal/sandboxtest"
	"github.com/trioagent/trio/sandbox"
	"golang.org/x/sys/unix"
)

// trustedOpener opens containerd sandboxes with trusted builds: the exec
// server, the warm base and Landlock are all required, under CI=true
// above all.
func trustedOpener(t *testing.T, files map[string]string) (sandbox.Sandbox, string, string) {
	ws := t.TempDir()
	sandboxtest.WriteFiles(t, ws, files)
	s := newSandbox(t, sandbox.RunSpec{Workspace: ws})
	if s.trustedMounts() == nil {
		t.Fatalf("no trusted builds: exec server %v, warm base %q, Landlock ABI %d", s.exe != "", s.warmBase, s.landlock)
	}
	return s, ws, s.trustedDir()
}

// A trusted build's test binaries run in the nest: they cannot write the
// workspace, the trusted builds or go's work folder, nor reach the go
// command; an ordinary command cannot write the trusted builds, which
// init owns. The same test through a shell does it all (the premise).
func TestTrustedBuildConfinesTests(t *testing.T) {
	sandboxtest.TrustedBuildConfinesTests(t, trustedOpener)
}

// The Critic's checks reuse the Worker's trusted builds and results
// through Reset (a new container), and nothing else.
func TestCheckReusesTrustedBuilds(t *testing.T) {
	sandboxtest.CheckReusesTrustedBuilds(t, trustedOpener)
}

// The helper commands may execute is not a way into the program's main:
// started from its place other than as a helper, it exits at once, and
// commands cannot read it.
func TestHelperRunsNoMain(t *testing.T) {
	s := newSandbox(t, sandbox.RunSpec{})
	if s.exe == "" || s.helper == "" {
		t.Fatal("no helper in the container")
	}
	for _, argv := range [][]string{{"/.trio/init"}, {"/.trio/init", "-test.run=.", "-test.v"}, {"/.trio/nest"}, {"python3", "-c", "import os; os.execv(\"/.trio/init\", [\"trio\", \"--help\"])"}} {
		res := run(t, s, argv...)
		if res.ExitCode != 125 || res.Stdout != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q: want the helper's refusal", argv, res.ExitCode, res.Stdout, res.Stderr)
		}
	}
	if res := run(t, s, "sh", "-c", "cat /.trio/init >/dev/null"); res.ExitCode == 0 {
		t.Error("a command read the helper")
	}
	if st, err := os.Stat(s.helper); err != nil || st.Mode().Perm() != 0o111 {
		t.Errorf("helper copy: %v %v", st, err)
	}
}

// The trusted builds' overlay is there only while a trusted build runs:
// before and after, in every box, including a spare that started while a
// build ran (a container made then would keep a writable copy of the
// overlay that the unmount does not reach), /.trio/gocache is an empty
// folder no command can write, and what the builds stored stays put.
func TestTrustedOverlayOnlyDuringBuild(t *testing.T) {
	sb, _, trusted := trustedOpener(t, map[string]string{
		"go.mod":      "module m\n\ngo 1.21\n",
		"p/p.go":      "package p\n\nfunc P() int { return 1 }\n",
		"p/p_test.go": "package p\n\nimport (\n\t\"testing\"\n\t\"time\"\n)\n\nfunc TestP(t *testing.T) {\n\ttime.Sleep(500 * time.Millisecond)\n\tif P() != 1 {\n\t\tt.Fatal(P())\n\t}\n}\n",
	})
	s := sb.(*Sandbox)
	// What is mounted there must be the bind of the mount point alone,
	// with nothing (a copy of an overlay) mounted in it.
	check := `ls -A /.trio/gocache/go-build 2>&1; for d in /.trio/gocache /.trio/gocache/go-build; do
touch $d/x 2>/dev/null && echo WROTE; mkdir $d/00 2>/dev/null && echo WROTE; done
grep -c ' /.trio/gocache[ /]' /proc/self/mountinfo`
	for i := range 3 {
		if err := s.Reset(context.Background()); err != nil {
			t.Fatal(err)
		}
		// The box's second command, this build, starts the spare: it
		// starts while the build runs.
		run(t, s, "true")
		if res := run(t, s, "go", "test", "-count=1", "./p"); res.ExitCode != 0 {
			t.Fatalf("round %d: trusted build: %s%s", i, res.Stdout, res.Stderr)
		}
		before := sandboxtest.ContentHash(t, trusted)
		for _, reset := range []bool{false, true} {
			if reset {
				if err := s.Reset(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			res := run(t, s, "sh", "-c", check)
			if res.Stdout != "1\n" {
				t.Errorf("round %d (after Reset: %v): between trusted builds /.trio/gocache holds or takes more than an empty folder:\n%s%s", i, reset, res.Stdout, res.Stderr)
			}
		}
		if after := sandboxtest.ContentHash(t, trusted); after != before {
			t.Errorf("round %d: the trusted builds changed between builds", i)
		}

	}
	if entries, _ := os.ReadDir(trusted); len(entries) < 2 {
		t.Errorf("the trusted builds stored %d entries", len(entries))
	}
}

// The copies of this executable that containers bind (see exeCopy) are
// made once per executable and stay while a sandbox holds them; the
// copies of other executables (an earlier trio's, a rebuilt test
// binary's) go when no sandbox holds them, so the state folder does not
// fill with them.
func TestOldExecutableCopiesPruned(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	stale := []string{"helper-1-1", "init-65533-1-1", "init-65532-1-1"}
	for _, n := range append(stale, "helper-2-2") {
		if err := os.WriteFile(filepath.Join(state, n), []byte("old"), 0o500); err != nil {
			t.Fatal(err)
		}
	}
	held, err := os.Open(filepath.Join(state, "helper-2-2"))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := unix.Flock(int(held.Fd()), unix.LOCK_SH); err != nil {
		t.Fatal(err)
	}
	s := newSandbox(t, sandbox.RunSpec{Settings: Config{StateDir: state}})
	if s.exe == "" {
		t.Fatal("no exec server")
	}
	for _, n := range []string{"helper-1-1", fmt.Sprintf("init-%d-1-1", s.initUID)} {
		if _, err := os.Stat(filepath.Join(state, n)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: %v, want it removed", n, err)
		}
	}
	if _, err := os.Stat(filepath.Join(state, "helper-2-2")); err != nil {
		t.Errorf("a held copy was removed: %v", err)
	}
	for _, p := range []string{s.exe, s.helper} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("this executable's copy: %v", err)
		}
	}
}
