package config

import (
	"strings"
	"testing"
	"time"
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
		{"bad kind", "sandbox:\n  kind: docker\n", "trio.yaml:2: sandbox.kind: want one of auto, containerd, userns, local"},
		{"bad structured", "endpoint:\n  structured_outputs: maybe\n", "trio.yaml:2: endpoint.structured_outputs"},
		{"key in key env", "endpoint:\n  api_key_env: sk-abc123\n", "trio.yaml:2: endpoint.api_key_env"},
		{"bad url", "endpoint:\n  base_url: localhost:8000\n", "trio.yaml:2: endpoint.base_url"},
		{"temperature", "temperature: 7\n", "trio.yaml:1: temperature"},
		{"image without ref", "sandbox:\n  containerd:\n    rootfs: image\n", "sandbox.containerd.image"},
		{"reserve too big", "window:\n  context_limit: 100\n  reply_reserve: 100\n", "trio.yaml:3: window.reply_reserve"},
		{"stream not a bool", "endpoint:\n  stream: maybe\n", "trio.yaml:2"},
		{"syntax", "models: [\n", "trio.yaml:"},
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
