// Package telemetrytest is an OTLP/HTTP trace receiver for tests: an
// httptest server that decodes the protobuf ExportTraceServiceRequest the
// SDK's exporter posts and keeps the spans it carried.
package telemetrytest

import (
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one received span, flattened.
type Span struct {
	Service                   string
	Resource                  map[string]any // the exporting process's resource attributes
	TraceID, SpanID, ParentID string         // hex; ParentID "" for a root
	Name                      string
	Kind                      int32
	Attrs                     map[string]any // string, int64, float64, bool or []any
	Error                     bool           // status code Error
	StatusMessage             string
	Start, End                time.Time
}

// Str is the attribute key as a string ("" when absent or not a string).
func (s Span) Str(key string) string {
	v, _ := s.Attrs[key].(string)
	return v
}

// Int is the attribute key as an integer (-1 when absent).
func (s Span) Int(key string) int64 {
	if v, ok := s.Attrs[key].(int64); ok {
		return v
	}
	return -1
}

// Receiver collects the spans posted to it. Its methods are safe for
// concurrent use.
type Receiver struct {
	srv   *httptest.Server
	mu    sync.Mutex
	spans []Span
	posts int
	bad   []string
}

// NewReceiver starts a receiver on a loopback port, closed with t.
func NewReceiver(t testing.TB) *Receiver {
	r := &Receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

// Endpoint is the receiver's base URL (OTEL_EXPORTER_OTLP_ENDPOINT's
// form: spans go to its /v1/traces).
func (r *Receiver) Endpoint() string { return r.srv.URL }

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	err := r.take(req)
	if err != nil {
		r.mu.Lock()
		r.bad = append(r.bad, err.Error())
		r.mu.Unlock()
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	b, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	_, _ = w.Write(b)
}

func (r *Receiver) take(req *http.Request) error {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		return fmt.Errorf("%s %s: want POST /v1/traces", req.Method, req.URL.Path)
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		return fmt.Errorf("content type %q: want application/x-protobuf", ct)
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(req.Body)
		if err != nil {
			return err
		}
		body = gz
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return err
	}
	var ex coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &ex); err != nil {
		return fmt.Errorf("decode ExportTraceServiceRequest: %w", err)
	}
	var got []Span
	for _, rs := range ex.GetResourceSpans() {
		service, res := "", map[string]any{}
		for _, kv := range rs.GetResource().GetAttributes() {
			res[kv.GetKey()] = value(kv.GetValue())
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp := Span{Service: service, Resource: res, TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					ParentID: hex.EncodeToString(s.GetParentSpanId()), Name: s.GetName(), Kind: int32(s.GetKind()),
					Attrs: map[string]any{}, Error: s.GetStatus().GetCode() == 2, StatusMessage: s.GetStatus().GetMessage(),
					Start: time.Unix(0, int64(s.GetStartTimeUnixNano())), End: time.Unix(0, int64(s.GetEndTimeUnixNano()))}
				for _, kv := range s.GetAttributes() {
					sp.Attrs[kv.GetKey()] = value(kv.GetValue())
				}
				got = append(got, sp)
			}
		}
	}
	r.mu.Lock()
	r.spans = append(r.spans, got...)
	r.posts++
	r.mu.Unlock()
	return nil
}

func value(v *common.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *common.AnyValue_StringValue:
		return x.StringValue
	case *common.AnyValue_IntValue:
		return x.IntValue
	case *common.AnyValue_DoubleValue:
		return x.DoubleValue
	case *common.AnyValue_BoolValue:
		return x.BoolValue
	case *common.AnyValue_ArrayValue:
		var out []any
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, value(e))
		}
		return out
	}
	return nil
}

// Spans is a copy of the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.spans)
}

// Posts is how many export requests arrived.
func (r *Receiver) Posts() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.posts
}

// Rejected lists the requests the receiver could not decode.
func (r *Receiver) Rejected() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.bad)
}

// Named returns the received spans whose name starts with prefix.
func (r *Receiver) Named(prefix string) []Span {
	var out []Span
	for _, s := range r.Spans() {
		if strings.HasPrefix(s.Name, prefix) {
			out = append(out, s)
		}
	}
	return out
}

// WaitFor polls until ok holds for the received spans, failing t after
// timeout with what arrived.
func (r *Receiver) WaitFor(t testing.TB, timeout time.Duration, what string, ok func([]Span) bool) []Span {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		spans := r.Spans()
		if ok(spans) {
			return spans
		}
		if time.Now().After(deadline) {
			var names []string
			for _, s := range spans {
				names = append(names, s.Name)
			}
			t.Fatalf("OTLP receiver: %s not seen within %s; got %d spans: %v; rejected: %v", what, timeout, len(spans), names, r.Rejected())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
