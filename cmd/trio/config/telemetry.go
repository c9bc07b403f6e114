package config

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
)

// Telemetry sends each run's trace to an OpenTelemetry collector over
// OTLP (Langfuse, Jaeger, Phoenix...). Unset, the standard
// OTEL_EXPORTER_OTLP_* environment variables decide.
type Telemetry struct {
	// Endpoint is the OTLP base URL; over HTTP spans go to
	// Endpoint/v1/traces, over grpc to Endpoint itself.
	Endpoint string `yaml:"endpoint"`
	// Protocol is http/protobuf, http/json or grpc; unset, the
	// OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL variable's, else http/protobuf.
	Protocol string `yaml:"protocol"`
	// Headers are sent with every export. A value may name environment
	// variables as ${NAME}, so that a secret stays out of the file.
	Headers map[string]string `yaml:"headers"`
	// Contents records model replies and tool arguments and results in the
	// spans (off by default, as the GenAI conventions ask).
	Contents bool `yaml:"contents"`
	// ServiceName is the service.name of the spans; default trio.
	ServiceName string `yaml:"service_name"`
}

// ExpandHeaders returns the headers with every ${NAME} replaced by the
// variable's value from getenv; an unset or empty variable is an error
// naming the header and the variable.
func (t Telemetry) ExpandHeaders(getenv func(string) string) (map[string]string, error) {
	out := make(map[string]string, len(t.Headers))
	for _, k := range slices.Sorted(maps.Keys(t.Headers)) {
		var missing []string
		out[k] = os.Expand(t.Headers[k], func(name string) string {
			v := getenv(name)
			if v == "" {
				missing = append(missing, name)
			}
			return v
		})
		if len(missing) > 0 {
			return nil, fmt.Errorf("telemetry.headers.%s: environment variable %s is not set", k, strings.Join(missing, ", "))
		}
	}
	return out, nil
}

func (c *checker) checkTelemetry(t *Telemetry) {
	if t.Endpoint != "" && !strings.HasPrefix(t.Endpoint, "http://") && !strings.HasPrefix(t.Endpoint, "https://") {
		c.fail("telemetry.endpoint", "want the OTLP/HTTP base URL (http://localhost:4318), got %q", t.Endpoint)
	}
	c.oneOf("telemetry.protocol", t.Protocol, "http/protobuf", "http/json", "grpc")
	if t.Endpoint == "" && (len(t.Headers) > 0 || t.Contents || t.ServiceName != "" || t.Protocol != "") {
		c.fail("telemetry", "set endpoint, the OTLP/HTTP base URL, or remove the block")
	}
	for _, k := range slices.Sorted(maps.Keys(t.Headers)) {
		if k == "" || strings.ContainsAny(k, " :\r\n") {
			c.fail("telemetry.headers", "%q is not an HTTP header name", k)
		}
		if strings.ContainsAny(t.Headers[k], "\r\n") {
			c.fail("telemetry.headers."+k, "a header value holds a line break")
		}
	}
}
