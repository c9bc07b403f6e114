package summarizer_test

import (
	"testing"

	"github.com/trioagent/trio/summarizer"
	"github.com/trioagent/trio/tools"
)

// The token count of the shipped tool definitions is pinned: moving the
// definitions to another type (or another JSON layout) must not change
// what the window budgets for them, nor a run's estimates.
func TestCountToolsPinned(t *testing.T) {
	t.Parallel()
	r, err := tools.NewRegistry(tools.Builtins(nil)...)
	if err != nil {
		t.Fatal(err)
	}
	view, err := r.View(r.Names()...)
	if err != nil {
		t.Fatal(err)
	}
	defs := view.Definitions()
	for _, tt := range []struct {
		model string
		want  int
		each  []int // per definition, sorted by name
	}{
		{"gpt-4o", 2684, []int{276, 438, 248, 280, 353, 298, 300, 299, 192}},
		{"gpt-4", 2660, []int{269, 432, 249, 276, 351, 299, 299, 295, 190}},
	} {
		c, err := summarizer.NewCounter(tt.model)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.CountTools(defs); got != tt.want {
			t.Errorf("%s: CountTools of the built-in definitions = %d, want %d", tt.model, got, tt.want)
		}
		for i := range defs {
			if got := c.CountTools(defs[i : i+1]); got != tt.each[i] {
				t.Errorf("%s: CountTools of %s = %d, want %d", tt.model, view.Names()[i], got, tt.each[i])
			}
		}
	}
}

// The hand-built definitions of the window's tests count as they did when
// they were openai-go values.
func TestCountTestToolsPinned(t *testing.T) {
	t.Parallel()
	c, err := summarizer.NewCounter("gpt-4o")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.CountTools(testTools()), 142; got != want {
		t.Errorf("%d tokens, want %d", got, want)
	}
}
