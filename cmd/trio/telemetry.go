package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"time"

	"github.com/trioagent/trio/cmd/trio/config"
	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/telemetry"
)

// telemetryFor is the run's tracer: trio.yaml's telemetry block when it
// names an endpoint, else the OTEL_EXPORTER_OTLP_* environment; nil (a
// tracer that observes nothing) when neither does. A bad block or
// variable is a configuration error.
func telemetryFor(cfg *config.File, rec runRecord, prog *progress) (*telemetry.Tracer, error) {
	tc, err := telemetry.FromEnv(os.Getenv)
	if err != nil {
		return nil, configError(err)
	}
	if t := cfg.Telemetry; t.Endpoint != "" {
		headers, err := t.ExpandHeaders(os.Getenv)
		if err != nil {
			return nil, configError(fmt.Errorf("%s: %w", cfg.Path, err))
		}
		protocol := cmp.Or(t.Protocol, tc.Protocol, telemetry.ProtocolHTTPProtobuf)
		tc = telemetry.Config{TracesURL: telemetry.EndpointURL(t.Endpoint, protocol), Protocol: protocol, Headers: headers,
			Contents: t.Contents || tc.Contents, ServiceName: t.ServiceName}
	}
	if !tc.Enabled() {
		return nil, nil
	}
	tc.Models = roleModels(cfg, rec)
	tc.Warn = prog.warn
	tr, err := telemetry.New(tc)
	if err != nil {
		return nil, configError(err)
	}
	return tr, nil
}

// roleModels is each role's provider, model name, endpoint and reply cap,
// as the run's model is set up: the demo and script models answer
// through an OpenAI-compatible loopback endpoint with the role as the
// model name. The provider is named from the endpoint's host
// (telemetry.ProviderName), so a compatible server is not called openai.
func roleModels(cfg *config.File, rec runRecord) map[string]telemetry.Model {
	out := map[string]telemetry.Model{}
	perRole := cfg.Models.PerRole()
	for _, role := range roles {
		if rec.Model == "demo" || rec.Model == "script" {
			out[role] = telemetry.Model{Provider: config.KindOpenAI, Name: role}
			continue
		}
		e := cfg.Endpoint
		if re, ok := cfg.Endpoints[role]; ok {
			e = re
		}
		kind := cmp.Or(e.Kind, config.KindOpenAI)
		base, maxTokens := cmp.Or(e.BaseURL, os.Getenv(envBaseURL), "https://api.openai.com/v1"), cfg.MaxTokens
		if kind == config.KindAnthropic {
			base, maxTokens = cmp.Or(e.BaseURL, os.Getenv("ANTHROPIC_BASE_URL"), llm.DefaultAnthropicBaseURL), cmp.Or(maxTokens, llm.DefaultAnthropicMaxTokens)
		}
		host, port := telemetry.Server(base)
		name := perRole[role]
		if name == "" {
			name = cfg.Models.Default
		}
		if name == "" {
			name = os.Getenv(envModel)
		}
		out[role] = telemetry.Model{Provider: telemetry.ProviderName(kind, base), Name: name, ServerAddress: host, ServerPort: port, MaxTokens: maxTokens}
	}
	return out
}

// flushTelemetry sends what is left; a collector that failed is a warning,
// never the run's outcome.
func flushTelemetry(tr *telemetry.Tracer, prog *progress) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := tr.Shutdown(ctx); err != nil {
		prog.warn(err.Error())
	}
}
