package telemetry_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/telemetry"
	"github.com/troupe-ai/troupe/telemetry/telemetrytest"
)

// BenchmarkChatSpan is tracing's cost per model call: one chat span
// started under an agent's span and ended with the answer's attributes,
// as llm.OpenAIClient.Complete does. "off" is a run without an endpoint
// (the zero Tracer). "exporter" exports every span over OTLP/HTTP
// (protobuf, batched) to a collector in the process that reads and drops
// the requests, so the time counts the span, the batch's encoding and its
// HTTP post, all of it on the same CPUs as the benchmark loop, and not the
// collector's decoding. "exporter+decode" posts to telemetrytest's
// receiver, which also decodes every span.
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
		sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/x-protobuf")
		}))
		defer sink.Close()
		benchExport(b, sink.URL)
	})
	b.Run("exporter+decode", func(b *testing.B) {
		benchExport(b, telemetrytest.NewReceiver(b).Endpoint())
	})
}

// benchExport measures chat spans exported to endpoint. The queue
// blocks when full instead of dropping spans (as it would in this tight
// loop, never in a run, where model calls are seconds apart), so every
// span is encoded and posted and the time per op is the whole cost.
func benchExport(b *testing.B, endpoint string) {
	p, err := telemetry.Start(context.Background(), telemetry.Blocking(telemetry.Config{Endpoint: endpoint}))
	if err != nil {
		b.Fatal(err)
	}
	ctx, agent := p.Tracer().StartAgent(context.Background(), telemetry.Agent{Run: "r", ID: "a", Kind: "explore"})
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	for b.Loop() {
		chatOnce(ctx)
	}
	agent.EndAgent(telemetry.AgentEnd{})
	if err := p.ShutdownWithin(30 * time.Second); err != nil { // timed: the last batches are part of the cost
		b.Fatal(err)
	}
	// The process's CPU time (every thread: the loop, the exporter, the
	// collector, GC) per span: what tracing costs whatever else runs on
	// the machine, where wall time per op depends on it.
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func chatOnce(ctx context.Context) {
	_, c := telemetry.StartChat(ctx, telemetry.Chat{Provider: "openai", Model: "gpt-4.1-mini", Server: "api.openai.com", Port: 443})
	c.EndChat(telemetry.ChatEnd{Model: "gpt-4.1-mini-2025-04-14", FinishReason: "tool_calls",
		InputTokens: 1200, OutputTkns: 80, Attempts: 1}, nil, "")
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
