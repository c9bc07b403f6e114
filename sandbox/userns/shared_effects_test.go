package userns_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/trioagent/trio/internal/sandboxtest"
	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/sandbox/userns"
)

// TestSharedEffects runs the boundary issue's effect table, the one the
// containerd kind runs (internal/sandboxtest), against this kind as an
// ordinary user.
func TestSharedEffects(t *testing.T) {
	if asOrdinaryUser(t, "TestSharedEffects") {
		return
	}
	requireUserns(t)
	if base := os.Getenv(childEnv); base != "" {
		t.Setenv(sandboxtest.PolicyEnv, filepath.Join(base, filepath.Base(shippedPolicyFile)))
	}
	sandboxtest.Run(t, func(t testing.TB, dir string, rules sandbox.PathRules, limits sandbox.Limits) sandbox.Sandbox {
		sb, err := userns.New(context.Background(), sandbox.RunSpec{Workspace: dir, Limits: limits, PathRules: rules})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sb.Close() })
		return sb
	}, nil)
}
