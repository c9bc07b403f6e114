package containerd

import (
	"context"
	"testing"
	"time"

	"github.com/trioagent/trio/internal/sandboxtest"
	"github.com/trioagent/trio/sandbox"
)

// TestEffects runs the effect table against real containerd: hostile
// programs through the gate with the shipped unattended policy, effects
// checked on the host.
func TestEffects(t *testing.T) {
	requireContainerd(t)
	sandboxtest.Run(t, func(t testing.TB, dir string, rules sandbox.PathRules, limits sandbox.Limits) sandbox.Sandbox {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s, err := New(ctx, Config{Workspace: dir, Limits: limits, Rules: rules})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		return s
	}, nil)
}
