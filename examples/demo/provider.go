package demo

import (
	"context"
	"fmt"
	"maps"
	"sync"

	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/llm/replay"
)

// Roles are the model roles the demo's script holds replies for.
var Roles = []string{"planner", "test_designer", "worker", "critic", "summarizer"}

// Provider serves the demo's script over HTTP on loopback (an
// OpenAI-compatible endpoint) and returns the real openai-go provider
// talking to it, so the demo exercises the production path. The model
// has Cursor and Seek, so agent.Resume continues a demo run where the
// script stopped (see Endpoint). Call stop when the run is over.
func Provider() (model llm.Model, stop func(), err error) {
	script, err := Model()
	if err != nil {
		return nil, nil, err
	}
	ep, err := ServeScript(script)
	if err != nil {
		return nil, nil, err
	}
	return ep, ep.Close, nil
}

// Endpoint is a scripted model served on loopback and reached through the
// real OpenAI-compatible provider, each role sent as its own model name.
// Its Cursor counts the replies the provider received, not those the
// server handed to a request that was then cancelled: a reply lost in
// flight is asked for again when a run resumes from the cursor.
type Endpoint struct {
	p      *llm.OpenAI
	script *llm.Scripted
	srv    *replay.Server

	mu  sync.Mutex
	got map[string]int // replies received per role
}

// ServeScript serves script as Provider serves the demo's (the trio
// command does so for a TRIO_SCRIPT file). Close the Endpoint when done.
func ServeScript(script *llm.Scripted) (*Endpoint, error) {
	return serve(script, script)
}

// serve answers requests with served, which is script or a wrapper of it
// (tests lose replies in flight with one).
func serve(script *llm.Scripted, served llm.Model) (*Endpoint, error) {
	srv, err := replay.Start(served, nil)
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	models := make(map[string]string, len(Roles))
	for _, r := range Roles {
		models[r] = r // the server replays the role named by the model
	}
	// The provider alone, without retries: a retry would take the next
	// reply of the script.
	p, err := llm.NewOpenAIProvider(llm.OpenAIConfig{
		BaseURL: srv.URL(), APIKey: "demo", Model: "worker", Models: models,
	})
	if err != nil {
		srv.Close()
		return nil, fmt.Errorf("demo: provider: %w", err)
	}
	return &Endpoint{p: p, script: script, srv: srv, got: map[string]int{}}, nil
}

// Complete asks the provider and counts a received reply.
func (e *Endpoint) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	resp, err := e.p.Complete(ctx, req)
	if err == nil {
		e.mu.Lock()
		e.got[req.Agent]++
		e.mu.Unlock()
	}
	return resp, err
}

// Cursor is the replies received per role, for a run's checkpoint.
func (e *Endpoint) Cursor() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return maps.Clone(e.got)
}

// Seek moves the script to a checkpoint's cursor.
func (e *Endpoint) Seek(c map[string]int) error {
	if err := e.script.Seek(c); err != nil {
		return err
	}
	e.mu.Lock()
	e.got = maps.Clone(c)
	if e.got == nil {
		e.got = map[string]int{}
	}
	e.mu.Unlock()
	return nil
}

// Close stops the loopback server.
func (e *Endpoint) Close() { e.srv.Close() }
