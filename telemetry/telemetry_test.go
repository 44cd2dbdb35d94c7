package telemetry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/telemetry"
	"github.com/troupe-ai/troupe/telemetry/telemetrytest"
)

func env(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

// start is a Provider exporting to a fresh receiver.
func start(t *testing.T) (*telemetry.Provider, *telemetrytest.Receiver) {
	t.Helper()
	rcv := telemetrytest.NewReceiver(t)
	p, err := telemetry.Start(t.Context(), telemetry.Config{Endpoint: rcv.Endpoint(), Service: "troupe-test", Getenv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Enabled() {
		t.Fatal("a provider with an endpoint is off")
	}
	return p, rcv
}

// An agent, its model call and its tool call arrive at an OTLP receiver
// as invoke_agent, chat and execute_tool spans of one trace, with the
// GenAI attributes, the chat and the tool span under the agent's.
func TestSpansReachTheReceiver(t *testing.T) {
	p, rcv := start(t)
	ctx, agent := p.Tracer().StartAgent(t.Context(), telemetry.Agent{Run: "r1", ID: "explore-1", Parent: "root", Kind: "explore", Model: "m-small", Depth: 1})
	cctx, chat := telemetry.StartChat(ctx, telemetry.Chat{Provider: "openai", Model: "m-small", Server: "127.0.0.1", Port: 8080})
	if cctx == ctx {
		t.Fatal("StartChat under a recording span returned its context unchanged")
	}
	chat.EndChat(telemetry.ChatEnd{Model: "m-small-2026", FinishReason: "tool_calls", InputTokens: 120, OutputTokens: 7, Attempts: 1}, nil, "")
	_, tool := telemetry.StartTool(ctx, "grep", "call_1")
	tool.EndTool(telemetry.ToolEnd{IsError: true})
	agent.EndAgent(telemetry.AgentEnd{Status: "completed", Reason: "finished", Rounds: 2, InputTokens: 120, OutputTokens: 7})
	if err := p.ShutdownWithin(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	spans := rcv.Spans()
	if len(spans) != 3 {
		t.Fatalf("got %d spans, want 3: %+v (rejected %v)", len(spans), spans, rcv.Rejected())
	}
	by := map[string]telemetrytest.Span{}
	for _, s := range spans {
		by[s.Name] = s
		if s.Service != "troupe-test" {
			t.Errorf("%s: service %q", s.Name, s.Service)
		}
	}
	a, c, x := by["invoke_agent explore"], by["chat m-small"], by["execute_tool grep"]
	for name, want := range map[string]map[string]any{
		"agent": {"gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": "openai", "gen_ai.agent.name": "explore", "gen_ai.agent.id": "explore-1",
			"troupe.run.id": "r1", "troupe.agent.kind": "explore", "gen_ai.usage.input_tokens": int64(120), "troupe.agent.status": "completed"},
		"chat": {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
			"gen_ai.request.model": "m-small", "gen_ai.response.model": "m-small-2026", "gen_ai.usage.input_tokens": int64(120),
			"gen_ai.usage.output_tokens": int64(7), "server.port": int64(8080)},
		"tool": {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "grep", "gen_ai.tool.call.id": "call_1", "error.type": "tool_error"},
	} {
		s := map[string]telemetrytest.Span{"agent": a, "chat": c, "tool": x}[name]
		for k, v := range want {
			if s.Attrs[k] != v {
				t.Errorf("%s span %q: %s = %#v, want %#v", name, s.Name, k, s.Attrs[k], v)
			}
		}
	}
	if fr, _ := c.Attrs["gen_ai.response.finish_reasons"].([]any); len(fr) != 1 || fr[0] != "tool_calls" {
		t.Errorf("finish reasons %#v", c.Attrs["gen_ai.response.finish_reasons"])
	}
	if a.ParentID != "" || c.ParentID != a.SpanID || x.ParentID != a.SpanID || c.TraceID != a.TraceID || x.TraceID != a.TraceID {
		t.Errorf("parentage: agent %s/%s (parent %q), chat parent %s, tool parent %s", a.TraceID, a.SpanID, a.ParentID, c.ParentID, x.ParentID)
	}
	// The process that exported them: an instance ID of its own and its host.
	if id, _ := a.Resource["service.instance.id"].(string); len(id) != 36 || a.Resource["host.name"] == nil {
		t.Errorf("resource %v: want service.instance.id (a UUID) and host.name", a.Resource)
	}
	if !x.Error || a.Error || c.Error {
		t.Errorf("status: tool error %v, agent error %v, chat error %v", x.Error, a.Error, c.Error)
	}
}

// A failed model call is a chat span with status Error and error.type.
func TestChatError(t *testing.T) {
	p, rcv := start(t)
	ctx, agent := p.Tracer().StartAgent(t.Context(), telemetry.Agent{Run: "r", ID: "root", Kind: "root"})
	_, chat := telemetry.StartChat(ctx, telemetry.Chat{Provider: "openai", Model: "m"})
	chat.EndChat(telemetry.ChatEnd{Attempts: 3}, errors.New("llm: 429 slow down"), "429")
	agent.EndAgent(telemetry.AgentEnd{Status: "failed", Reason: "error", Failed: true})
	if err := p.ShutdownWithin(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	c := rcv.Named("chat ")
	if len(c) != 1 || !c[0].Error || c[0].Str("error.type") != "429" || c[0].Int("troupe.llm.attempts") != 3 {
		t.Fatalf("chat spans %+v", c)
	}
	if a := rcv.Named("invoke_agent"); len(a) != 1 || !a[0].Error || a[0].Str("error.type") != "error" {
		t.Fatalf("agent spans %+v", a)
	}
}

// With no endpoint (config or environment) no exporter is made: the
// provider is off, its tracer is the zero one and nothing is sent.
func TestOffWithoutEndpoint(t *testing.T) {
	for name, c := range map[string]telemetry.Config{
		"nothing set":  {Getenv: env(nil)},
		"nil getenv":   {},
		"sdk disabled": {Endpoint: "http://127.0.0.1:4318", Getenv: env(map[string]string{telemetry.EnvSDKDisabled: "true"})},
	} {
		p, err := telemetry.Start(t.Context(), c)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if p.Enabled() || p.Tracer().Enabled() || c.Enabled() {
			t.Errorf("%s: tracing is on", name)
		}
		ctx := t.Context()
		if got, s := p.Tracer().StartAgent(ctx, telemetry.Agent{Kind: "root"}); got != ctx || s.Recording() {
			t.Errorf("%s: StartAgent did something while off", name)
		}
		if err := p.Shutdown(ctx); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	var nilP *telemetry.Provider
	if nilP.Enabled() || nilP.Tracer().Enabled() || nilP.Shutdown(t.Context()) != nil {
		t.Error("a nil provider is not off")
	}
	// The signal's own variable alone turns tracing on.
	if !(telemetry.Config{Getenv: env(map[string]string{telemetry.EnvTracesEndpoint: "http://127.0.0.1:1/v1/traces"})}).Enabled() {
		t.Error("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT does not turn tracing on")
	}
}

// Off, the spans of the hot paths allocate nothing.
func TestOffAllocatesNothing(t *testing.T) {
	var tr telemetry.Tracer
	ctx := context.Background()
	n := testing.AllocsPerRun(100, func() {
		actx, a := tr.StartAgent(ctx, telemetry.Agent{Run: "r", ID: "a", Kind: "explore"})
		_, c := telemetry.StartChat(actx, telemetry.Chat{Provider: "openai", Model: "m"})
		c.EndChat(telemetry.ChatEnd{Model: "m", FinishReason: "stop", InputTokens: 1}, nil, "")
		_, x := telemetry.StartTool(actx, "grep", "c1")
		x.EndTool(telemetry.ToolEnd{})
		a.EndAgent(telemetry.AgentEnd{Status: "completed"})
	})
	if n != 0 {
		t.Fatalf("%v allocations per agent with tracing off", n)
	}
}

func TestTracesURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:4318":        "http://127.0.0.1:4318/v1/traces",
		"https://otel.example.org/":    "https://otel.example.org/v1/traces",
		"http://collector:4318/prefix": "http://collector:4318/prefix/v1/traces",
	} {
		if got, err := telemetry.TracesURL(in); err != nil || got != want {
			t.Errorf("TracesURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"127.0.0.1:4318", "grpc://x:4317", "http://", "::"} {
		if _, err := telemetry.TracesURL(in); !errors.Is(err, telemetry.ErrEndpoint) {
			t.Errorf("TracesURL(%q): %v, want ErrEndpoint", in, err)
		}
	}
}
