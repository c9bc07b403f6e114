package containerd

import (
	"testing"

	"github.com/trioagent/trio/internal/sandboxtest"
	"github.com/trioagent/trio/sandbox"
)

// openForEffects is the effect table's Opener for this kind: a sandbox on
// dir with the rules laid out, closed when the test ends.
func openForEffects(t testing.TB, dir string, rules sandbox.PathRules, limits sandbox.Limits) sandbox.Sandbox {
	return newSandbox(t, sandbox.RunSpec{Workspace: dir, Limits: limits, PathRules: rules})
}

// TestEffects runs the effect table against real containerd: hostile
// programs through the gate with the shipped unattended policy, effects
// checked on the host.
func TestEffects(t *testing.T) {
	requireContainerd(t)
	sandboxtest.Run(t, openForEffects, nil)
}
