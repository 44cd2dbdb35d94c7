package telemetry_test

import (
	"context"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/telemetry"
)

// A span context injected into headers comes out of them as the parent of
// a span started in another "process" (another provider), which lands in
// the same trace under it.
func TestInjectExtract(t *testing.T) {
	p, rcv := start(t)
	ctx, parent := p.Tracer().StartAgent(t.Context(), telemetry.Agent{Run: "r", ID: "root", Kind: "root"})
	tctx, tool := telemetry.StartTool(ctx, "delegate", "call_9")
	h := map[string][]string{"Nats-Msg-Id": {"r.x"}}
	telemetry.Inject(tctx, h)
	if len(h["traceparent"]) != 1 {
		t.Fatalf("headers after Inject: %v", h)
	}
	p2, err := telemetry.Start(t.Context(), telemetry.Config{Endpoint: rcv.Endpoint(), Service: telemetry.ServiceNode})
	if err != nil {
		t.Fatal(err)
	}
	remote := telemetry.Extract(context.Background(), h)
	_, child := p2.Tracer().StartAgent(telemetry.ParentFrom(remote).Context(context.Background()), telemetry.Agent{Run: "r", ID: "explore-2", Kind: "explore"})
	child.EndAgent(telemetry.AgentEnd{Status: "completed"})
	tool.EndTool(telemetry.ToolEnd{})
	parent.EndAgent(telemetry.AgentEnd{Status: "completed"})
	for _, pr := range []*telemetry.Provider{p, p2} {
		if err := pr.ShutdownWithin(10 * time.Second); err != nil {
			t.Fatal(err)
		}
	}
	d, c := rcv.Named("execute_tool delegate"), rcv.Named("invoke_agent explore")
	if len(d) != 1 || len(c) != 1 {
		t.Fatalf("spans: %+v", rcv.Spans())
	}
	if c[0].TraceID != d[0].TraceID || c[0].ParentID != d[0].SpanID || c[0].Service != telemetry.ServiceNode {
		t.Fatalf("remote child %+v is not under the delegate span %+v", c[0], d[0])
	}
}

// No span: nothing injected; no or a malformed traceparent: no parent.
func TestPropagationWithoutTrace(t *testing.T) {
	h := map[string][]string{}
	telemetry.Inject(context.Background(), h)
	telemetry.Inject(context.Background(), nil)
	if len(h) != 0 {
		t.Fatalf("Inject without a span wrote %v", h)
	}
	for _, bad := range []map[string][]string{nil, {}, {"traceparent": {"00-zz-yy-01"}}, {"traceparent": {}}} {
		ctx := telemetry.Extract(context.Background(), bad)
		if id := telemetry.ParentFrom(ctx).TraceID(); id != "" {
			t.Errorf("Extract(%v) gave trace %s", bad, id)
		}
	}
}

// Extract never panics, and what it accepts goes out again unchanged.
func FuzzExtract(f *testing.F) {
	f.Add("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "")
	f.Add("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", "k=v")
	f.Add("garbage", "=")
	f.Fuzz(func(t *testing.T, tp, ts string) {
		ctx := telemetry.Extract(context.Background(), map[string][]string{"traceparent": {tp}, "tracestate": {ts}})
		id := telemetry.ParentFrom(ctx).TraceID()
		if id == "" {
			return
		}
		out := map[string][]string{}
		telemetry.Inject(ctx, out)
		ctx2 := telemetry.Extract(context.Background(), out)
		if got := telemetry.ParentFrom(ctx2).TraceID(); got != id {
			t.Fatalf("round trip of %q: trace %s became %s", tp, id, got)
		}
	})
}
