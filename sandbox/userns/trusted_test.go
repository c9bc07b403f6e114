package userns_test

import (
	"testing"

	"github.com/trioagent/trio/internal/sandboxtest"
	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/sandbox/userns"
)

// Run by TestWarmCacheSeeded, as an ordinary user, on its warm base.
func testTrustedBuildConfinesTests(t *testing.T, warm string) {
	sandboxtest.TrustedBuildConfinesTests(t, trustedOpener(warm))
}

// Run by TestWarmCacheSeeded.
func testCheckReusesTrustedBuilds(t *testing.T, warm string) {
	sandboxtest.CheckReusesTrustedBuilds(t, trustedOpener(warm))
}

// trustedOpener opens userns sandboxes on the warm base warm.
func trustedOpener(warm string) sandboxtest.TrustedOpener {
	return func(t *testing.T, files map[string]string) (sandbox.Sandbox, string, string) {
		state := t.TempDir()
		sb, ws := open(t, sandbox.RunSpec{Settings: userns.Config{WarmCache: warm, StateDir: state}}, files)
		return sb, ws, treeDir(t, warm, state)
	}
}
