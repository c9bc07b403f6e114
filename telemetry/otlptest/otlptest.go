// Package otlptest is an OTLP/HTTP traces receiver on loopback for tests:
// it decodes what an exporter posts with the OTLP protobuf definitions
// and keeps the spans, flattened, for assertions.
package otlptest

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one received span with its resource's service name.
type Span struct {
	Service  string
	Name     string
	Kind     string
	TraceID  string
	SpanID   string
	ParentID string
	Start    time.Time
	End      time.Time
	Attrs    map[string]any
	// Links are the linked spans as "traceid/spanid".
	Links        []string
	StatusError  bool
	StatusDetail string
	Events       []string
}

// Receiver is a running receiver; Close stops it.
type Receiver struct {
	srv *httptest.Server

	mu      sync.Mutex
	spans   []Span
	headers []http.Header
	fail    int
}

// Start serves /v1/traces on a loopback port.
func Start() *Receiver {
	r := &Receiver{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", r.handle)
	r.srv = httptest.NewServer(mux)
	return r
}

// URL is the base endpoint (for OTEL_EXPORTER_OTLP_ENDPOINT).
func (r *Receiver) URL() string { return r.srv.URL }

// Close stops the server.
func (r *Receiver) Close() { r.srv.Close() }

// FailNext makes the next n exports answer 400 Bad Request.
func (r *Receiver) FailNext(n int) {
	r.mu.Lock()
	r.fail = n
	r.mu.Unlock()
}

// Spans are the spans received so far, in arrival order.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Headers are the request headers of each export.
func (r *Receiver) Headers() []http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]http.Header(nil), r.headers...)
}

func (r *Receiver) handle(w http.ResponseWriter, req *http.Request) {
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var msg coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &msg); err != nil {
		http.Error(w, "not an OTLP ExportTraceServiceRequest: "+err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.headers = append(r.headers, req.Header.Clone())
	if r.fail > 0 {
		r.fail--
		r.mu.Unlock()
		http.Error(w, "failing on purpose", http.StatusBadRequest)
		return
	}
	for _, rs := range msg.ResourceSpans {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				sp := Span{Service: service, Name: s.Name, Kind: s.Kind.String(), TraceID: hex.EncodeToString(s.TraceId), SpanID: hex.EncodeToString(s.SpanId),
					ParentID: hex.EncodeToString(s.ParentSpanId), Start: time.Unix(0, int64(s.StartTimeUnixNano)), End: time.Unix(0, int64(s.EndTimeUnixNano)),
					Attrs: attrs(s.Attributes)}
				for _, l := range s.Links {
					sp.Links = append(sp.Links, hex.EncodeToString(l.TraceId)+"/"+hex.EncodeToString(l.SpanId))
				}
				for _, e := range s.Events {
					sp.Events = append(sp.Events, e.Name)
				}
				if st := s.Status; st != nil && st.Code == 2 {
					sp.StatusError, sp.StatusDetail = true, st.Message
				}
				r.spans = append(r.spans, sp)
			}
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

func attrs(kvs []*commonpb.KeyValue) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.Key] = x.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.Key] = x.IntValue
		case *commonpb.AnyValue_BoolValue:
			m[kv.Key] = x.BoolValue
		case *commonpb.AnyValue_DoubleValue:
			m[kv.Key] = x.DoubleValue
		default:
			m[kv.Key] = v.String()
		}
	}
	return m
}
