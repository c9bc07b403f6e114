package llm_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/llm/llmtest"
)

// Each model gets the reply-cap parameter its name calls for, a
// configured one overrides it, and the fake server refuses what OpenAI
// refuses: max_tokens for a reasoning model, reasoning_effort for another.
func TestTokenParameterPerModel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, model string
		override    map[string]string
		effort      string
		wantParam   string // "" means the server refuses the request
		wantRefusal string
	}{
		{"gpt-5-mini", "gpt-5-mini", nil, "", llm.TokenParamMaxCompletionTokens, ""},
		{"dated o4-mini behind a router prefix", "openai/o4-mini-2025-04-16", nil, "high", llm.TokenParamMaxCompletionTokens, ""},
		{"gpt-5.1", "gpt-5.1", nil, "none", llm.TokenParamMaxCompletionTokens, ""},
		{"not a reasoning model", "gpt-4.1-mini", nil, "", llm.TokenParamMaxTokens, ""},
		{"a lookalike name", "o30-local", nil, "", llm.TokenParamMaxTokens, ""},
		{"override to max_tokens is refused", "gpt-5-mini", map[string]string{"gpt-5-mini": "max_tokens"}, "", "",
			"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."},
		{"override for a local reasoner", "my-reasoner", map[string]string{"my-reasoner": "max_completion_tokens"}, "", llm.TokenParamMaxCompletionTokens, ""},
		{"reasoning_effort to gpt-4.1 is refused", "gpt-4.1", nil, "low", "",
			"Unsupported parameter: 'reasoning_effort' is not supported with this model."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer(t)
			if tt.wantParam != "" {
				srv.Enqueue(llmtest.Text("ok"))
			}
			p := newProvider(t, srv, func(c *llm.OpenAIConfig) {
				c.Model, c.MaxTokens, c.TokenParameters, c.MaxRetries = tt.model, 300, tt.override, -1
				c.ReasoningEffortPerRole = map[string]string{"worker": tt.effort}
			})
			resp, err := p.Complete(context.Background(), llm.Request{Agent: "worker", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
			reqs := srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			got := reqs[0]
			if tt.wantParam == "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantRefusal) {
					t.Fatalf("err = %v, want the refusal %q", err, tt.wantRefusal)
				}
				if statusOf(err) != http.StatusBadRequest {
					t.Errorf("status %d, want 400", statusOf(err))
				}
				return
			}
			if err != nil || resp.Message.Content != "ok" {
				t.Fatalf("Complete = %q, %v", resp.Message.Content, err)
			}
			if got.TokenParameter != tt.wantParam || got.MaxTokens == nil || *got.MaxTokens != 300 {
				t.Errorf("sent %s=%v, want %s=300; body %s", got.TokenParameter, got.MaxTokens, tt.wantParam, got.Body)
			}
			if got.ReasoningEffort != tt.effort {
				t.Errorf("reasoning_effort %q, want %q", got.ReasoningEffort, tt.effort)
			}
		})
	}
}

func TestReasoningConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		cfg  llm.OpenAIConfig
		want string
	}{
		{llm.OpenAIConfig{ReasoningEffort: "hihg"}, `reasoning effort: "hihg": want one of none, minimal, low, medium, high, xhigh`},
		{llm.OpenAIConfig{ReasoningEffortPerRole: map[string]string{"critic": "lots"}}, `reasoning effort of critic: "lots"`},
		{llm.OpenAIConfig{TokenParameters: map[string]string{"o3": "max_completion"}}, `token parameter of model o3: "max_completion"`},
	} {
		tt.cfg.APIKey, tt.cfg.Model = fakeKey, "m"
		if _, err := llm.NewOpenAI(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("err = %v, want %q", err, tt.want)
		}
	}
}

// An unset base URL is OPENAI_BASE_URL's or ANTHROPIC_BASE_URL's, as the
// SDKs read them.
func TestBaseURLFromEnvironment(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Enqueue(llmtest.Text("from openai env"))
	t.Setenv("OPENAI_BASE_URL", srv.URL())
	t.Setenv("ANTHROPIC_BASE_URL", strings.TrimSuffix(srv.URL(), "/v1"))
	o, err := llm.NewOpenAI(llm.OpenAIConfig{APIKey: fakeKey, Model: "m", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := o.Complete(context.Background(), userReq("hi")); err != nil || r.Message.Content != "from openai env" {
		t.Fatalf("openai: %q, %v", r.Message.Content, err)
	}
	srv.Enqueue(llmtest.Text("from anthropic env"))
	a, err := llm.NewAnthropic(llm.AnthropicConfig{APIKey: fakeKey, Model: "claude-x", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := a.Complete(context.Background(), userReq("hi")); err != nil || r.Message.Content != "from anthropic env" {
		t.Fatalf("anthropic: %q, %v", r.Message.Content, err)
	}
	t.Setenv("OPENAI_BASE_URL", "ftp://nowhere")
	if _, err := llm.NewOpenAI(llm.OpenAIConfig{APIKey: fakeKey, Model: "m"}); err == nil || !strings.Contains(err.Error(), "$OPENAI_BASE_URL") {
		t.Errorf("a bad OPENAI_BASE_URL: err = %v, want it named", err)
	}
}

// A configured temperature goes to other models, not to a reasoning model,
// which the fake server, like OpenAI, refuses it for.
func TestTemperatureNotSentToReasoningModels(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t)
	srv.Enqueue(llmtest.Text("a"), llmtest.Text("b"))
	temp := 0.2
	p := newProvider(t, srv, func(c *llm.OpenAIConfig) {
		c.Model, c.Models, c.Temperature, c.MaxRetries = "gpt-4.1", map[string]string{"worker": "o3"}, &temp, -1
	})
	for _, agent := range []string{"planner", "worker"} {
		if _, err := p.Complete(context.Background(), llm.Request{Agent: agent, Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}); err != nil {
			t.Fatalf("%s: %v", agent, err)
		}
	}
	reqs := srv.Requests()
	if reqs[0].Temperature == nil || *reqs[0].Temperature != 0.2 || reqs[1].Temperature != nil {
		t.Errorf("temperature sent: gpt-4.1 %v, o3 %v; want 0.2 and none", reqs[0].Temperature, reqs[1].Temperature)
	}
	// The provider never sends it: ask the server directly.
	body := `{"model":"o3","messages":[{"role":"user","content":"hi"}],"temperature":0.2}`
	resp, err := http.Post(srv.URL()+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct {
		Error struct{ Message, Param, Code string }
	}
	json.NewDecoder(resp.Body).Decode(&e)
	if resp.StatusCode != http.StatusBadRequest || e.Error.Param != "temperature" || e.Error.Code != "unsupported_value" {
		t.Errorf("the fake server answered %d %+v to o3 with temperature 0.2, want 400 unsupported_value", resp.StatusCode, e.Error)
	}
}

// The summarizer caps its reply per request (Request.MaxTokens): that cap
// too goes as max_completion_tokens to a reasoning model.
func TestRequestCapUsesModelsParameter(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t)
	srv.Enqueue(llmtest.Text("summary"))
	p := newProvider(t, srv, func(c *llm.OpenAIConfig) {
		c.Model, c.Models, c.MaxRetries = "gpt-4.1", map[string]string{"summarizer": "gpt-5-nano"}, -1
	})
	req := llm.Request{Agent: "summarizer", MaxTokens: 512, Messages: []llm.Message{{Role: llm.RoleUser, Content: "summarize"}}}
	if _, err := p.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if got := srv.Requests()[0]; got.TokenParameter != llm.TokenParamMaxCompletionTokens || *got.MaxTokens != 512 {
		t.Errorf("sent %s=%v, want max_completion_tokens=512", got.TokenParameter, got.MaxTokens)
	}
}
