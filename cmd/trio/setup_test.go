package main

import (
	"context"
	"fmt"
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
