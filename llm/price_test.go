package llm_test

import (
	"math"
	"testing"

	"github.com/trioagent/trio/llm"
)

func TestPriceCost(t *testing.T) {
	t.Parallel()
	p := llm.Price{Input: 3, CachedInput: 0.3, CacheWrite: 3.75, Output: 15}
	tests := []struct {
		name string
		u    llm.Usage
		want float64
	}{
		{"uncached", llm.Usage{PromptTokens: 1_000_000, CompletionTokens: 100_000}, 3 + 1.5},
		// 600k read from the cache, 100k written, 300k neither.
		{"cached", llm.Usage{PromptTokens: 1_000_000, CachedPromptTokens: 600_000, CacheWriteTokens: 100_000}, 0.9 + 0.18 + 0.375},
		// Inconsistent figures never give a negative uncached part.
		{"inconsistent", llm.Usage{PromptTokens: 10, CachedPromptTokens: 1_000_000}, 0.3},
		{"zero", llm.Usage{}, 0},
	}
	for _, tt := range tests {
		if got := p.Cost(tt.u); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("%s: Cost = %v, want %v", tt.name, got, tt.want)
		}
	}
}
