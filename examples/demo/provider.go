package demo

import (
	"context"
	"fmt"

	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/llm/llmtest"
)

// Roles are the model roles the demo's script holds replies for.
var Roles = []string{"planner", "test_designer", "worker", "critic", "summarizer"}

// Provider serves the demo's script over HTTP on loopback (an
// OpenAI-compatible endpoint) and returns the real openai-go provider
// talking to it, so the demo exercises the production path. Each role is
// sent as its own model name. The model also has the script's Cursor and
// Seek, so agent.Resume continues a demo run where the script stopped.
// Call stop when the run is over.
func Provider() (model llm.Model, stop func(), err error) {
	script, err := Model()
	if err != nil {
		return nil, nil, err
	}
	srv := llmtest.Start(llmtest.WithModel(script, nil))
	models := make(map[string]string, len(Roles))
	for _, r := range Roles {
		models[r] = r
	}
	p, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: srv.URL(), APIKey: "demo", Model: "worker", Models: models})
	if err != nil {
		srv.Close()
		return nil, nil, fmt.Errorf("demo: provider: %w", err)
	}
	return httpModel{p: p, s: script}, srv.Close, nil
}

// httpModel answers through the provider and keeps the script's position.
type httpModel struct {
	p *llm.OpenAI
	s *llm.Scripted
}

func (m httpModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	return m.p.Complete(ctx, req)
}

// Cursor is the script's position per role.
func (m httpModel) Cursor() map[string]int { return m.s.Cursor() }

// Seek moves the script to a saved position.
func (m httpModel) Seek(c map[string]int) error { return m.s.Seek(c) }
