package telemetry_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/examples/demo"
	"github.com/trioagent/trio/telemetry"
	"github.com/trioagent/trio/telemetry/otlptest"
)

// runDemo runs the offline demo in the local sandbox with tr observing,
// shuts tr down and returns the report.
func runDemo(t *testing.T, dir string, tr *telemetry.Tracer, opts ...agent.Option) *agent.Report {
	t.Helper()
	model, err := demo.Model()
	if err != nil {
		t.Fatal(err)
	}
	opts = append([]agent.Option{agent.WithWorkspace(filepath.Join(dir, "project")), agent.WithRunsDir(filepath.Join(dir, "runs")),
		agent.WithSandboxConfig(agent.SandboxConfig{Kind: agent.SandboxLocal}), agent.WithObserver(tr.Observe)}, opts...)
	a, err := agent.New(model, nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := a.Run(context.Background(), demo.Goal())
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	return rep
}

func newTracer(t *testing.T, rc *otlptest.Receiver, contents bool) *telemetry.Tracer {
	t.Helper()
	models := map[string]telemetry.Model{}
	for _, r := range demo.Roles {
		models[r] = telemetry.Model{Provider: "openai", Name: "demo-" + r, ServerAddress: "llm.example", ServerPort: 8443, MaxTokens: 4096}
	}
	tr, err := telemetry.New(telemetry.Config{TracesURL: telemetry.TracesURL(rc.URL()), Contents: contents, Models: models,
		Headers: map[string]string{"Authorization": "Basic dGVzdDp0ZXN0"}})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// The demo's span tree, as a receiver decodes it from the wire: one trace
// under one invoke_workflow root; an invoke_agent span per role phase
// (both Worker steps, the repair round, two Critic checks, the first
// failing); chat and execute_tool spans under them whose tokens add up
// to the report's.
func TestDemoSpanTree(t *testing.T) {
	t.Parallel()
	rc := otlptest.Start()
	defer rc.Close()
	rep := runDemo(t, t.TempDir(), newTracer(t, rc, false))
	if rep.Reason != agent.StopCompleted {
		t.Fatalf("demo: %s: %s", rep.Reason, rep.Detail)
	}
	spans := rc.Spans()
	byID := map[string]otlptest.Span{}
	for _, s := range spans {
		byID[s.SpanID] = s
	}
	var roots []otlptest.Span
	for _, s := range spans {
		if s.ParentID == "" {
			roots = append(roots, s)
		} else if _, ok := byID[s.ParentID]; !ok {
			t.Errorf("span %q has parent %s, which was not exported", s.Name, s.ParentID)
		}
		if s.Service != "trio" {
			t.Errorf("span %q: service.name %q, want trio", s.Name, s.Service)
		}
		if s.End.Before(s.Start) {
			t.Errorf("span %q ends before it starts", s.Name)
		}
	}
	if len(roots) != 1 || roots[0].Name != "invoke_workflow trio" {
		t.Fatalf("roots: %+v", roots)
	}
	root := roots[0]
	if root.Attrs["gen_ai.operation.name"] != "invoke_workflow" || root.Attrs["trio.run.id"] != rep.RunID || root.Attrs["trio.run.stop_reason"] != "completed" {
		t.Errorf("root attributes: %v", root.Attrs)
	}
	var phases []string
	var chats, tools int
	var in, out int64
	for _, s := range spans {
		if s.TraceID != root.TraceID {
			t.Errorf("span %q in trace %s, want %s", s.Name, s.TraceID, root.TraceID)
		}
		parent := byID[s.ParentID]
		switch s.Attrs["gen_ai.operation.name"] {
		case "invoke_agent":
			name := s.Attrs["gen_ai.agent.name"].(string)
			if step, ok := s.Attrs["trio.step"]; ok {
				name += " step " + fmt.Sprint(step)
			}
			if r, ok := s.Attrs["trio.repair"]; ok {
				name += " repair " + fmt.Sprint(r)
			}
			if v, ok := s.Attrs["trio.critic.verdict"]; ok {
				name += " " + v.(string)
				if v == "fail" && (!s.StatusError || s.Attrs["error.type"] != "verdict_fail") {
					t.Errorf("the failing check has status error %v, error.type %v", s.StatusError, s.Attrs["error.type"])
				}
			}
			if s.Name != "invoke_agent "+s.Attrs["gen_ai.agent.name"].(string) {
				t.Errorf("span name %q", s.Name)
			}
			if s.Attrs["gen_ai.agent.name"] != "summarizer" && s.ParentID != root.SpanID {
				t.Errorf("%s: parent %q, want the root", name, parent.Name)
			}
			phases = append(phases, name)
		case "chat":
			chats++
			role := s.Attrs["gen_ai.agent.name"].(string)
			if parent.Attrs["gen_ai.operation.name"] != "invoke_agent" || parent.Attrs["gen_ai.agent.name"] != role {
				t.Errorf("chat span of %s under %q (%v)", role, parent.Name, parent.Attrs["gen_ai.agent.name"])
			}
			if s.Kind != "SPAN_KIND_CLIENT" || s.Name != "chat demo-"+role || s.Attrs["gen_ai.provider.name"] != "openai" ||
				s.Attrs["gen_ai.request.model"] != "demo-"+role || s.Attrs["gen_ai.response.model"] != "scripted:examples/demo/script.yaml" {
				t.Errorf("chat span %q kind %s attributes %v", s.Name, s.Kind, s.Attrs)
			}
			if _, ok := s.Attrs["gen_ai.output.messages"]; ok {
				t.Errorf("chat span holds message contents without the opt-in")
			}
			in += s.Attrs["gen_ai.usage.input_tokens"].(int64)
			out += s.Attrs["gen_ai.usage.output_tokens"].(int64)
		case "execute_tool":
			tools++
			if parent.Attrs["gen_ai.operation.name"] != "invoke_agent" {
				t.Errorf("tool span %q under %q", s.Name, parent.Name)
			}
			name, _ := s.Attrs["gen_ai.tool.name"].(string)
			if s.Name != "execute_tool "+name || s.Attrs["gen_ai.tool.call.id"] == nil || s.Attrs["trio.gate.decision"] == nil || s.Attrs["trio.tool.outcome"] == nil {
				t.Errorf("tool span %q attributes %v", s.Name, s.Attrs)
			}
			if name == "run_tests" && (!strings.HasPrefix(fmt.Sprint(s.Attrs["trio.gate.rule"]), `commands.allow: "go test *"`) || s.Attrs["trio.gate.decision"] != "allow") {
				t.Errorf("run_tests: rule %v decision %v", s.Attrs["trio.gate.rule"], s.Attrs["trio.gate.decision"])
			}
			if _, ok := s.Attrs["gen_ai.tool.call.arguments"]; ok {
				t.Errorf("tool span holds arguments without the opt-in")
			}
			if s.Attrs["trio.tool.outcome"] != "ok" && s.Attrs["error.type"] == nil {
				t.Errorf("failed tool span %q has no error.type: %v", s.Name, s.Attrs)
			}
		}
	}
	m := rep.Metrics
	if chats != m.ModelCalls || in != int64(m.PromptTokens) || out != int64(m.CompletionTokens) {
		t.Errorf("chat spans %d with %d/%d tokens; the report has %d calls, %d/%d tokens", chats, in, out, m.ModelCalls, m.PromptTokens, m.CompletionTokens)
	}
	if root.Attrs["gen_ai.usage.input_tokens"] != int64(m.PromptTokens) || root.Attrs["gen_ai.usage.output_tokens"] != int64(m.CompletionTokens) {
		t.Errorf("root tokens %v/%v, report %d/%d", root.Attrs["gen_ai.usage.input_tokens"], root.Attrs["gen_ai.usage.output_tokens"], m.PromptTokens, m.CompletionTokens)
	}
	if tools != m.ToolCalls {
		t.Errorf("%d execute_tool spans, the report counts %d tool calls", tools, m.ToolCalls)
	}
	got := strings.Join(phases, ", ")
	for _, want := range []string{"planner", "test_designer", "worker step 1", "worker step 2", "critic fail", "worker repair 1", "critic pass"} {
		if !strings.Contains(got, want) {
			t.Errorf("phases lack %q: %s", want, got)
		}
	}
	if h := rc.Headers(); len(h) == 0 || h[0].Get("Authorization") != "Basic dGVzdDp0ZXN0" {
		t.Errorf("export headers: %v", h)
	}
}

// With the opt-in, replies and tool arguments and results are in the spans.
func TestContentsOptIn(t *testing.T) {
	t.Parallel()
	rc := otlptest.Start()
	defer rc.Close()
	runDemo(t, t.TempDir(), newTracer(t, rc, true))
	var replies, args, results int
	for _, s := range rc.Spans() {
		if v, ok := s.Attrs["gen_ai.output.messages"].(string); ok && strings.Contains(v, `"role":"assistant"`) {
			replies++
		}
		if v, ok := s.Attrs["gen_ai.tool.call.arguments"].(string); ok && strings.HasPrefix(v, "{") {
			args++
		}
		if _, ok := s.Attrs["gen_ai.tool.call.result"]; ok {
			results++
		}
	}
	if replies == 0 || args == 0 || results == 0 {
		t.Errorf("contents: %d replies, %d tool arguments, %d results", replies, args, results)
	}
}

// A resumed session is a trace of its own whose root links to the root of
// the session before, named in the run folder.
func TestResumeLinksTraces(t *testing.T) {
	t.Parallel()
	rc := otlptest.Start()
	defer rc.Close()
	dir := t.TempDir()
	tr := newTracer(t, rc, false)
	model, err := demo.Model()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, err := agent.New(model, nil, agent.WithWorkspace(filepath.Join(dir, "project")), agent.WithRunsDir(filepath.Join(dir, "runs")),
		agent.WithSandboxConfig(agent.SandboxConfig{Kind: agent.SandboxLocal}), agent.WithObserver(tr.Observe),
		agent.WithObserver(func(ev agent.Event) {
			if ev.Kind == agent.EventStepFinished {
				cancel() // interrupt after the first step
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := a.Run(ctx, demo.Goal())
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if rep == nil || rep.Reason != agent.StopInterrupted {
		t.Fatalf("first session: %+v, %v", rep, err)
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	first := rootsOf(rc.Spans())
	if len(first) != 1 {
		t.Fatalf("first session roots: %+v", first)
	}
	if b, err := os.ReadFile(filepath.Join(rep.RunDir, telemetry.LinkFile)); err != nil || !strings.Contains(string(b), first[0].TraceID) {
		t.Fatalf("%s: %q, %v", telemetry.LinkFile, b, err)
	}

	tr2 := newTracer(t, rc, false)
	model2, err := demo.Model()
	if err != nil {
		t.Fatal(err)
	}
	rep2, err := agent.Resume(context.Background(), rep.RunDir, model2, nil, agent.WithSandboxConfig(agent.SandboxConfig{Kind: agent.SandboxLocal}), agent.WithObserver(tr2.Observe))
	if err != nil {
		t.Fatal(err)
	}
	if err := tr2.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if rep2.Reason != agent.StopCompleted {
		t.Fatalf("resumed: %s %s", rep2.Reason, rep2.Detail)
	}
	roots := rootsOf(rc.Spans())
	if len(roots) != 2 {
		t.Fatalf("roots after resume: %d", len(roots))
	}
	second := roots[1]
	if second.TraceID == first[0].TraceID || second.Attrs["trio.run.resumed"] != true {
		t.Errorf("the resumed session: trace %s (first %s), resumed %v", second.TraceID, first[0].TraceID, second.Attrs["trio.run.resumed"])
	}
	if want := first[0].TraceID + "/" + first[0].SpanID; len(second.Links) != 1 || second.Links[0] != want {
		t.Errorf("links %v, want [%s]", second.Links, want)
	}
}

// An endpoint that refuses the spans is reported by Shutdown, naming it,
// and does not change the run.
func TestExportFailureReported(t *testing.T) {
	t.Parallel()
	rc := otlptest.Start()
	defer rc.Close()
	rc.FailNext(100)
	tr := newTracer(t, rc, false)
	model, _ := demo.Model()
	dir := t.TempDir()
	a, err := agent.New(model, nil, agent.WithWorkspace(filepath.Join(dir, "project")), agent.WithRunsDir(filepath.Join(dir, "runs")),
		agent.WithSandboxConfig(agent.SandboxConfig{Kind: agent.SandboxLocal}), agent.WithObserver(tr.Observe))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := a.Run(context.Background(), demo.Goal())
	if err != nil || rep.Reason != agent.StopCompleted {
		t.Fatalf("run: %v %v", rep, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = tr.Shutdown(ctx)
	if err == nil || !strings.Contains(err.Error(), rc.URL()+"/v1/traces") {
		t.Errorf("Shutdown: %v", err)
	}
}

func rootsOf(spans []otlptest.Span) []otlptest.Span {
	var out []otlptest.Span
	for _, s := range spans {
		if s.ParentID == "" {
			out = append(out, s)
		}
	}
	return out
}

// Events the demo does not produce: cached prompt tokens, a failed model
// call, a denied tool call, a run that stops on a budget.
func TestEventsToAttributes(t *testing.T) {
	t.Parallel()
	rc := otlptest.Start()
	defer rc.Close()
	tr := newTracer(t, rc, false)
	now := time.Now()
	at := func(ms int) time.Time { return now.Add(time.Duration(ms) * time.Millisecond) }
	no := false
	for _, ev := range []agent.Event{
		{Kind: agent.EventRunStarted, Time: at(0), RunID: "r1"},
		{Kind: agent.EventStepStarted, Time: at(1), Role: agent.RoleWorker, Step: 1, Message: "build"},
		{Kind: agent.EventModelCall, Time: at(50), Role: agent.RoleWorker, Step: 1, Duration: 40 * time.Millisecond, Model: "m-1",
			Tokens: agent.Tokens{Prompt: 1000, Completion: 20, Cached: 800, CacheWrite: 100}, ResponseID: "chatcmpl-7", FinishReason: "tool_calls", MaxTokens: 512},
		{Kind: agent.EventToolCall, Time: at(60), Role: agent.RoleWorker, Step: 1, Tool: "run_command", CallID: "c1", Decision: "deny",
			Rule: `commands.deny: "curl *"`, Outcome: "denied", OK: &no, Target: "curl x", Duration: time.Millisecond},
		{Kind: agent.EventModelCall, Time: at(90), Role: agent.RoleWorker, Step: 1, Duration: 20 * time.Millisecond, Message: "HTTP 500", ErrorType: "*openai.Error"},
		{Kind: agent.EventRunFinished, Time: at(100), Reason: agent.StopBudgetTokens, Verdict: "stopped", Message: "the token budget is spent"},
	} {
		tr.Observe(ev)
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	var chats []otlptest.Span
	var tool, root otlptest.Span
	for _, s := range rc.Spans() {
		switch s.Attrs["gen_ai.operation.name"] {
		case "chat":
			chats = append(chats, s)
		case "execute_tool":
			tool = s
		case "invoke_workflow":
			root = s
		}
	}
	if len(chats) != 2 {
		t.Fatalf("%d chat spans", len(chats))
	}
	if c := chats[0].Attrs; c["gen_ai.usage.cache_read.input_tokens"] != int64(800) || c["gen_ai.usage.cache_creation.input_tokens"] != int64(100) || c["gen_ai.request.model"] != "demo-worker" || c["gen_ai.response.model"] != "m-1" {
		t.Errorf("cached call: %v", c)
	}
	if c := chats[0].Attrs; c["gen_ai.response.id"] != "chatcmpl-7" || c["gen_ai.request.max_tokens"] != int64(512) ||
		fmt.Sprint(c["gen_ai.response.finish_reasons"]) != "[tool_calls]" {
		t.Errorf("call attributes: %v", c)
	}
	if c := chats[0].Attrs; c["server.address"] != "llm.example" || c["server.port"] != int64(8443) || c["gen_ai.provider.name"] != "openai" {
		t.Errorf("endpoint attributes: %v", c)
	}
	if c := chats[1].Attrs; c["gen_ai.request.max_tokens"] != int64(4096) {
		t.Errorf("a call without a cap of its own: max_tokens %v, want the configured 4096", c["gen_ai.request.max_tokens"])
	}
	if !chats[0].Start.Equal(at(10)) || !chats[0].End.Equal(at(50)) {
		t.Errorf("the call spans %v..%v, want 10ms..50ms", chats[0].Start.Sub(now), chats[0].End.Sub(now))
	}
	if c := chats[1]; c.Attrs["error.type"] != "*openai.Error" || !c.StatusError || c.StatusDetail != "HTTP 500" {
		t.Errorf("failed call: %+v", c)
	}
	if tool.Attrs["error.type"] != "denied" || tool.Attrs["trio.gate.rule"] != `commands.deny: "curl *"` || !tool.StatusError || tool.Attrs["trio.tool.target"] != "curl x" {
		t.Errorf("denied call: %+v", tool)
	}
	if root.Attrs["error.type"] != "budget_tokens" || !root.StatusError {
		t.Errorf("root: %+v", root)
	}
}

// Each protocol the OTLP variables select reaches a collector speaking
// it: the same spans arrive over http/protobuf, http/json (ids in hex, as
// OTLP/JSON writes them; the receiver refuses anything else) and grpc,
// with the headers of OTEL_EXPORTER_OTLP_HEADERS.
func TestProtocols(t *testing.T) {
	t.Parallel()
	for _, protocol := range telemetry.Protocols {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			rc := otlptest.Start()
			if protocol == telemetry.ProtocolGRPC {
				rc = otlptest.StartGRPC()
			}
			defer rc.Close()
			env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rc.URL(), "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": protocol,
				"OTEL_EXPORTER_OTLP_PROTOCOL": "bogus-but-overridden", "OTEL_EXPORTER_OTLP_HEADERS": "x-team=core"}
			if protocol == telemetry.ProtocolHTTPProtobuf {
				delete(env, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") // the default
				delete(env, "OTEL_EXPORTER_OTLP_PROTOCOL")
			}
			cfg, err := telemetry.FromEnv(func(k string) string { return env[k] })
			if err != nil {
				t.Fatal(err)
			}
			cfg.Models = map[string]telemetry.Model{agent.RoleWorker: {Provider: "groq", Name: "llama"}}
			tr, err := telemetry.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			now := time.Now()
			for _, ev := range []agent.Event{
				{Kind: agent.EventRunStarted, Time: now, RunID: "r1"},
				{Kind: agent.EventStepStarted, Time: now.Add(time.Millisecond), Role: agent.RoleWorker, Step: 1},
				{Kind: agent.EventModelCall, Time: now.Add(5 * time.Millisecond), Role: agent.RoleWorker, Step: 1, Duration: 3 * time.Millisecond,
					Tokens: agent.Tokens{Prompt: 10, Completion: 2}, FinishReason: "stop", ResponseID: "id-1"},
				{Kind: agent.EventRunFinished, Time: now.Add(6 * time.Millisecond), Reason: agent.StopCompleted, Verdict: "pass"},
			} {
				tr.Observe(ev)
			}
			if err := tr.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			spans := rc.Spans()
			if len(spans) != 3 {
				t.Fatalf("%d spans, want 3 (workflow, agent, chat): %+v", len(spans), spans)
			}
			for _, p := range rc.Protocols() {
				if p != protocol {
					t.Errorf("an export came as %s, want %s", p, protocol)
				}
			}
			if h := rc.Headers(); len(h) == 0 || h[0].Get("x-team") != "core" {
				t.Errorf("headers: %v", h)
			}
			byID := map[string]otlptest.Span{}
			for _, s := range spans {
				byID[s.SpanID] = s
			}
			for _, s := range spans {
				if s.Name == "chat llama" {
					if s.Attrs["gen_ai.provider.name"] != "groq" || s.Attrs["gen_ai.response.id"] != "id-1" || byID[s.ParentID].Name != "invoke_agent worker" {
						t.Errorf("chat span %+v (parent %q)", s, byID[s.ParentID].Name)
					}
					return
				}
			}
			t.Errorf("no chat span: %+v", spans)
		})
	}
}
