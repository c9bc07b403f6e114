package config

import (
	"strings"
	"testing"
	"time"

	"github.com/trioagent/trio/llm"
)

func TestParseErrorsNameTheLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown key", "endpoint:\n  base_url: http://x/v1\n  bogus: 1\n", "trio.yaml:3"},
		{"unknown top key", "models:\n  default: m\nwindoww: {}\n", "trio.yaml:3"},
		{"wrong type", "budgets:\n  max_steps: many\n", "trio.yaml:2"},
		{"bad duration", "budgets:\n  max_wall_time: soon\n", "trio.yaml:2: budgets.max_wall_time: want a positive duration"},
		{"bare number duration", "endpoint:\n  timeout: 30\n", "trio.yaml:2: endpoint.timeout"},
		{"negative", "\n\nbudgets:\n  max_tokens: -5\n", "trio.yaml:4: budgets.max_tokens"},
		{"bad kind", "sandbox:\n  kind: docker\n", "trio.yaml:2: sandbox.kind: want one of auto, containerd, userns, landlock, local"},
		{"bad structured", "endpoint:\n  structured_outputs: maybe\n", "trio.yaml:2: endpoint.structured_outputs"},
		{"key in key env", "endpoint:\n  api_key_env: sk-abc123\n", "trio.yaml:2: endpoint.api_key_env"},
		{"bad url", "endpoint:\n  base_url: localhost:8000\n", "trio.yaml:2: endpoint.base_url"},
		{"temperature", "temperature: 7\n", "trio.yaml:1: temperature"},
		{"image without ref", "sandbox:\n  containerd:\n    rootfs: image\n", "sandbox.containerd.image"},
		{"reserve too big", "window:\n  context_limit: 2000\n  reply_reserve: 2000\n", "trio.yaml:3: window.reply_reserve"},
		{"retries out of range", "endpoint:\n  max_retries: 1000000000\n", "trio.yaml:2: endpoint.max_retries: want a whole number from 0 to 20, got 1000000000"},
		{"retries as a float", "endpoint:\n  max_retries: 1e9\n", "trio.yaml:2"},
		{"context too small", "window:\n  context_limit: 10\n", "trio.yaml:2: window.context_limit: want a whole number from 1024 to 10000000"},
		{"timeout too long", "endpoint:\n  timeout: 100h\n", "trio.yaml:2: endpoint.timeout: want a duration from 1s to 1h0m0s, got 100h"},
		{"timeout too short", "endpoint:\n  timeout: 1ms\n", "trio.yaml:2: endpoint.timeout"},
		{"wall time too long", "budgets:\n  max_wall_time: 9000h\n", "trio.yaml:2: budgets.max_wall_time"},
		{"goal limit too big", "budgets:\n  max_goal_bytes: 1000000000\n", "trio.yaml:2: budgets.max_goal_bytes: want a whole number from 0 to 16777216"},
		{"repair rounds", "budgets:\n  max_repair_rounds: 5000\n", "trio.yaml:2: budgets.max_repair_rounds"},
		{"stream not a bool", "endpoint:\n  stream: maybe\n", "trio.yaml:2"},
		{"syntax", "models: [\n", "trio.yaml:"},
		{"bad endpoint kind", "endpoint:\n  kind: gemini\n", "trio.yaml:2: endpoint.kind: want one of openai, anthropic"},
		{"bad role endpoint kind", "endpoints:\n  worker:\n    kind: claude\n", "trio.yaml:3: endpoints.worker.kind: want one of openai, anthropic"},
		{"unknown role", "endpoints:\n  builder:\n    kind: anthropic\n", "trio.yaml:3: endpoints.builder: want a role"},
		{"role key in key env", "endpoints:\n  worker:\n    kind: anthropic\n    api_key_env: sk-ant-123\n", "trio.yaml:4: endpoints.worker.api_key_env"},
		{"role timeout", "endpoints:\n  critic:\n    timeout: soon\n", "trio.yaml:3: endpoints.critic.timeout"},
		{"price without output", "prices:\n  gpt-4.1-mini:\n    input: 0.4\n", "trio.yaml:3: prices.gpt-4.1-mini: want output"},
		{"negative price", "prices:\n  m:\n    input: 1\n    output: 2\n    cached_input: -1\n", "trio.yaml:5: prices.m.cached_input: want a price per million tokens from 0"},
		{"price as text", "prices:\n  m: {input: cheap, output: 1}\n", "trio.yaml:2"},
		{"unknown price field", "prices:\n  m: {input: 1, output: 1, per_token: 3}\n", "trio.yaml:2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("trio.yaml", []byte(tt.yaml))
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestParseValid(t *testing.T) {
	t.Parallel()
	f, err := Parse("trio.yaml", []byte("endpoint:\n  timeout: 90s\n  max_retries: 0\n  stream: true\nmodels:\n  default: m\n"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Endpoint.Timeout.Duration != 90*time.Second || f.Endpoint.MaxRetries == nil || *f.Endpoint.MaxRetries != 0 || !f.Endpoint.Stream || f.Models.Default != "m" {
		t.Errorf("parsed %+v", f)
	}
	empty, err := Parse("empty.yaml", nil)
	if err != nil || empty.Models.Default != "" {
		t.Errorf("empty file: %+v, %v", empty, err)
	}
}

func TestPrices(t *testing.T) {
	t.Parallel()
	f, err := Parse("trio.yaml", []byte("prices:\n  gpt-4.1-mini: {input: 0.4, cached_input: 0.1, output: 1.6}\n  claude-sonnet-4-5: {input: 3, cached_input: 0.3, cache_write: 3.75, output: 15}\n  local: {input: 0, output: 0}\n"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		model string
		want  llm.Price
		ok    bool
	}{
		// cache_write unset: the input price, never a made-up discount.
		{"gpt-4.1-mini", llm.Price{Input: 0.4, CachedInput: 0.1, CacheWrite: 0.4, Output: 1.6}, true},
		{"claude-sonnet-4-5", llm.Price{Input: 3, CachedInput: 0.3, CacheWrite: 3.75, Output: 15}, true},
		{"local", llm.Price{}, true}, // a free model is priced at zero, not unpriced
		{"gpt-5", llm.Price{}, false},
	}
	for _, tt := range tests {
		if got, ok := f.Price(tt.model); got != tt.want || ok != tt.ok {
			t.Errorf("Price(%q) = %+v, %v; want %+v, %v", tt.model, got, ok, tt.want, tt.ok)
		}
	}
	if _, ok := (&File{}).Price("gpt-4.1-mini"); ok {
		t.Error("an empty file has prices: the default table must be empty")
	}
}
