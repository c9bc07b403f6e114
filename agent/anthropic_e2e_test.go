package agent_test

import (
	"context"
	"testing"
	"time"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/llm/llmtest"
)

// cachingModel reports, for the Worker, most of each prompt as read from
// the prompt cache, as the Messages API does once a prefix is cached.
type cachingModel struct{ inner llm.Model }

func (m cachingModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	resp, err := m.inner.Complete(ctx, req)
	if err == nil && req.Agent == agent.RoleWorker {
		resp.Usage = llm.Usage{PromptTokens: 1000, CachedPromptTokens: 900, CacheWriteTokens: 50, CompletionTokens: 20}
	}
	return resp, err
}

// TestRepairOverAnthropic is the calc repair run with every role on the
// native Anthropic provider, its replies served in the Messages API shape:
// the run completes, the report counts the cache usage the endpoint
// reported, and every Worker request carries a cache breakpoint.
func TestRepairOverAnthropic(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "stream"}[stream], func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer(t, llmtest.WithModel(cachingModel{buggyThenFixed()}, nil))
			roles := map[string]string{}
			for _, r := range []string{agent.RolePlanner, agent.RoleTestDesigner, agent.RoleWorker, agent.RoleCritic, agent.RoleSummarizer} {
				roles[r] = r // the fake server replays the role its model is named after
			}
			m, err := llm.NewAnthropic(llm.AnthropicConfig{BaseURL: srv.AnthropicURL(), APIKey: "test-key", Models: roles,
				Stream: stream, BackoffBase: time.Millisecond, Timeout: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			e := newEnv(t)
			rep := run(t, m, nil, e.opts()...)
			if rep.Reason != agent.StopCompleted || rep.Metrics.RepairRounds != 1 {
				t.Fatalf("reason %s (%s), %d repair rounds; want completed after 1", rep.Reason, rep.Detail, rep.Metrics.RepairRounds)
			}
			w := rep.Metrics.Roles[agent.RoleWorker]
			if w.Calls != 3 || w.PromptTokens != 3000 || w.CachedPromptTokens != 2700 || w.CacheWriteTokens != 150 || rep.Metrics.CachedPromptTokens != 2700 {
				t.Errorf("worker usage %+v (run cached %d), want 3 calls, 3000 prompt, 2700 cached, 150 written", w, rep.Metrics.CachedPromptTokens)
			}
			workers := 0
			for _, r := range srv.Requests() {
				if r.Model != agent.RoleWorker {
					continue
				}
				workers++
				ar, err := r.Anthropic()
				if err != nil {
					t.Fatal(err)
				}
				if bp := ar.Breakpoints(); len(bp) != 2 || bp[0] != "system[0]" {
					t.Errorf("worker request %d: breakpoints %v, want the system prompt and the stable prefix", workers, bp)
				}
			}
			if workers != 3 {
				t.Errorf("%d worker requests, want 3", workers)
			}
		})
	}
}
