package telemetry_test

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/trioagent/trio/telemetry"
)

func TestFromEnv(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		env     map[string]string
		want    telemetry.Config
		wantErr string
	}{
		{name: "nothing set", env: map[string]string{}},
		{name: "base endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4318/", "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Basic%20YWI6Y2Q=, x-team = core"},
			want: telemetry.Config{TracesURL: "http://localhost:4318/v1/traces", Headers: map[string]string{"Authorization": "Basic YWI6Y2Q=", "x-team": "core"}}},
		{name: "traces endpoint as is", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://b/otel/traces",
			"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "k=v", "OTEL_SERVICE_NAME": "ci", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "TRUE"},
			want: telemetry.Config{TracesURL: "https://b/otel/traces", Headers: map[string]string{"k": "v"}, ServiceName: "ci", Contents: true}},
		{name: "sdk disabled", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_SDK_DISABLED": "true"}},
		{name: "no scheme", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "localhost:4318"}, wantErr: "OTEL_EXPORTER_OTLP_ENDPOINT: \"localhost:4318/v1/traces\": want an http:// or https:// URL"},
		{name: "grpc: the base endpoint as is", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			want: telemetry.Config{TracesURL: "http://a:4317", Protocol: "grpc"}},
		{name: "http/json", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
			want: telemetry.Config{TracesURL: "http://a:4318/v1/traces", Protocol: "http/json"}},
		{name: "traces protocol wins", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"},
			want: telemetry.Config{TracesURL: "http://a:4317", Protocol: "grpc"}},
		{name: "unknown protocol", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4317", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "thrift"},
			wantErr: `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: unknown protocol "thrift": want one of http/protobuf, http/json, grpc`},
		{name: "bad header", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a", "OTEL_EXPORTER_OTLP_HEADERS": "a=1,=2"}, wantErr: "OTEL_EXPORTER_OTLP_HEADERS: entry 2 is not key=value"},
		{name: "bad escape", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a", "OTEL_EXPORTER_OTLP_HEADERS": "a=%zz"}, wantErr: "entry 1 (a)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := telemetry.FromEnv(func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, telemetry.ErrConfig) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want.Protocol == "" && tc.want.TracesURL != "" {
				tc.want.Protocol = "http/protobuf"
			}
			if got.TracesURL != tc.want.TracesURL || got.Protocol != tc.want.Protocol || got.ServiceName != tc.want.ServiceName || got.Contents != tc.want.Contents ||
				(len(tc.want.Headers) > 0 && !maps.Equal(got.Headers, tc.want.Headers)) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if got.Enabled() != (tc.want.TracesURL != "") {
				t.Errorf("Enabled %v", got.Enabled())
			}
		})
	}
	if _, err := telemetry.New(telemetry.Config{}); !errors.Is(err, telemetry.ErrConfig) {
		t.Errorf("New without a URL: %v", err)
	}
}

func TestProviderName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ kind, url, want, host string }{
		{"openai", "", "openai", ""},
		{"anthropic", "", "anthropic", ""},
		{"openai", "https://api.groq.com/openai/v1", "groq", "api.groq.com:443"},
		{"openai", "https://myres.openai.azure.com/openai/v1", "azure.ai.openai", "myres.openai.azure.com:443"},
		{"openai", "http://localhost:11434/v1", "ollama", "localhost:11434"},
		{"openai", "http://localhost:8000/v1", "openai", "localhost:8000"},
		{"anthropic", "https://API.Anthropic.com", "anthropic", "api.anthropic.com:443"},
		{"openai", "http://gateway.internal/v1", "openai", "gateway.internal:80"},
	} {
		if got := telemetry.ProviderName(tc.kind, tc.url); got != tc.want {
			t.Errorf("ProviderName(%s, %s) = %s, want %s", tc.kind, tc.url, got, tc.want)
		}
		host, port := telemetry.Server(tc.url)
		if got := fmt.Sprintf("%s:%d", host, port); tc.host != "" && got != tc.host || tc.host == "" && host != "" {
			t.Errorf("Server(%s) = %s, want %s", tc.url, got, tc.host)
		}
	}
}
