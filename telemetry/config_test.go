package telemetry_test

import (
	"errors"
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
		{name: "grpc", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, wantErr: "trio exports over http/protobuf only"},
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
			if got.TracesURL != tc.want.TracesURL || got.ServiceName != tc.want.ServiceName || got.Contents != tc.want.Contents ||
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
