package summarizer

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/trioagent/trio/llm"
)

func memoTools(desc string) []llm.ToolDef {
	params := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)
	return []llm.ToolDef{
		{Name: "read_file", Description: desc, Parameters: params},
		{Name: "write_file", Description: "Write a file.", Parameters: params},
	}
}

// memoToolsCopied is memoTools with each schema in bytes of its own.
func memoToolsCopied(desc string) []llm.ToolDef {
	defs := memoTools(desc)
	for i := range defs {
		defs[i].Parameters = bytes.Clone(defs[i].Parameters)
	}
	return defs
}

// The Worker's definitions are counted once, not encoded on every turn;
// other definitions are counted afresh.
func TestToolsMemo(t *testing.T) {
	t.Parallel()
	c, err := NewCounter("gpt-4o")
	if err != nil {
		t.Fatal(err)
	}
	defs := memoTools("Read a file.")
	want := c.CountTools(defs)
	tests := []struct {
		name string
		defs []llm.ToolDef
		// hit: the memo answers (the planted count comes back).
		hit bool
	}{
		{"same slice", defs, true},
		{"a copy of the same definitions", append([]llm.ToolDef(nil), defs...), true},
		{"one definition fewer", defs[:1], false},
		{"another description", memoTools("Read a file of the workspace, with line numbers."), false},
		{"the same schema in other bytes", memoToolsCopied("Read a file."), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var m toolsMemo
			if got := m.count(c, defs); got != want {
				t.Fatalf("first count %d, want %d", got, want)
			}
			const planted = -7
			m.tok = planted
			got := m.count(c, tt.defs)
			if hit := got == planted; hit != tt.hit {
				t.Errorf("memo hit %v (count %d), want %v", hit, got, tt.hit)
			}
			if !tt.hit && got != c.CountTools(tt.defs) {
				t.Errorf("recount %d, want %d", got, c.CountTools(tt.defs))
			}
		})
	}
}

// CountTools itself remembers the last list: the window and the agent's
// estimates share one memo instead of keeping their own.
func TestCountToolsRemembersList(t *testing.T) {
	t.Parallel()
	c, err := NewCounter("gpt-4o")
	if err != nil {
		t.Fatal(err)
	}
	defs := memoTools("Read a file.")
	want := c.CountTools(defs)
	const planted = -7
	c.toolsMu.Lock()
	c.tools.tok = planted
	c.toolsMu.Unlock()
	if got := c.CountTools(defs); got != planted {
		t.Errorf("same list counted again: %d, want the remembered %d", got, planted)
	}
	if got := c.CountTools(defs[:1]); got == planted || got >= want {
		t.Errorf("a shorter list: %d, want a fresh count below %d", got, want)
	}
}

// The hand-built definitions of these tests count as they did when they
// were openai-go values (pinned before the move to llm.ToolDef).
func TestCountToolsPinnedHandBuilt(t *testing.T) {
	t.Parallel()
	c, err := NewCounter("gpt-4o")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.CountTools(memoTools("Read a file.")), 68; got != want {
		t.Errorf("memo tools: %d tokens, want %d", got, want)
	}
}
