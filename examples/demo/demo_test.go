package demo_test

import (
	"context"
	"strings"
	"testing"

	"github.com/trioagent/trio/examples/demo"
	"github.com/trioagent/trio/llm"
)

func TestEmbedded(t *testing.T) {
	t.Parallel()
	if g := demo.Goal(); !strings.Contains(g, "mdhtml") {
		t.Errorf("goal %q", g)
	}
	m, err := demo.Model()
	if err != nil {
		t.Fatal(err)
	}
	// Each role the demo needs has a first reply.
	for _, role := range []string{"planner", "test_designer", "worker", "critic"} {
		if _, err := m.Complete(context.Background(), llm.Request{Agent: role}); err != nil {
			t.Errorf("%s: %v", role, err)
		}
	}
}
