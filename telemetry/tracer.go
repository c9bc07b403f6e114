package telemetry

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/llm"
)

// LinkFile is the file in the run folder that holds the trace and span id
// of the latest session's root span, so that a resumed session's trace
// links to the one before.
const LinkFile = "otel-trace.json"

// Attribute keys of Trio's own, next to the gen_ai.* ones.
const (
	AttrRunID      = attribute.Key("trio.run.id")
	AttrResumed    = attribute.Key("trio.run.resumed")
	AttrStopReason = attribute.Key("trio.run.stop_reason")
	AttrStatus     = attribute.Key("trio.run.status")
	AttrStep       = attribute.Key("trio.step")
	AttrStepTitle  = attribute.Key("trio.step.title")
	AttrSteps      = attribute.Key("trio.plan.steps")
	AttrRepair     = attribute.Key("trio.repair")
	AttrVerdict    = attribute.Key("trio.critic.verdict")
	AttrFindings   = attribute.Key("trio.critic.findings")
	AttrDecision   = attribute.Key("trio.gate.decision")
	AttrRule       = attribute.Key("trio.gate.rule")
	AttrOutcome    = attribute.Key("trio.tool.outcome")
	AttrTarget     = attribute.Key("trio.tool.target")
	AttrSummary    = attribute.Key("trio.summary")
	AttrCost       = attribute.Key("trio.cost")
)

// Tracer turns a run's events into spans. Observe is its agent observer;
// Shutdown flushes the spans and says whether the export failed.
type Tracer struct {
	cfg Config
	tp  *sdktrace.TracerProvider
	tr  trace.Tracer
	exp *recordingExporter

	mu     sync.Mutex
	runDir string
	root   *span
	phase  *span // the role phase in progress
	sum    *span // a summary in progress, inside the phase
}

// span is an open span and the latest time anything in it ended.
type span struct {
	key  string
	s    trace.Span
	ctx  context.Context
	last time.Time
}

// New starts a tracer that exports to cfg.TracesURL. The exporter connects
// lazily: an unreachable endpoint shows at Shutdown, not here.
func New(cfg Config) (*Tracer, error) {
	if !cfg.Enabled() {
		return nil, fmt.Errorf("%w: no OTLP traces URL", ErrConfig)
	}
	if err := checkURL(cfg.TracesURL); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if cfg.ServiceName == "" {
		cfg.ServiceName = "trio"
	}
	if cfg.Protocol == "" {
		cfg.Protocol = ProtocolHTTPProtobuf
	}
	if err := CheckProtocol(cfg.Protocol); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	exp, err := exporter(cfg)
	if err != nil {
		return nil, fmt.Errorf("telemetry: OTLP exporter: %w", err)
	}
	rec := &recordingExporter{inner: exp}
	res := resource.NewSchemaless(semconv.ServiceName(cfg.ServiceName), attribute.String("service.namespace", "trio"))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(rec), sdktrace.WithResource(res), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	return &Tracer{cfg: cfg, tp: tp, tr: tp.Tracer("github.com/trioagent/trio/telemetry"), exp: rec}, nil
}

// exporter is the OpenTelemetry SDK's OTLP exporter for cfg.Protocol.
// Both retry briefly: a collector that is down must not hold the run's
// end for long.
func exporter(cfg Config) (*otlptrace.Exporter, error) {
	ctx := context.Background()
	if cfg.Protocol == ProtocolGRPC {
		opts := []otlptracegrpc.Option{
			otlptracegrpc.WithEndpointURL(cfg.TracesURL),
			otlptracegrpc.WithTimeout(10 * time.Second),
			otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: true, InitialInterval: 500 * time.Millisecond, MaxInterval: 2 * time.Second, MaxElapsedTime: 10 * time.Second}),
		}
		if len(cfg.Headers) > 0 {
			opts = append(opts, otlptracegrpc.WithHeaders(cfg.Headers))
		}
		return otlptracegrpc.New(ctx, opts...)
	}
	encoding := otlptracehttp.EncodingProtobuf
	if cfg.Protocol == ProtocolHTTPJSON {
		encoding = otlptracehttp.EncodingJSON
	}
	opts := []otlptracehttp.Option{
		otlptracehttp.WithEndpointURL(cfg.TracesURL),
		otlptracehttp.WithEncoding(encoding),
		otlptracehttp.WithTimeout(10 * time.Second),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: true, InitialInterval: 500 * time.Millisecond, MaxInterval: 2 * time.Second, MaxElapsedTime: 10 * time.Second}),
	}
	if len(cfg.Headers) > 0 {
		opts = append(opts, otlptracehttp.WithHeaders(cfg.Headers))
	}
	return otlptracehttp.New(ctx, opts...)
}

// Shutdown ends the spans still open (a run that stopped without its
// run_finished event), flushes everything and returns the first export
// error. A nil Tracer has nothing to do.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	now := time.Now()
	for _, s := range []*span{t.sum, t.phase, t.root} {
		if s != nil {
			s.s.SetStatus(codes.Error, "the run ended without finishing")
			s.s.End(trace.WithTimestamp(now))
		}
	}
	t.sum, t.phase, t.root = nil, nil, nil
	t.mu.Unlock()
	err := t.tp.Shutdown(ctx)
	if e := t.exp.failure(); e != nil {
		err = e
	}
	if err != nil {
		return fmt.Errorf("telemetry: export to %s: %w", t.cfg.TracesURL, err)
	}
	return nil
}

// Observe is the agent observer (agent.WithObserver(t.Observe)).
func (t *Tracer) Observe(ev agent.Event) {
	if t == nil {
		return // small enough to inline: a nil check is all "off" costs
	}
	t.observe(ev)
}

func (t *Tracer) observe(ev agent.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch ev.Kind {
	case agent.EventRunStarted, agent.EventRunResumed:
		t.start(ev)
	case agent.EventRunFinished:
		t.finish(ev)
	case agent.EventPlanReady:
		t.endPhaseOf(agent.RolePlanner, ev.Time, attribute.Int(string(AttrSteps), ev.Steps))
	case agent.EventTestsDesigned:
		t.endPhaseOf(agent.RoleTestDesigner, ev.Time)
	case agent.EventStepStarted:
		t.openPhase(ev, ev.Time).s.SetAttributes(AttrStepTitle.String(ev.Message))
	case agent.EventStepFinished:
		t.endPhaseOf(agent.RoleWorker, ev.Time)
	case agent.EventRepairStarted, agent.EventTestRepair:
		t.openPhase(ev, ev.Time)
	case agent.EventModelCall:
		t.chat(ev)
	case agent.EventToolCall:
		t.tool(ev)
	case agent.EventModelRetry:
		if p := t.phaseFor(ev, ev.Time); p != nil {
			p.s.AddEvent("model_retry", trace.WithTimestamp(ev.Time), trace.WithAttributes(attribute.String("message", ev.Message)))
		}
	case agent.EventCriticVerdict:
		p := t.phaseFor(ev, ev.Time)
		if p == nil {
			return
		}
		p.s.SetAttributes(AttrVerdict.String(ev.Verdict), AttrFindings.String(ev.Message))
		if ev.Verdict != "pass" {
			p.s.SetAttributes(semconv.ErrorTypeKey.String("verdict_" + ev.Verdict))
			p.s.SetStatus(codes.Error, ev.Message)
		}
		t.endPhase(ev.Time)
	case agent.EventSummary, agent.EventMasked:
		s := t.summary(ev.Time)
		if s == nil {
			return
		}
		s.s.SetAttributes(AttrSummary.String(ev.Message))
		s.s.End(trace.WithTimestamp(ev.Time))
		t.touch(t.phase, ev.Time)
		t.sum = nil
	case agent.EventWarning, agent.EventSandbox:
		if s := t.innermost(); s != nil {
			s.s.AddEvent(string(ev.Kind), trace.WithTimestamp(ev.Time), trace.WithAttributes(attribute.String("message", ev.Message)))
		}
	}
}

// start opens the session's root span, linked to the previous session's
// when the run folder names one, and records it there.
func (t *Tracer) start(ev agent.Event) {
	t.runDir = ev.RunDir
	opts := []trace.SpanStartOption{trace.WithTimestamp(ev.Time), trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(semconv.GenAIOperationNameInvokeWorkflow, semconv.GenAIWorkflowName("trio"),
			semconv.GenAIConversationID(ev.RunID), AttrRunID.String(ev.RunID), AttrResumed.Bool(ev.Kind == agent.EventRunResumed))}
	if prev, ok := t.readLink(); ok && ev.Kind == agent.EventRunResumed {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: prev, Attributes: []attribute.KeyValue{attribute.String("trio.link", "previous_session")}}))
	}
	ctx, s := t.tr.Start(context.Background(), "invoke_workflow trio", opts...)
	t.root = &span{key: "run", s: s, ctx: ctx, last: ev.Time}
	t.writeLink(s.SpanContext())
}

func (t *Tracer) finish(ev agent.Event) {
	if t.root == nil {
		return
	}
	if t.sum != nil {
		t.sum.s.End(trace.WithTimestamp(t.sum.last))
		t.sum = nil
	}
	t.endPhase(time.Time{})
	s := t.root.s
	s.SetAttributes(AttrStopReason.String(string(ev.Reason)), AttrStatus.String(ev.Verdict),
		semconv.GenAIUsageInputTokens(ev.Tokens.TotalPrompt), semconv.GenAIUsageOutputTokens(ev.Tokens.TotalCompletion))
	if c := ev.Cost; c != nil {
		if c.CachedPromptTokens > 0 {
			s.SetAttributes(semconv.GenAIUsageCacheReadInputTokens(c.CachedPromptTokens))
		}
		if c.CacheWriteTokens > 0 {
			s.SetAttributes(semconv.GenAIUsageCacheCreationInputTokens(c.CacheWriteTokens))
		}
		if c.Priced {
			s.SetAttributes(AttrCost.Float64(c.Total))
		}
	}
	if ev.Reason != agent.StopCompleted {
		s.SetAttributes(semconv.ErrorTypeKey.String(string(ev.Reason)))
		s.SetStatus(codes.Error, ev.Message)
	}
	s.End(trace.WithTimestamp(ev.Time))
	t.root = nil
}

// phaseKey names the role phase an event belongs to: each Worker step and
// repair round is a phase of its own.
func phaseKey(ev agent.Event) string {
	switch ev.Role {
	case agent.RoleWorker:
		if ev.Repair > 0 {
			return "worker/repair/" + strconv.Itoa(ev.Repair)
		}
		return "worker/step/" + strconv.Itoa(ev.Step)
	case agent.RoleTestDesigner:
		return ev.Role + "/" + strconv.Itoa(ev.Repair)
	}
	return ev.Role
}

// phaseFor is the open phase ev belongs to, opened at start when a
// different one (or none) is open.
func (t *Tracer) phaseFor(ev agent.Event, start time.Time) *span {
	if t.root == nil || ev.Role == "" {
		return nil
	}
	if t.phase != nil && t.phase.key == phaseKey(ev) {
		return t.phase
	}
	return t.openPhase(ev, start)
}

// openPhase ends the phase in progress and opens ev's.
func (t *Tracer) openPhase(ev agent.Event, start time.Time) *span {
	if t.root == nil { // no run_started seen: a span that records nothing
		return &span{s: trace.SpanFromContext(context.Background()), ctx: context.Background()}
	}
	t.endPhase(time.Time{})
	attrs := []attribute.KeyValue{semconv.GenAIOperationNameInvokeAgent, semconv.GenAIAgentName(ev.Role), semconv.GenAIConversationID(ev.RunID)}
	if ev.Role == agent.RoleWorker && ev.Repair == 0 && ev.Step > 0 {
		attrs = append(attrs, AttrStep.Int(ev.Step))
	}
	if ev.Repair > 0 {
		attrs = append(attrs, AttrRepair.Int(ev.Repair))
	}
	ctx, s := t.tr.Start(t.root.ctx, "invoke_agent "+ev.Role, trace.WithTimestamp(start), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	t.phase = &span{key: phaseKey(ev), s: s, ctx: ctx, last: start}
	return t.phase
}

// endPhase ends the phase in progress at end, or at the end of the last
// thing in it when end is zero.
func (t *Tracer) endPhase(end time.Time) {
	p := t.phase
	if p == nil {
		return
	}
	if end.IsZero() || end.Before(p.last) {
		end = p.last
	}
	p.s.End(trace.WithTimestamp(end))
	t.touch(t.root, end)
	t.phase = nil
}

// endPhaseOf ends the phase in progress when it is role's.
func (t *Tracer) endPhaseOf(role string, end time.Time, attrs ...attribute.KeyValue) {
	if t.phase == nil || !strings.HasPrefix(t.phase.key, role) {
		return
	}
	t.phase.s.SetAttributes(attrs...)
	t.endPhase(end)
}

// summary is the summary span in progress, opened at start inside the
// phase when none is.
func (t *Tracer) summary(start time.Time) *span {
	if t.sum != nil {
		return t.sum
	}
	parent := t.phase
	if parent == nil {
		parent = t.root
	}
	if parent == nil {
		return nil
	}
	ctx, s := t.tr.Start(parent.ctx, "invoke_agent "+agent.RoleSummarizer, trace.WithTimestamp(start), trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(semconv.GenAIOperationNameInvokeAgent, semconv.GenAIAgentName(agent.RoleSummarizer)))
	t.sum = &span{key: agent.RoleSummarizer, s: s, ctx: ctx, last: start}
	return t.sum
}

// parentOf is the span a model or tool call of ev's goes under.
func (t *Tracer) parentOf(ev agent.Event, start time.Time) *span {
	if ev.Role == agent.RoleSummarizer {
		return t.summary(start)
	}
	return t.phaseFor(ev, start)
}

func (t *Tracer) chat(ev agent.Event) {
	start := ev.Time.Add(-ev.Duration)
	p := t.parentOf(ev, start)
	if p == nil {
		return
	}
	m := t.cfg.Models[ev.Role]
	model := m.Name
	if model == "" {
		model = ev.Model
	}
	attrs := []attribute.KeyValue{semconv.GenAIOperationNameChat, semconv.GenAIAgentName(ev.Role)}
	if m.Provider != "" {
		attrs = append(attrs, semconv.GenAIProviderNameKey.String(m.Provider))
	}
	if model != "" {
		attrs = append(attrs, semconv.GenAIRequestModel(model))
	}
	if ev.Model != "" {
		attrs = append(attrs, semconv.GenAIResponseModel(ev.Model))
	}
	if m.ServerAddress != "" {
		attrs = append(attrs, semconv.ServerAddress(m.ServerAddress))
		if m.ServerPort > 0 {
			attrs = append(attrs, semconv.ServerPort(m.ServerPort))
		}
	}
	if n := cmp.Or(ev.MaxTokens, m.MaxTokens); n > 0 {
		attrs = append(attrs, semconv.GenAIRequestMaxTokens(n))
	}
	if ev.ResponseID != "" {
		attrs = append(attrs, semconv.GenAIResponseID(ev.ResponseID))
	}
	if ev.FinishReason != "" {
		attrs = append(attrs, semconv.GenAIResponseFinishReasons(ev.FinishReason))
	}
	if ev.ErrorType == "" {
		attrs = append(attrs, semconv.GenAIUsageInputTokens(ev.Tokens.Prompt), semconv.GenAIUsageOutputTokens(ev.Tokens.Completion))
		if ev.Tokens.Cached > 0 {
			attrs = append(attrs, semconv.GenAIUsageCacheReadInputTokens(ev.Tokens.Cached))
		}
		if ev.Tokens.CacheWrite > 0 {
			attrs = append(attrs, semconv.GenAIUsageCacheCreationInputTokens(ev.Tokens.CacheWrite))
		}
	}
	if t.cfg.Contents && ev.Content != nil && ev.Content.Reply != nil {
		if b, err := json.Marshal([]any{outputMessage(ev.Content.Reply)}); err == nil {
			attrs = append(attrs, semconv.GenAIOutputMessagesKey.String(string(b)))
		}
	}
	name := "chat"
	if model != "" {
		name += " " + model
	}
	_, s := t.tr.Start(p.ctx, name, trace.WithTimestamp(start), trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	if ev.ErrorType != "" {
		s.SetAttributes(semconv.ErrorTypeKey.String(ev.ErrorType))
		s.SetStatus(codes.Error, ev.Message)
	}
	s.End(trace.WithTimestamp(ev.Time))
	t.touch(p, ev.Time)
}

func (t *Tracer) tool(ev agent.Event) {
	start := ev.Time.Add(-ev.Duration)
	p := t.parentOf(ev, start)
	if p == nil {
		return
	}
	attrs := []attribute.KeyValue{semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(ev.Tool), semconv.GenAIToolTypeKey.String("function"),
		AttrDecision.String(ev.Decision), AttrOutcome.String(ev.Outcome)}
	if ev.CallID != "" {
		attrs = append(attrs, semconv.GenAIToolCallID(ev.CallID))
	}
	if ev.Rule != "" {
		attrs = append(attrs, AttrRule.String(ev.Rule))
	}
	if ev.Target != "" {
		attrs = append(attrs, AttrTarget.String(ev.Target))
	}
	if t.cfg.Contents && ev.Content != nil {
		if ev.Content.Args != "" {
			attrs = append(attrs, semconv.GenAIToolCallArgumentsKey.String(ev.Content.Args))
		}
		if ev.Content.Result != "" {
			attrs = append(attrs, semconv.GenAIToolCallResultKey.String(ev.Content.Result))
		}
	}
	_, s := t.tr.Start(p.ctx, "execute_tool "+ev.Tool, trace.WithTimestamp(start), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	if ev.OK != nil && !*ev.OK {
		et := ev.Outcome
		if et == "" || et == "ok" {
			et = "tool_error"
		}
		s.SetAttributes(semconv.ErrorTypeKey.String(et))
		s.SetStatus(codes.Error, ev.Message)
	}
	s.End(trace.WithTimestamp(ev.Time))
	t.touch(p, ev.Time)
}

func (t *Tracer) innermost() *span {
	for _, s := range []*span{t.sum, t.phase, t.root} {
		if s != nil {
			return s
		}
	}
	return nil
}

func (t *Tracer) touch(s *span, at time.Time) {
	if s != nil && at.After(s.last) {
		s.last = at
	}
}

// outputMessage is a reply in the conventions' output message shape.
func outputMessage(m *llm.Message) map[string]any {
	parts := []map[string]any{}
	if m.Content != "" {
		parts = append(parts, map[string]any{"type": "text", "content": m.Content})
	}
	for _, tc := range m.ToolCalls {
		parts = append(parts, map[string]any{"type": "tool_call", "id": tc.ID, "name": tc.Name, "arguments": json.RawMessage(validOr(tc.Arguments))})
	}
	return map[string]any{"role": "assistant", "parts": parts}
}

func validOr(s string) string {
	if json.Valid([]byte(s)) {
		return s
	}
	b, _ := json.Marshal(s)
	return string(b)
}

type link struct {
	TraceID string `json:"trace_id"`
	SpanID  string `json:"span_id"`
}

func (t *Tracer) readLink() (trace.SpanContext, bool) {
	if t.runDir == "" {
		return trace.SpanContext{}, false
	}
	b, err := os.ReadFile(filepath.Join(t.runDir, LinkFile))
	if err != nil {
		return trace.SpanContext{}, false
	}
	var l link
	if json.Unmarshal(b, &l) != nil {
		return trace.SpanContext{}, false
	}
	tid, err1 := trace.TraceIDFromHex(l.TraceID)
	sid, err2 := trace.SpanIDFromHex(l.SpanID)
	if err1 != nil || err2 != nil {
		return trace.SpanContext{}, false
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true}), true
}

func (t *Tracer) writeLink(sc trace.SpanContext) {
	if t.runDir == "" {
		return
	}
	b, _ := json.Marshal(link{TraceID: sc.TraceID().String(), SpanID: sc.SpanID().String()})
	if err := os.WriteFile(filepath.Join(t.runDir, LinkFile), append(b, '\n'), 0o644); err != nil && t.cfg.Warn != nil {
		t.cfg.Warn(fmt.Sprintf("telemetry: %v (a resumed run's trace will not link to this one)", err))
	}
}

// recordingExporter keeps the first export error for Shutdown and hides
// it from the SDK, which would otherwise log it through a global handler.
type recordingExporter struct {
	inner sdktrace.SpanExporter
	mu    sync.Mutex
	err   error
}

func (e *recordingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if err := e.inner.ExportSpans(ctx, spans); err != nil {
		e.mu.Lock()
		if e.err == nil {
			e.err = err
		}
		e.mu.Unlock()
	}
	return nil
}

func (e *recordingExporter) Shutdown(ctx context.Context) error { return e.inner.Shutdown(ctx) }

func (e *recordingExporter) failure() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}
