package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/telemetry/otlptest"
)

// The demo, with OTEL_EXPORTER_OTLP_ENDPOINT pointing at a receiver,
// exports a span tree whose model calls and tokens are the report's.
func TestDemoExportsTrace(t *testing.T) {
	t.Parallel()
	rc := otlptest.Start()
	defer rc.Close()
	dir := t.TempDir()
	r := trio(t, dir, cleanEnv("OTEL_EXPORTER_OTLP_ENDPOINT="+rc.URL(), "OTEL_EXPORTER_OTLP_HEADERS=Authorization=Basic%20ZGVtbzpkZW1v"),
		"demo", "--sandbox", "local", "--quiet")
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	reports, _ := filepath.Glob(filepath.Join(dir, "trio-demo", "runs", "*"))
	if len(reports) != 1 {
		t.Fatalf("run folders: %v", reports)
	}
	rep, err := agent.LoadReport(reports[0])
	if err != nil {
		t.Fatal(err)
	}
	spans := rc.Spans()
	perRole := map[string][2]int64{}
	calls := 0
	var rootID string
	names := map[string]int{}
	for _, s := range spans {
		names[s.Name]++
		if s.ParentID == "" {
			rootID = s.SpanID
		}
		if s.Attrs["gen_ai.operation.name"] != "chat" {
			continue
		}
		calls++
		role := s.Attrs["gen_ai.agent.name"].(string)
		if s.Attrs["gen_ai.provider.name"] != "openai" || s.Attrs["gen_ai.request.model"] != role || s.Attrs["gen_ai.response.model"] != role {
			t.Errorf("chat span of %s: %v", role, s.Attrs)
		}
		u := perRole[role]
		u[0] += s.Attrs["gen_ai.usage.input_tokens"].(int64)
		u[1] += s.Attrs["gen_ai.usage.output_tokens"].(int64)
		perRole[role] = u
	}
	if rootID == "" || names["invoke_workflow trio"] != 1 {
		t.Fatalf("no root span: %v", names)
	}
	if calls != rep.Metrics.ModelCalls {
		t.Errorf("%d chat spans, report %d model calls", calls, rep.Metrics.ModelCalls)
	}
	for role, u := range rep.Metrics.Roles {
		if got := perRole[role]; got[0] != int64(u.PromptTokens) || got[1] != int64(u.CompletionTokens) {
			t.Errorf("%s: spans %d/%d tokens, report %d/%d", role, got[0], got[1], u.PromptTokens, u.CompletionTokens)
		}
	}
	for _, want := range []string{"invoke_agent planner", "invoke_agent worker", "invoke_agent critic", "execute_tool run_tests", "execute_tool write_file"} {
		if names[want] == 0 {
			t.Errorf("no span %q: %v", want, names)
		}
	}
	if h := rc.Headers(); len(h) == 0 || h[0].Get("Authorization") != "Basic ZGVtbzpkZW1v" {
		t.Errorf("headers: %v", h)
	}
	if _, err := os.Stat(filepath.Join(reports[0], "otel-trace.json")); err != nil {
		t.Error(err)
	}
}

// trio.yaml's telemetry block: headers take ${NAME} from the environment;
// an unset variable, a bad endpoint or an unsupported protocol stop the
// run before it starts (exit 3), naming what was wrong.
func TestTelemetryConfig(t *testing.T) {
	t.Parallel()
	rc := otlptest.Start()
	defer rc.Close()
	dir := t.TempDir()
	cfg := "telemetry:\n  endpoint: " + rc.URL() + "\n  service_name: trio-ci\n  headers:\n    x-langfuse-key: \"${LF_KEY}\"\n"
	if err := os.WriteFile(filepath.Join(dir, "trio.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	r := trio(t, dir, cleanEnv("LF_KEY=sk-lf-1"), "demo", "--sandbox", "local", "--quiet")
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if h := rc.Headers(); len(h) == 0 || h[0].Get("X-Langfuse-Key") != "sk-lf-1" {
		t.Errorf("headers: %v", h)
	}
	if s := rc.Spans(); len(s) == 0 || s[0].Service != "trio-ci" {
		t.Errorf("spans: %d", len(s))
	}
	if strings.Contains(r.stderr, "sk-lf-1") {
		t.Errorf("the header's secret was printed:\n%s", r.stderr)
	}

	for _, tc := range []struct {
		name, yaml string
		env        []string
		want       string
	}{
		{"unset variable", cfg, nil, "telemetry.headers.x-langfuse-key: environment variable LF_KEY is not set"},
		{"bad endpoint", "telemetry:\n  endpoint: localhost:4318\n", nil, `trio.yaml:2: telemetry.endpoint: want the OTLP/HTTP base URL`},
		{"grpc", "", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"}, `OTEL_EXPORTER_OTLP_PROTOCOL="grpc": trio exports over http/protobuf only`},
		{"bad headers", "", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_HEADERS=novalue"}, "OTEL_EXPORTER_OTLP_HEADERS: entry 1 is not key=value"},
	} {
		d := t.TempDir()
		if tc.yaml != "" {
			os.WriteFile(filepath.Join(d, "trio.yaml"), []byte(tc.yaml), 0o644)
		}
		r := trio(t, d, cleanEnv(tc.env...), "demo", "--sandbox", "local", "--quiet")
		if r.code != exitConfig || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%s: exit %d, want 3 and %q:\n%s", tc.name, r.code, tc.want, r.stderr)
		}
	}
}

// A collector that refuses the spans is a warning after the report; the
// run's outcome is unchanged.
func TestTelemetryExportFailureWarns(t *testing.T) {
	t.Parallel()
	rc := otlptest.Start()
	defer rc.Close()
	rc.FailNext(1000)
	r := trio(t, t.TempDir(), cleanEnv("OTEL_EXPORTER_OTLP_ENDPOINT="+rc.URL()), "demo", "--sandbox", "local", "--quiet")
	if r.code != exitOK || !strings.Contains(r.stderr, "trio: warning: telemetry: export to "+rc.URL()+"/v1/traces") {
		t.Errorf("exit %d:\n%s", r.code, r.stderr)
	}
}
