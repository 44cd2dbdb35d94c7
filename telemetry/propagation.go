package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// traceContext is the W3C Trace Context format (traceparent, tracestate).
var traceContext propagation.TraceContext

// headers adapts a header map (nats.Header is one) to the propagator,
// keeping keys as written: traceparent, tracestate.
type headers map[string][]string

func (h headers) Get(key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func (h headers) Set(key, value string) { h[key] = []string{value} }

func (h headers) Keys() []string {
	out := make([]string, 0, len(h))
	for k := range h {
		out = append(out, k)
	}
	return out
}

// Inject writes the trace context of the span in ctx into h (traceparent
// and, when set, tracestate); with no span it writes nothing.
func Inject(ctx context.Context, h map[string][]string) {
	if h == nil || !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	traceContext.Inject(ctx, headers(h))
}

// Extract returns ctx with the remote span context carried in h as its
// parent; a missing or malformed traceparent leaves ctx as it is.
func Extract(ctx context.Context, h map[string][]string) context.Context {
	if len(h) == 0 {
		return ctx
	}
	return traceContext.Extract(ctx, headers(h))
}

// Parent is a span context kept in a plain value (an agent's spec), to
// parent a span started later, elsewhere. Its zero value is no parent.
type Parent struct {
	sc trace.SpanContext
}

// ParentFrom is the span context in ctx, as a Parent.
func ParentFrom(ctx context.Context) Parent {
	return Parent{sc: trace.SpanContextFromContext(ctx)}
}

// Context returns ctx with p as its span's parent; with no parent, ctx.
func (p Parent) Context(ctx context.Context) context.Context {
	if !p.sc.IsValid() {
		return ctx
	}
	return trace.ContextWithSpanContext(ctx, p.sc)
}

// TraceID is p's trace ID in hex ("" for no parent).
func (p Parent) TraceID() string {
	if !p.sc.IsValid() {
		return ""
	}
	return p.sc.TraceID().String()
}
