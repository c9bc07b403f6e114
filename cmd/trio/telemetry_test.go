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
		if id, _ := s.Attrs["gen_ai.response.id"].(string); !strings.HasPrefix(id, "chatcmpl-replay-") {
			t.Errorf("chat span of %s: gen_ai.response.id %v", role, s.Attrs["gen_ai.response.id"])
		}
		if fr, _ := s.Attrs["gen_ai.response.finish_reasons"].([]any); len(fr) != 1 || (fr[0] != "stop" && fr[0] != "tool_calls") {
			t.Errorf("chat span of %s: gen_ai.response.finish_reasons %v", role, s.Attrs["gen_ai.response.finish_reasons"])
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
// an unset variable, a bad endpoint or an unknown protocol stop the
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
		{"unknown protocol", "", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL=http/thrift"}, `OTEL_EXPORTER_OTLP_PROTOCOL: unknown protocol "http/thrift"`},
		{"bad protocol in trio.yaml", "telemetry:\n  endpoint: http://127.0.0.1:1\n  protocol: json\n", nil, "trio.yaml:3: telemetry.protocol"},
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

// The demo exports over http/json when OTEL_EXPORTER_OTLP_PROTOCOL says
// so, and over grpc when trio.yaml's telemetry.protocol does: the run
// completes and the collector receives its spans in that protocol.
func TestTelemetryProtocols(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		protocol string
		start    func() *otlptest.Receiver
		env      func(url string) []string
		yaml     func(url string) string
	}{
		{otlptest.HTTPJSON, otlptest.Start, func(url string) []string {
			return []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + url, "OTEL_EXPORTER_OTLP_PROTOCOL=http/json"}
		}, nil},
		{otlptest.GRPC, otlptest.StartGRPC, nil, func(url string) string { return "telemetry:\n  endpoint: " + url + "\n  protocol: grpc\n" }},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			t.Parallel()
			rc := tc.start()
			defer rc.Close()
			dir := t.TempDir()
			var env []string
			if tc.env != nil {
				env = tc.env(rc.URL())
			}
			if tc.yaml != nil {
				if err := os.WriteFile(filepath.Join(dir, "trio.yaml"), []byte(tc.yaml(rc.URL())), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r := trio(t, dir, cleanEnv(env...), "demo", "--sandbox", "local", "--quiet")
			if r.code != exitOK {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			names := map[string]int{}
			for _, s := range rc.Spans() {
				names[s.Name]++
			}
			if names["invoke_workflow trio"] != 1 || names["chat worker"] == 0 {
				t.Errorf("spans: %v", names)
			}
			for _, p := range rc.Protocols() {
				if p != tc.protocol {
					t.Errorf("an export came as %s, want %s", p, tc.protocol)
				}
			}
		})
	}
}
