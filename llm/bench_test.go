package llm_test

import (
	"context"
	"testing"

	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/llm/llmtest"
)

// BenchmarkScriptedComplete is the scripted model's cost per turn, the
// floor under the agent loop's own per-turn overhead benchmark.
func BenchmarkScriptedComplete(b *testing.B) {
	s, err := llm.ParseScript("bench.yaml", []byte(demoScript))
	if err != nil {
		b.Fatal(err)
	}
	req := turn("worker", llm.Message{Role: llm.RoleUser, Content: "step 1"})
	ctx := context.Background()
	rewind := map[string]int{"worker": 0}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Complete(ctx, req); err != nil {
			b.Fatal(err)
		}
		_ = s.Seek(rewind)
	}
}

// BenchmarkOpenAIRoundTrip is one provider call over loopback HTTP.
func BenchmarkOpenAIRoundTrip(b *testing.B) {
	script, err := llm.ParseScript("bench.yaml", []byte("roles:\n  worker:\n    - content: ok\n"))
	if err != nil {
		b.Fatal(err)
	}
	srv := llmtest.NewServer(b, llmtest.WithModel(script, nil))
	p, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: srv.URL(), APIKey: fakeKey, Model: "worker"})
	if err != nil {
		b.Fatal(err)
	}
	req := userReq("hi")
	ctx := context.Background()
	rewind := map[string]int{"worker": 0}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Complete(ctx, req); err != nil {
			b.Fatal(err)
		}
		_ = script.Seek(rewind)
	}
}
