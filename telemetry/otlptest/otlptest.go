// Package otlptest is an OTLP traces receiver on loopback for tests, over
// HTTP (binary protobuf or JSON, told by Content-Type) or gRPC: it decodes
// what an exporter sends with the OTLP protobuf definitions and keeps the
// spans, flattened, for assertions. JSON is read as the OTLP specification
// writes it (trace and span ids in hex, not protojson's base64): a body
// with ids in another form is refused, so a test sees a non-conforming
// exporter fail.
package otlptest

import (
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
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
	srv  *httptest.Server
	grpc *grpc.Server
	addr string

	mu        sync.Mutex
	spans     []Span
	headers   []http.Header
	protocols []string
	fail      int
}

// The encodings Protocols reports, named as OTEL_EXPORTER_OTLP_PROTOCOL
// names them.
const (
	HTTPProtobuf = "http/protobuf"
	HTTPJSON     = "http/json"
	GRPC         = "grpc"
)

// Start serves /v1/traces on a loopback port.
func Start() *Receiver {
	r := &Receiver{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", r.handle)
	r.srv = httptest.NewServer(mux)
	return r
}

// StartGRPC serves the OTLP TraceService over gRPC (no TLS) on a
// loopback port.
func StartGRPC() *Receiver {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("otlptest: listen: %v", err))
	}
	r := &Receiver{grpc: grpc.NewServer(), addr: ln.Addr().String()}
	coltrace.RegisterTraceServiceServer(r.grpc, traceService{r: r})
	go func() { _ = r.grpc.Serve(ln) }()
	return r
}

// URL is the base endpoint (for OTEL_EXPORTER_OTLP_ENDPOINT): over gRPC,
// http://host:port, the scheme saying "no TLS".
func (r *Receiver) URL() string {
	if r.grpc != nil {
		return "http://" + r.addr
	}
	return r.srv.URL
}

// Close stops the server.
func (r *Receiver) Close() {
	if r.grpc != nil {
		r.grpc.Stop()
		return
	}
	r.srv.Close()
}

// Protocols is the encoding of each export (HTTPProtobuf, HTTPJSON,
// GRPC), in arrival order.
func (r *Receiver) Protocols() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.protocols...)
}

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
	protocol := HTTPProtobuf
	switch ct := req.Header.Get("Content-Type"); ct {
	case "application/x-protobuf":
		err = proto.Unmarshal(b, &msg)
	case "application/json":
		protocol = HTTPJSON
		err = unmarshalJSON(b, &msg)
	default:
		err = fmt.Errorf("Content-Type %q: want application/x-protobuf or application/json", ct)
	}
	if err != nil {
		http.Error(w, "not an OTLP ExportTraceServiceRequest: "+err.Error(), http.StatusBadRequest)
		return
	}
	if !r.receive(&msg, req.Header.Clone(), protocol) {
		http.Error(w, "failing on purpose", http.StatusBadRequest)
		return
	}
	if protocol == HTTPJSON {
		out, _ := protojson.Marshal(&coltrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/json")
		w.Write(out)
		return
	}
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

type traceService struct {
	coltrace.UnimplementedTraceServiceServer
	r *Receiver
}

func (s traceService) Export(ctx context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	h := http.Header{}
	md, _ := metadata.FromIncomingContext(ctx)
	for k, vs := range md {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	if !s.r.receive(req, h, GRPC) {
		return nil, status.Error(codes.InvalidArgument, "failing on purpose")
	}
	return &coltrace.ExportTraceServiceResponse{}, nil
}

// receive keeps an export's spans, or reports false when it is to fail.
func (r *Receiver) receive(msg *coltrace.ExportTraceServiceRequest, h http.Header, protocol string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.headers = append(r.headers, h)
	r.protocols = append(r.protocols, protocol)
	if r.fail > 0 {
		r.fail--
		return false
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
	return true
}

// idKeys are the OTLP/JSON fields that hold ids in hex.
var idKeys = map[string]int{"traceId": 16, "spanId": 8, "parentSpanId": 8}

// unmarshalJSON decodes OTLP/JSON: protojson's mapping, except that ids
// are hex strings, which are checked and turned into protojson's base64
// first.
func unmarshalJSON(b []byte, msg *coltrace.ExportTraceServiceRequest) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if err := hexIDs(v); err != nil {
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return protojson.Unmarshal(b, msg)
}

func hexIDs(v any) error {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if n, ok := idKeys[k]; ok {
				s, _ := e.(string)
				id, err := hex.DecodeString(s)
				if err != nil || (len(id) != n && !(len(id) == 0 && k == "parentSpanId")) {
					return fmt.Errorf("%s %q is not %d bytes in hex, as OTLP/JSON writes ids", k, s, n)
				}
				x[k] = base64.StdEncoding.EncodeToString(id)
				continue
			}
			if err := hexIDs(e); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range x {
			if err := hexIDs(e); err != nil {
				return err
			}
		}
	}
	return nil
}

func attrs(kvs []*commonpb.KeyValue) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = value(kv.GetValue())
	}
	return m
}

// value is an attribute value as Go: string, int64, bool, float64, or
// []any of those for an array.
func value(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_ArrayValue:
		out := []any{}
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, value(e))
		}
		return out
	}
	return v.String()
}
