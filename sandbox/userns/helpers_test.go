package userns_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/trioagent/trio/internal/sandboxtest"
	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/sandbox/userns"
)

// childEnv carries, to a test re-run as an ordinary user, the folder that
// user owns; its presence says "this is the re-run".
const childEnv = "TRIO_USERNS_TEST_BASE"

// nobody is the ordinary user CI runs these tests as.
const nobody = 65534

// requireUserns skips the test where bwrap or user namespaces are missing,
// and fails it instead under CI=true, where both must work.
func requireUserns(t testing.TB) {
	t.Helper()
	if err := userns.Available(context.Background(), ""); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and the userns sandbox is unavailable: %v", err)
		}
		t.Skipf("userns sandbox unavailable: %v", err)
	}
}

// asOrdinaryUser re-runs the test named name as nobody when this process
// is root, and reports true when it did (the caller then returns): the
// sandbox is for people who are not root, so that is whom it is tested
// as. The test binary is copied into a folder nobody owns (mode 0755
// under /tmp; t.TempDir is root's only), which becomes the re-run's
// TMPDIR. Not root: false, and the test runs here.
func asOrdinaryUser(t *testing.T, name string) bool {
	t.Helper()
	return asOrdinaryUserWith(t, name, nil)
}

// warmEnv names, to a re-run as nobody, a warm cache folder the re-runs of
// this test binary share (see sharedWarm).
const warmEnv = "TRIO_USERNS_TEST_WARM"

var sharedWarm struct {
	once sync.Once
	dir  string
	err  error
}

// sharedWarmDir is the folder, owned by nobody and private to it, where
// the re-runs as nobody build one warm base and share it: each build takes
// a minute under the race detector. TestMain removes it.
func sharedWarmDir(t *testing.T) string {
	sharedWarm.once.Do(func() {
		dir, err := os.MkdirTemp("/tmp", "trio-userns-warm-")
		if err == nil {
			err = os.Chown(dir, nobody, nobody)
		}
		sharedWarm.dir, sharedWarm.err = dir, err
	})
	if sharedWarm.err != nil {
		t.Fatal(sharedWarm.err)
	}
	return filepath.Join(sharedWarm.dir, "warm")
}

// warmFor is the warm cache folder for a test that needs a warm base but
// does not test how it is built: the one the re-runs share, else a new one.
func warmFor(t *testing.T) string {
	if dir := os.Getenv(warmEnv); dir != "" {
		return dir
	}
	return filepath.Join(t.TempDir(), "warm")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedWarm.dir != "" {
		os.RemoveAll(sharedWarm.dir)
	}
	os.Exit(code)
}

// asOrdinaryUserWith is asOrdinaryUser that first lets prepare put what
// the re-run needs in its base folder (as root; the re-run finds the
// folder in $TRIO_USERNS_TEST_BASE).
func asOrdinaryUserWith(t *testing.T, name string, prepare func(base string)) bool {
	t.Helper()
	if os.Getuid() != 0 {
		return false
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true, running as root, and setpriv is missing (util-linux): %v", err)
		}
		t.Skipf("running as root without setpriv: cannot test as an ordinary user: %v", err)
	}
	base, err := os.MkdirTemp("/tmp", "trio-userns-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(base, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(base, "userns.test")
	copyFile(t, self, bin, 0o755)
	copyFile(t, shippedPolicyFile, filepath.Join(base, filepath.Base(shippedPolicyFile)), 0o644)
	if prepare != nil {
		prepare(base)
	}
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--",
		bin, "-test.run=^"+name+"$", "-test.v", "-test.count=1")
	cmd.Dir = base
	// A fresh HOME would build the warm cache in every re-run; the
	// test of the warm cache names its own folder.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "CI=" + os.Getenv("CI"), "TMPDIR=" + base, "HOME=" + base, childEnv + "=" + base, sandbox.WarmCacheEnv + "=none",
		warmEnv + "=" + sharedWarmDir(t)}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	for _, line := range strings.Split(strings.TrimRight(out.String(), "\n"), "\n") {
		t.Log("nobody| " + line)
	}
	if err != nil {
		t.Fatalf("%s as nobody: %v", name, err)
	}
	if strings.Contains(out.String(), "--- SKIP: "+name) {
		t.Skip("skipped as nobody")
	}
	return true
}

func copyFile(t testing.TB, src, dst string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// shippedPolicyFile is the unattended policy trio ships.
const shippedPolicyFile = "../../configs/policy.unattended.yaml"

// shippedPolicy is configs/policy.unattended.yaml (its copy in the base
// folder for a re-run as nobody, whose working folder that is).
func shippedPolicy(t testing.TB) *policy.Policy {
	t.Helper()
	file := shippedPolicyFile
	if base := os.Getenv(childEnv); base != "" {
		file = filepath.Join(base, filepath.Base(shippedPolicyFile))
	}
	p, err := policy.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// rulesOf gives the policy's path rules the file tools' meaning.
func rulesOf(p *policy.Policy) sandbox.PathRules {
	return func(rel string) sandbox.Access {
		if p.CheckPath(rel, policy.Read).Verdict == policy.Deny {
			return sandbox.Hidden
		}
		if p.CheckPath(rel, policy.Write).Verdict == policy.Deny {
			return sandbox.ReadOnly
		}
		return sandbox.Writable
	}
}

// writeTree makes files (slash paths relative to dir) with their content.
func writeTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	sandboxtest.WriteFiles(t, dir, files)
}

// treeDir is the host folder of the trusted builds of the one sandbox
// whose state is in state: beside the warm base in warm, named after its
// state folder.
func treeDir(t *testing.T, warm, state string) string {
	t.Helper()
	states, _ := filepath.Glob(filepath.Join(state, "trio-userns-*"))
	if len(states) != 1 {
		t.Fatalf("%s holds the state folders %v, want one", state, states)
	}
	dir := filepath.Join(warm, "runs", filepath.Base(states[0]), "go-build")
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Fatalf("no trusted builds at %s: %v", dir, err)
	}
	return dir
}
