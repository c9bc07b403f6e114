package telemetry

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// The environment variables the package reads (the OpenTelemetry SDK's own
// names, so a collector set up for other programs works unchanged).
const (
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvHeaders        = "OTEL_EXPORTER_OTLP_HEADERS"
	EnvTracesHeaders  = "OTEL_EXPORTER_OTLP_TRACES_HEADERS"
	EnvProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	EnvServiceName    = "OTEL_SERVICE_NAME"
	EnvSDKDisabled    = "OTEL_SDK_DISABLED"
	// EnvCaptureContent is the opt-in to message contents that the GenAI
	// instrumentations share.
	EnvCaptureContent = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
)

// The OTLP transports, as OTEL_EXPORTER_OTLP_PROTOCOL names them.
const (
	ProtocolHTTPProtobuf = "http/protobuf" // the default
	ProtocolHTTPJSON     = "http/json"
	ProtocolGRPC         = "grpc"
)

// Protocols are the values Config.Protocol takes.
var Protocols = []string{ProtocolHTTPProtobuf, ProtocolHTTPJSON, ProtocolGRPC}

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("telemetry: invalid configuration")

// Config says where spans go and what they hold.
type Config struct {
	// TracesURL is the full OTLP/HTTP traces URL
	// (http://localhost:4318/v1/traces), or for grpc the collector's URL
	// (http://localhost:4317; http:// is a connection without TLS).
	// Empty: telemetry is off.
	TracesURL string
	// Protocol is http/protobuf (the default), http/json or grpc.
	Protocol string
	// Headers are sent with every export (Authorization for Langfuse...).
	Headers map[string]string
	// Contents records model replies and tool arguments and results in the
	// spans (gen_ai.output.messages, gen_ai.tool.call.arguments/result).
	Contents bool
	// ServiceName is the resource's service.name; default "trio".
	ServiceName string
	// Models names the provider and model of each role (keys: planner,
	// worker, critic, summarizer, test_designer) for gen_ai.provider.name
	// and gen_ai.request.model; a role without one reports what answered.
	Models map[string]Model
	// Warn receives problems that do not stop the run (the run folder's
	// trace link cannot be written). Nil: they are dropped.
	Warn func(string)
}

// Model is a role's provider (gen_ai.provider.name: openai, anthropic,
// groq...; see ProviderName), model name, endpoint (server.address and
// server.port; see Server) and configured reply cap (the chat span's
// gen_ai.request.max_tokens when a call sets none of its own; 0: not
// known).
type Model struct {
	Provider      string
	Name          string
	ServerAddress string
	ServerPort    int
	MaxTokens     int
}

// Enabled reports whether c exports anything.
func (c Config) Enabled() bool { return c.TracesURL != "" }

// TracesURL is the traces URL for an OTLP base endpoint
// (http://host:4318 → http://host:4318/v1/traces), as the OTLP exporter
// specification derives it from OTEL_EXPORTER_OTLP_ENDPOINT.
func TracesURL(base string) string {
	if base == "" {
		return ""
	}
	return strings.TrimRight(base, "/") + "/v1/traces"
}

// EndpointURL is the exporter's URL for an OTLP base endpoint under
// protocol: the traces URL over HTTP (see TracesURL), the endpoint as is
// over grpc.
func EndpointURL(base, protocol string) string {
	if protocol == ProtocolGRPC {
		return base
	}
	return TracesURL(base)
}

// CheckProtocol says whether p is one of Protocols.
func CheckProtocol(p string) error {
	if !slices.Contains(Protocols, p) {
		return fmt.Errorf("unknown protocol %q: want one of %s", p, strings.Join(Protocols, ", "))
	}
	return nil
}

// FromEnv is the configuration the standard OTEL_* variables give,
// through getenv (os.Getenv), as the OTLP exporter specification reads
// them: the traces-specific variable over the general one, the protocol
// deciding whether the base endpoint gets /v1/traces. Telemetry is off
// when no endpoint is set or OTEL_SDK_DISABLED is true. An unknown
// protocol, a malformed URL or header list is an error naming the
// variable.
func FromEnv(getenv func(string) string) (Config, error) {
	var c Config
	if strings.EqualFold(strings.TrimSpace(getenv(EnvSDKDisabled)), "true") {
		return c, nil
	}
	c.Protocol = ProtocolHTTPProtobuf
	for _, name := range []string{EnvTracesProtocol, EnvProtocol} {
		if p := strings.TrimSpace(getenv(name)); p != "" {
			if err := CheckProtocol(p); err != nil {
				return Config{}, fmt.Errorf("%w: %s: %v", ErrConfig, name, err)
			}
			c.Protocol = p
			break
		}
	}
	c.TracesURL = getenv(EnvTracesEndpoint)
	urlVar := EnvTracesEndpoint
	if c.TracesURL == "" {
		c.TracesURL, urlVar = EndpointURL(getenv(EnvEndpoint), c.Protocol), EnvEndpoint
	}
	if c.TracesURL == "" {
		return Config{}, nil
	}
	if err := checkURL(c.TracesURL); err != nil {
		return Config{}, fmt.Errorf("%w: %s: %v", ErrConfig, urlVar, err)
	}
	c.Headers = map[string]string{}
	for _, name := range []string{EnvHeaders, EnvTracesHeaders} {
		h, err := ParseHeaders(getenv(name))
		if err != nil {
			return Config{}, fmt.Errorf("%w: %s: %v", ErrConfig, name, err)
		}
		for k, v := range h {
			c.Headers[k] = v
		}
	}
	c.ServiceName = getenv(EnvServiceName)
	c.Contents = strings.EqualFold(strings.TrimSpace(getenv(EnvCaptureContent)), "true")
	return c, nil
}

// ParseHeaders parses the OTEL_EXPORTER_OTLP_HEADERS form:
// key1=value1,key2=value2 with URL-encoded values.
func ParseHeaders(s string) (map[string]string, error) {
	out := map[string]string{}
	for i, part := range strings.Split(s, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("entry %d is not key=value", i+1)
		}
		val, err := url.QueryUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("entry %d (%s): %v", i+1, k, err)
		}
		out[k] = val
	}
	return out, nil
}

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%q: want an http:// or https:// URL", s)
	}
	if u.Host == "" {
		return fmt.Errorf("%q has no host", s)
	}
	return nil
}
