package config

import (
	"strings"
	"testing"
)

func TestTelemetryBlock(t *testing.T) {
	t.Parallel()
	f, err := Parse("trio.yaml", []byte("telemetry:\n  endpoint: http://localhost:4318\n  contents: true\n  headers:\n    Authorization: \"Basic ${A}${B}\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if g, err := Parse("trio.yaml", []byte("telemetry:\n  endpoint: http://localhost:4317\n  protocol: grpc\n")); err != nil || g.Telemetry.Protocol != "grpc" {
		t.Errorf("grpc: %v", err)
	}
	if f.Telemetry.Endpoint != "http://localhost:4318" || !f.Telemetry.Contents {
		t.Errorf("telemetry: %+v", f.Telemetry)
	}
	env := map[string]string{"A": "x", "B": "y"}
	h, err := f.Telemetry.ExpandHeaders(func(k string) string { return env[k] })
	if err != nil || h["Authorization"] != "Basic xy" {
		t.Errorf("headers %v, %v", h, err)
	}
	delete(env, "B")
	if _, err := f.Telemetry.ExpandHeaders(func(k string) string { return env[k] }); err == nil || err.Error() != "telemetry.headers.Authorization: environment variable B is not set" {
		t.Errorf("unset variable: %v", err)
	}

	for _, tc := range []struct{ yaml, want string }{
		{"telemetry:\n  endpoint: grpc://x:4317\n", "trio.yaml:2: telemetry.endpoint: want the OTLP/HTTP base URL"},
		{"telemetry:\n  contents: true\n", "trio.yaml:2: telemetry: set endpoint"},
		{"telemetry:\n  endpoint: http://x:4317\n  protocol: thrift\n", "trio.yaml:3: telemetry.protocol"},
		{"telemetry:\n  endpoint: http://x\n  headers:\n    \"bad name\": v\n", "telemetry.headers: \"bad name\" is not an HTTP header name"},
		{"telemetry:\n  endpoint: http://x\n  sampling: 1\n", "unknown field \"sampling\""},
	} {
		_, err := Parse("trio.yaml", []byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.yaml, err, tc.want)
		}
	}
}
