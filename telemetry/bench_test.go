package telemetry_test

import (
	"context"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/telemetry"
	"github.com/troupe-ai/troupe/telemetry/telemetrytest"
)

// BenchmarkChatSpan is tracing's cost per model call: one chat span
// started under an agent's span and ended with the answer's attributes,
// as llm.OpenAIClient.Complete does. "exporter" exports over OTLP/HTTP to
// a receiver in the process (batched: the export runs off the caller's
// path, but its work shares the CPU); "off" is the no-op Tracer of a run
// without an endpoint.
func BenchmarkChatSpan(b *testing.B) {
	b.Run("off", func(b *testing.B) {
		var tr telemetry.Tracer
		ctx, agent := tr.StartAgent(context.Background(), telemetry.Agent{Run: "r", ID: "a", Kind: "explore"})
		defer agent.EndAgent(telemetry.AgentEnd{})
		b.ReportAllocs()
		for b.Loop() {
			chatOnce(ctx)
		}
	})
	b.Run("exporter", func(b *testing.B) {
		rcv := telemetrytest.NewReceiver(b)
		p, err := telemetry.Start(context.Background(), telemetry.Config{Endpoint: rcv.Endpoint()})
		if err != nil {
			b.Fatal(err)
		}
		ctx, agent := p.Tracer().StartAgent(context.Background(), telemetry.Agent{Run: "r", ID: "a", Kind: "explore"})
		b.ReportAllocs()
		for b.Loop() {
			chatOnce(ctx)
		}
		b.StopTimer()
		agent.EndAgent(telemetry.AgentEnd{})
		if err := p.ShutdownWithin(10 * time.Second); err != nil {
			b.Fatal(err)
		}
	})
}

func chatOnce(ctx context.Context) {
	_, c := telemetry.StartChat(ctx, telemetry.Chat{Provider: "openai", Model: "gpt-4.1-mini", Server: "api.openai.com", Port: 443})
	c.EndChat(telemetry.ChatEnd{Model: "gpt-4.1-mini-2025-04-14", ID: "chatcmpl-1", FinishReason: "tool_calls",
		InputTokens: 1200, OutputTkns: 80, Cost: 0.0012, Attempts: 1}, nil, "")
}

// BenchmarkToolSpan is the same for one tool call.
func BenchmarkToolSpan(b *testing.B) {
	b.Run("off", func(b *testing.B) {
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			_, s := telemetry.StartTool(ctx, "grep", "call_1")
			s.EndTool(telemetry.ToolEnd{})
		}
	})
}
