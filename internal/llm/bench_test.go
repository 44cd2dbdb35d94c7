package llm_test

import (
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/troupe-ai/troupe/internal/llm"
	"github.com/troupe-ai/troupe/internal/llm/llmtest"
)

// BenchmarkRoundTrip measures one Complete call through the real client
// and the real HTTP server, with a zero-latency scripted text turn.
func BenchmarkRoundTrip(b *testing.B) {
	for _, stream := range []bool{true, false} {
		name := map[bool]string{true: "stream", false: "plain"}[stream]
		b.Run(name, func(b *testing.B) {
			srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{{Match: llmtest.Matcher{Fallback: true}, Repeat: true,
				Turns: []llmtest.Turn{llmtest.Text("The answer is forty-two, as computed.")}}}})
			defer srv.Close()
			c := newClient(b, srv, func(cfg *llm.Config) { cfg.Stream = stream })
			req := request("what is the answer?")
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Complete(b.Context(), req, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRoundTripParallel is BenchmarkRoundTrip from many goroutines at
// once, each its own agent, streaming, with a tool call turn and a text turn.
func BenchmarkRoundTripParallel(b *testing.B) {
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{{Match: llmtest.Matcher{Kind: "explore"}, Repeat: true,
		Turns: []llmtest.Turn{llmtest.Call(llmtest.Tool("grep", `{"pattern":"func main"}`)), llmtest.Text("found it")}}}})
	defer srv.Close()
	c := newClient(b, srv, nil)
	var ids atomic.Int64
	b.SetParallelism(16)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		req := request("explore")
		req.Kind, req.Agent = "explore", "e"+strconv.FormatInt(ids.Add(1), 10)
		for pb.Next() {
			if _, err := c.Complete(b.Context(), req, nil); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
