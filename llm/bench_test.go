package llm_test

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/llm/llmtest"
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

// BenchmarkSwarm runs 1,000 agents × 5 rounds (4 tool-call turns, then a
// text turn), all concurrently, through one client and one server with zero
// latency: one op is the whole swarm (5,000 calls).
func BenchmarkSwarm(b *testing.B) {
	const agents, rounds = 1000, 5
	turns := make([]llmtest.Turn, 0, rounds)
	for range rounds - 1 {
		turns = append(turns, llmtest.Call(llmtest.Tool("grep", `{"pattern":"func main"}`), llmtest.Tool("read_file", `{"path":"go.mod"}`)))
	}
	turns = append(turns, llmtest.Text("done"))
	for b.Loop() {
		b.StopTimer()
		srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{{Match: llmtest.Matcher{Kind: "explore"}, Turns: turns}}})
		c := newClient(b, srv, nil)
		b.StartTimer()
		var wg sync.WaitGroup
		for i := range agents {
			wg.Go(func() {
				req := request("explore")
				req.Kind, req.Agent = "explore", "e"+strconv.Itoa(i)
				for r := range rounds {
					resp, err := c.Complete(b.Context(), req, nil)
					if err != nil {
						b.Error(err)
						return
					}
					if r == rounds-1 && resp.Message.Content != "done" {
						b.Errorf("agent %d: last round %q", i, resp.Message.Content)
					}
					req.Messages = append(req.Messages, resp.Message)
					for _, tc := range resp.Message.ToolCalls {
						req.Messages = append(req.Messages, llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, Content: "ok"})
					}
				}
			})
		}
		wg.Wait()
		b.StopTimer()
		srv.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*agents*rounds), "ns/call")
}
