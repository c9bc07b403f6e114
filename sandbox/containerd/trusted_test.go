package containerd

import (
	"os"
	"testing"

	"github.com/trioagent/trio/internal/sandboxtest"
	"github.com/trioagent/trio/sandbox"
)

// trustedOpener opens containerd sandboxes with trusted builds: the exec
// server, the warm base and Landlock are all required, under CI=true
// above all.
func trustedOpener(t *testing.T, files map[string]string) (sandbox.Sandbox, string, string) {
	ws := t.TempDir()
	sandboxtest.WriteFiles(t, ws, files)
	s := newSandbox(t, Config{Workspace: ws})
	if s.trustedMounts() == nil {
		t.Fatalf("no trusted builds: exec server %v, warm base %q, Landlock ABI %d", s.execd != nil, s.warmBase, s.landlock)
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
	s := newSandbox(t, Config{})
	if s.execd == nil || s.execd.helper == "" {
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
	if st, err := os.Stat(s.execd.helper); err != nil || st.Mode().Perm() != 0o111 {
		t.Errorf("helper copy: %v %v", st, err)
	}
}
