package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/trioagent/trio/cmd/trio/config"
	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/llm/llmtest"
)

// endpoint.stream in trio.yaml reaches the provider: the request asks for
// server-sent events exactly when the file says so.
func TestEndpointStream(t *testing.T) {
	// Not parallel: t.Setenv sets the key variable the file names.
	t.Setenv("TRIO_TEST_KEY", "test-key")
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint(stream), func(t *testing.T) {
			srv := llmtest.NewServer(t)
			srv.Enqueue(llmtest.Text("hello"))
			f, err := config.Parse("trio.yaml", fmt.Appendf(nil,
				"endpoint:\n  base_url: %s\n  api_key_env: TRIO_TEST_KEY\n  stream: %v\nmodels:\n  default: m\n", srv.URL(), stream))
			if err != nil {
				t.Fatal(err)
			}
			m, err := endpointModel(f)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := m.Complete(context.Background(), llm.Request{Agent: "worker",
				Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Message.Content != "hello" {
				t.Errorf("reply %q, want hello", resp.Message.Content)
			}
			if reqs := srv.Requests(); len(reqs) != 1 || reqs[0].Stream != stream {
				t.Errorf("requests %d, stream %v; want 1 with stream %v", len(reqs), len(reqs) > 0 && reqs[0].Stream, stream)
			}
		})
	}
}

// endpoints.worker with kind anthropic sends the Worker to the Messages
// API, with the key from ANTHROPIC_API_KEY, and every other role to the
// default endpoint.
func TestRoleEndpointKind(t *testing.T) {
	// Not parallel: t.Setenv.
	t.Setenv("TRIO_TEST_KEY", "test-key")
	t.Setenv("ANTHROPIC_API_KEY", "test-anthropic-key")
	srv := llmtest.NewServer(t)
	srv.Enqueue(llmtest.Text("from messages"), llmtest.Text("from chat"))
	f, err := config.Parse("trio.yaml", fmt.Appendf(nil,
		"endpoint:\n  base_url: %s\n  api_key_env: TRIO_TEST_KEY\nendpoints:\n  worker:\n    kind: anthropic\n    base_url: %s\nmodels:\n  default: m\n  worker: claude-x\n",
		srv.URL(), srv.AnthropicURL()))
	if err != nil {
		t.Fatal(err)
	}
	m, err := endpointModel(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, role := range []string{"worker", "planner"} {
		if _, err := m.Complete(context.Background(), llm.Request{Agent: role, Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}); err != nil {
			t.Fatalf("%s: %v", role, err)
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || reqs[0].Model != "claude-x" || reqs[0].Header.Get("Authorization") != "Bearer test-anthropic-key" || reqs[0].Header.Get("Anthropic-Version") == "" ||
		reqs[1].Model != "m" || reqs[1].Header.Get("Authorization") != "Bearer test-key" {
		t.Errorf("requests %+v", reqs)
	}
	t.Setenv("ANTHROPIC_API_KEY", "")
	if _, err := endpointModel(f); err == nil || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
		t.Errorf("no Anthropic key: err %v, want one naming ANTHROPIC_API_KEY", err)
	}
}
