package actors_test

import (
	"context"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/budget"
	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/ratelimit"
	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/tools/builtin"
)

// timedClient measures the time spent inside the real model client, so a
// benchmark can subtract it from wall time. It is a decorator around the
// real client, not a stand-in for it.
type timedClient struct {
	llm.Client
	nanos atomic.Int64
}

func (c *timedClient) Complete(ctx context.Context, req llm.Request, d func(llm.Delta)) (llm.Response, error) {
	start := time.Now()
	r, err := c.Client.Complete(ctx, req, d)
	c.nanos.Add(int64(time.Since(start)))
	return r, err
}

// toolNanos measures the time when at least one tool runs, from
// tool.finished events (their time and duration): calls that run at the
// same time count once, so that what overlaps them is not taken for tool
// time.
type toolNanos struct {
	mu    sync.Mutex
	spans [][2]time.Time
}

func (t *toolNanos) total() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	slices.SortFunc(t.spans, func(a, b [2]time.Time) int { return a[0].Compare(b[0]) })
	var sum time.Duration
	var end time.Time
	for _, s := range t.spans {
		if s[0].After(end) {
			sum += s[1].Sub(s[0])
		} else if s[1].After(end) {
			sum += s[1].Sub(end)
		}
		if s[1].After(end) {
			end = s[1]
		}
	}
	return sum
}

func (t *toolNanos) Emit(ev messages.Event) {
	if ev.Type != messages.EvtToolFinished {
		return
	}
	s := string(ev.Data)
	i := strings.Index(s, `"duration_ms":`)
	if i < 0 {
		return
	}
	s = s[i+len(`"duration_ms":`):]
	if j := strings.IndexAny(s, ",}"); j >= 0 {
		if ms, err := strconv.ParseFloat(s[:j], 64); err == nil {
			t.mu.Lock()
			t.spans = append(t.spans, [2]time.Time{ev.Time.Add(-time.Duration(ms * 1e6)), ev.Time})
			t.mu.Unlock()
		}
	}
}

func benchOptions(b *testing.B, srv *llmtest.Server, events actors.Emitter) (actors.Options, *timedClient) {
	// The client waits its turns in a rate limiter, as a run's does; the
	// scripted model states no limit, so none is hit.
	lim := ratelimit.NewLimiter(ratelimit.NewQuota(ratelimit.QuotaOptions{}), ratelimit.LimiterOptions{Client: "bench"})
	b.Cleanup(lim.Close)
	c, err := llm.NewClient(llm.Config{BaseURL: srv.URL(), Model: "big-model", Stream: true, MaxAttempts: 4,
		InitialBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond, Limiter: lim}, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	tcl := &timedClient{Client: c}
	return actors.Options{Workspace: b.TempDir(), Task: "bench", Client: tcl, Budget: budget.Limits{Tokens: 1 << 40},
		Models: actors.Models{Default: "big-model", Cheap: "small-model"}, Events: events, Log: zerolog.Nop(),
		Settings: actors.Settings{PlanFirst: map[string]bool{"root": false}, DoomRepeats: 1 << 30, MaxRounds: 1 << 30}}, tcl
}

// BenchmarkRoundOrchestration: one agent, zero-latency model, two tool
// calls per round, in runs of 100 rounds (start-up, about 4 ms for the
// actor system, budget actor and tool registry, is counted in). Reports
// orchestration per round: wall time minus time inside the model client
// and while a tool runs (calls running at once count once); it includes the step's journal record (now and
// then a snapshot) and the call records. "read-only" calls think (nothing
// fsynced); "mutating" calls write_file on two files (their start records
// fsynced before they run). ratio-steady/model is steady orchestration
// over the time inside the model client, the in-process model round trip
// (goal: at most 0.1 read-only, 0.5 mutating); B-journal/round the bytes
// the agent wrote to its checkpoint and journal per round.
func BenchmarkRoundOrchestration(b *testing.B) {
	for _, c := range []struct{ name, tool, a, b string }{
		{"read-only", "think", `{"thought":"a"}`, `{"thought":"b"}`},
		{"mutating", "write_file", `{"path":"a.txt","content":"a\n"}`, `{"path":"b.txt","content":"b\n"}`},
	} {
		b.Run(c.name, func(b *testing.B) { benchRounds(b, calls(tc(c.tool, c.a), tc(c.tool, c.b))) })
	}
}

func benchRounds(b *testing.B, turn llmtest.Turn) {
	const perRun = 100
	var wall, model, tool, startup time.Duration
	var written int64
	for range b.N {
		turns := make([]llmtest.Turn, 0, perRun)
		for range perRun - 1 {
			turns = append(turns, turn)
		}
		turns = append(turns, say("done"))
		srv := llmtest.New(script(kind("root", turns...)))
		tools := &toolNanos{}
		o, tcl := benchOptions(b, srv, tools)
		start := time.Now()
		team, err := actors.Start(context.Background(), o)
		if err != nil {
			b.Fatal(err)
		}
		res, err := team.Wait(context.Background())
		wall += time.Since(start)
		written += actors.BytesWritten(team)
		srv.Close()
		if err != nil || res.Text != "done" {
			b.Fatalf("%v %+v", err, res.AgentResult)
		}
		model += time.Duration(tcl.nanos.Load())
		tool += tools.total()
		startup += srv.Requests()[0].Received.Sub(start)
	}
	rounds := float64(b.N * perRun)
	b.ReportMetric(float64(wall.Microseconds())/rounds, "µs-wall/round")
	b.ReportMetric(float64(model.Microseconds())/rounds, "µs-model/round")
	b.ReportMetric(float64((wall-model-tool).Microseconds())/rounds, "µs-orchestration/round")
	b.ReportMetric(float64(startup.Microseconds())/float64(b.N), "µs-startup/run")
	steady := float64((wall - model - tool - startup).Microseconds())
	b.ReportMetric(steady/rounds, "µs-orchestration/round-steady")
	b.ReportMetric(steady/float64(model.Microseconds()), "ratio-steady/model")
	b.ReportMetric(float64(written)/rounds, "B-journal/round")
}

// spawnTimer records when each delegate call started, per root round.
type spawnTimer struct {
	mu     sync.Mutex
	starts []time.Time
}

func (s *spawnTimer) Emit(ev messages.Event) {
	if ev.Type == messages.EvtToolStarted && ev.Agent == actors.RootAgentID {
		s.mu.Lock()
		s.starts = append(s.starts, ev.Time)
		s.mu.Unlock()
	}
}

// BenchmarkSpawnToFirstRequest: a local child from its parent's delegate
// call to its first model request arriving at the server (budget lease,
// actor spawn, session, system prompt, request build, HTTP). Runs of 10
// delegations keep the parent's conversation realistic.
func BenchmarkSpawnToFirstRequest(b *testing.B) {
	const perRun = 10
	var total time.Duration
	for range b.N {
		turns := make([]llmtest.Turn, 0, perRun+1)
		for range perRun {
			turns = append(turns, calls(delegate("explore", "look", false)))
		}
		turns = append(turns, say("done"))
		srv := llmtest.New(script(kind("root", turns...), kind("explore", say("nothing here"))))
		st := &spawnTimer{}
		o, _ := benchOptions(b, srv, st)
		res, err := actors.Run(context.Background(), o)
		srv.Close()
		if err != nil || res.Text != "done" {
			b.Fatalf("%v %+v", err, res.AgentResult)
		}
		explores := requestsOf(srv, "explore")
		if len(explores) != perRun || len(st.starts) != perRun {
			b.Fatalf("%d children, %d delegate calls", len(explores), len(st.starts))
		}
		for i, r := range explores { // one child per round, in order
			total += r.Received.Sub(st.starts[i])
		}
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N*perRun), "µs-spawn-to-request")
}

func rssKB(field string) int64 {
	data, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, field+":") {
			n, _ := strconv.ParseInt(strings.Fields(line)[1], 10, 64)
			return n
		}
	}
	return 0
}

// BenchmarkSwarm: 1,000 concurrent explore agents × 5 rounds against a
// zero-latency server. Memory per waiting agent is measured with every
// agent parked in its first model call; conversation bytes are excluded.
func BenchmarkSwarm(b *testing.B) {
	const agents, rounds = 1000, 5
	for range b.N {
		gate := make(chan struct{})
		var parked atomic.Int32
		exploreTurns := []llmtest.Turn{{Dynamic: func(llmtest.Recorded) llmtest.Turn {
			parked.Add(1)
			<-gate
			return calls(tc("think", `{"thought":"1"}`))
		}}}
		for i := 2; i < rounds; i++ {
			exploreTurns = append(exploreTurns, calls(tc("think", `{"thought":"`+strconv.Itoa(i)+`"}`)))
		}
		exploreTurns = append(exploreTurns, say("found nothing"))
		fan := make([]llmtest.ToolCall, agents)
		for i := range fan {
			fan[i] = delegate("explore", "part "+strconv.Itoa(i), false)
		}
		srv := llmtest.New(script(kind("root", calls(fan...), say("merged")), kind("explore", exploreTurns...)))
		o, tcl := benchOptions(b, srv, nil)
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		team, err := actors.Start(context.Background(), o)
		if err != nil {
			b.Fatal(err)
		}
		for parked.Load() < agents {
			<-time.After(time.Millisecond)
		}
		runtime.GC()
		var during runtime.MemStats
		runtime.ReadMemStats(&during)
		goroutines := runtime.NumGoroutine()
		close(gate)
		res, err := team.Wait(context.Background())
		wall := time.Since(start)
		srv.Close()
		if err != nil || res.Text != "merged" {
			b.Fatalf("%v %+v", err, res.AgentResult)
		}
		if n := len(requestsOf(srv, "explore")); n != agents*rounds {
			b.Fatalf("%d explore requests", n)
		}
		// Conversation bytes per agent: system prompt, task, nothing else yet.
		first := requestsOf(srv, "explore")[0]
		conv := int64(len(first.Messages[0].Content) + 64)
		perAgent := (int64(during.HeapAlloc) - int64(before.HeapAlloc)) / agents
		perCall := parkedCallHeap(b, agents, first)
		_ = tcl
		b.ReportMetric(wall.Seconds(), "s-wall")
		b.ReportMetric(float64(wall.Microseconds())/float64(agents*rounds), "µs-wall/agent-round")
		b.ReportMetric(float64(perAgent)/1024, "KB-heap/waiting-agent")
		b.ReportMetric(float64(perAgent-conv)/1024, "KB-heap/waiting-agent-excl-conv")
		b.ReportMetric(float64(perCall)/1024, "KB-heap/bare-parked-call")
		b.ReportMetric(float64(perAgent-conv-perCall)/1024, "KB-heap/agent-excl-conv-and-call")
		b.ReportMetric(float64(goroutines)/agents, "goroutines/waiting-agent")
		b.ReportMetric(float64(rssKB("VmHWM"))/1024, "MB-peak-RSS")
	}
}

// parkedCallHeap is the heap per model call parked at the scripted server,
// made from plain goroutines with the real client and the same messages and
// tools an explore agent sends: the model call's share (client and
// in-process server) of a waiting agent's memory.
func parkedCallHeap(b *testing.B, n int, like llmtest.Recorded) int64 {
	gate := make(chan struct{})
	var parked atomic.Int32
	srv := llmtest.New(script(llmtest.AgentScript{Match: llmtest.Matcher{Fallback: true}, Turns: []llmtest.Turn{{Dynamic: func(llmtest.Recorded) llmtest.Turn {
		parked.Add(1)
		<-gate
		return say("ok")
	}}}}))
	defer srv.Close()
	client := newClient(b, srv)
	msgs := make([]llm.Message, len(like.Messages))
	for i, m := range like.Messages {
		msgs[i] = llm.Message{Role: llm.Role(m.Role), Content: m.Content}
	}
	specs := tools.NewRegistry(builtin.All()...).Filter(like.Tools).ToolSpecs()
	runtime.GC()
	var before, during runtime.MemStats
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = client.Complete(context.Background(), llm.Request{Model: "m", Messages: msgs, Tools: specs, Agent: "bare-" + strconv.Itoa(i)}, nil)
		}()
	}
	for parked.Load() < int32(n) {
		<-time.After(time.Millisecond)
	}
	runtime.GC()
	runtime.ReadMemStats(&during)
	close(gate)
	wg.Wait()
	return (int64(during.HeapAlloc) - int64(before.HeapAlloc)) / int64(n)
}
