package watch

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
)

// thousandAgents is a run of 1,000 agents (10 kinds, 5 models, 30 tools),
// each with a round, a model call, two tool calls and an end.
func thousandAgents(t testing.TB) []messages.Event {
	var evs []messages.Event
	add := func(agent, kind string, seq uint64, typ string, data any) {
		ev, err := messages.NewEvent("bench-run", agent, typ, seq, data)
		if err != nil {
			t.Fatal(err)
		}
		ev.Kind = kind
		evs = append(evs, ev)
	}
	for i := range 1000 {
		a, kind, model := fmt.Sprintf("explore-%04d", i), fmt.Sprintf("kind%d", i%10), fmt.Sprintf("model%d", i%5)
		add(a, kind, 1, messages.EvtAgentStarted, messages.AgentStarted{Task: "look"})
		add(a, kind, 2, messages.EvtRoundStarted, messages.RoundStarted{Round: 1, Model: model})
		add(a, kind, 3, messages.EvtLLMResponse, messages.LLMResponse{Round: 1, Model: model, TokensIn: 900, TokensOut: 40, CostUSD: 0.001, DurationMS: 700})
		for j := range 2 {
			tool := fmt.Sprintf("tool%d", (i+j)%30)
			add(a, kind, uint64(4+2*j), messages.EvtToolStarted, messages.ToolStarted{Round: 1, CallID: "c", Tool: tool})
			add(a, kind, uint64(5+2*j), messages.EvtToolFinished, messages.ToolFinished{Round: 1, CallID: "c", Tool: tool, DurationMS: 3})
		}
		if i%2 == 0 {
			add(a, kind, 8, messages.EvtAgentFinished, messages.AgentEnded{Status: "completed"})
		}
	}
	return evs
}

// BenchmarkMetricsScrape1000Agents is one /metrics scrape after a run of
// 1,000 agents (500 still running).
func BenchmarkMetricsScrape1000Agents(b *testing.B) {
	m := NewPromMetrics(PromOptions{})
	for _, ev := range thousandAgents(b) {
		m.Apply(ev)
	}
	h := m.Handler()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "troupe_tokens_total") {
			b.Fatalf("scrape: %d", rec.Code)
		}
	}
}

// BenchmarkWebViewEvents is how fast the web view's event stream carries
// a stored run to a page: 6,000 events of 1,000 agents on NATS, read
// through /events to the end (events/s reported).
func BenchmarkWebViewEvents(b *testing.B) {
	ctx := context.Background()
	emb, err := bus.StartEmbedded(ctx, bus.EmbeddedOptions{Ephemeral: true}, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	defer emb.Shutdown(ctx)
	conn, err := bus.Connect(ctx, bus.ConnectOptions{URLs: emb.URL()}, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	if err := conn.EnsureStreams(ctx, bus.StreamLimits{}); err != nil {
		b.Fatal(err)
	}
	pub, err := conn.NewPublisher(bus.PublisherOptions{})
	if err != nil {
		b.Fatal(err)
	}
	evs := thousandAgents(b)
	for _, ev := range evs {
		pub.Emit(ev)
	}
	if err := pub.Close(ctx); err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(NewWeb(WebOptions{Conn: conn}).Handler())
	defer srv.Close()
	b.ResetTimer()
	for b.Loop() {
		if n := readEvents(b, srv.URL+"/events?run=bench-run"); n != len(evs) {
			b.Fatalf("read %d events, want %d", n, len(evs))
		}
	}
	b.ReportMetric(float64(len(evs)*b.N)/b.Elapsed().Seconds(), "events/s")
}

// readEvents reads an /events stream until it has caught up and returns
// how many events it carried.
func readEvents(b *testing.B, url string) int {
	resp, err := http.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	n, event := 0, ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: ") && event == "events":
			n += strings.Count(line, `"v":1,`)
		case strings.HasPrefix(line, "data: ") && event == "caught_up":
			return n
		}
	}
	b.Fatal("the stream ended before it caught up")
	return n
}
