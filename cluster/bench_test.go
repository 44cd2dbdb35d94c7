package cluster

import (
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// oneShotFanout: the root delegates n explore agents in one turn; each
// answers at once (zero model latency), then the root answers.
func oneShotFanout(n int) *llmtest.Server {
	calls := make([]llmtest.ToolCall, n)
	for i := range calls {
		args, _ := json.Marshal(map[string]string{"type": "explore", "task": fmt.Sprintf("q%d", i)})
		calls[i] = llmtest.ToolCall{Name: "delegate", Args: args}
	}
	return llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Repeat: true, Turns: []llmtest.Turn{{ToolCalls: calls}, {Text: "done"}}},
		{Match: llmtest.Matcher{Kind: "explore"}, Repeat: true, Turns: []llmtest.Turn{{Text: "main.go:1"}}},
	}})
}

// limitedClient is the model client of a process on conn's hub, its
// calls taking their turns with the hub's rate limits as a run's
// (candidate) or a node's do; the scripted model states no limit, so
// none is hit.
func limitedClient(b *testing.B, srv *llmtest.Server, conn *bus.Conn, candidate bool) llm.Client {
	hub, err := StartRateHub(b.Context(), conn, RateHubOptions{Candidate: candidate, Log: zerolog.Nop()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(hub.Close)
	c, err := llm.NewClient(llm.Config{BaseURL: srv.URL(), Model: "big", Stream: true, MaxAttempts: 2,
		InitialBackoff: time.Millisecond, Limiter: hub.Limiter()}, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// cpuTime is the user + system CPU time this process has used: the
// orchestrator, the three nodes, the NATS server and the scripted model
// all run in it, so its growth per task is what a task costs the machine
// whatever else shares the machine's cores.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchFanout runs b.N rounds of an n-task fan-out through three nodes
// (remote) or in the orchestrator (local) and reports tasks per second,
// the wall time and CPU time per task, and the spawn → first model
// request latency. The nodes run in this process (each with its own NATS
// connection, as a node process has), over a real NATS server on
// loopback TCP; the model is the scripted server, answering at once.
func benchFanout(b *testing.B, remote bool, n int) {
	s := natsServer(b)
	benchFanoutOver(b, remote, n, func(string) *bus.Conn { return wrap(b, connect(b, s)) })
}

// benchFanoutOver is benchFanout with the connections dial makes: "node-<i>"
// for each node, "requester" for the orchestrator.
func benchFanoutOver(b *testing.B, remote bool, n int, dial func(who string) *bus.Conn) {
	srv := oneShotFanout(n)
	defer srv.Close()
	if remote {
		for i := 0; i < 3; i++ {
			nodeBus := dial(fmt.Sprintf("node-%d", i))
			node, err := StartNode(b.Context(), NodeOptions{Bus: nodeBus, Kinds: []string{"explore"}, Slots: 64,
				Agent: actors.Options{Workspace: workspace(b), Client: limitedClient(b, srv, nodeBus, false), Models: actors.Models{Default: "big"},
					Log: zerolog.Nop()},
				AckWait: 30 * time.Second, Log: zerolog.Nop()})
			if err != nil {
				b.Fatal(err)
			}
			defer node.Drain(b.Context())
		}
	}
	req := dial("requester")
	orch := limitedClient(b, srv, req, true)
	var spawnToCall time.Duration
	var spawned int
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		run := fmt.Sprintf("bench-%d", i)
		o := actors.Options{Run: run, Workspace: workspace(b), Task: "fan out", Client: orch,
			Models: actors.Models{Default: "big"}, Log: zerolog.Nop(), Events: &recorder{},
			Settings: actors.Settings{PlanFirst: map[string]bool{"root": false}, FanoutThreshold: n + 1, MaxToolCallsPerRound: n + 1}}
		o.Budget.PerKind = map[string]int{"explore": n}
		o.Budget.MaxConcurrent = n + 1
		var r *Remote
		if remote {
			var err error
			r, err = StartRemote(b.Context(), RemoteOptions{Bus: req, Run: run, Placement: map[string]string{"explore": PlaceRemote}, Log: zerolog.Nop()})
			if err != nil {
				b.Fatal(err)
			}
			o.Placer, o.OnBudget = r.Placer(), r.ServeBudget
		}
		res, err := actors.Run(b.Context(), o)
		if err != nil || res.Status != actors.StatusCompleted {
			b.Fatalf("run %+v %v", res, err)
		}
		if r != nil {
			r.Close()
		}
		b.StopTimer()
		spawnAt := map[string]time.Time{}
		for _, ev := range o.Events.(*recorder).events() {
			if ev.Type == messages.EvtAgentSpawned {
				if d, err := messages.DecodeAs[messages.AgentSpawned](ev); err == nil {
					spawnAt[d.Child] = ev.Time
				}
			}
		}
		for _, rq := range srv.Requests() {
			if at, ok := spawnAt[rq.Agent]; ok && rq.Round == 1 {
				spawnToCall += rq.Received.Sub(at)
				spawned++
				delete(spawnAt, rq.Agent)
			}
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N*n), "cpu-µs/task")
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "tasks/s")
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/task")
	if spawned > 0 {
		b.ReportMetric(float64(spawnToCall.Microseconds())/float64(spawned), "µs-spawn-to-call")
	}
}

// BenchmarkFanoutRemote: 100-task fan-outs through three in-process nodes
// over a real NATS server (the tasks queue, the results stream, the
// budget served over NATS), zero-latency model.
func BenchmarkFanoutRemote(b *testing.B) { benchFanout(b, true, 100) }

// BenchmarkSpawnRemote is one remote child at a time: the spawn → first
// model request latency of a remote agent with an idle node.
func BenchmarkSpawnRemote(b *testing.B) { benchFanout(b, true, 1) }

// BenchmarkFanoutLocal is the same fan-out with every child local, for the
// per-task overhead of placing remotely.
func BenchmarkFanoutLocal(b *testing.B) { benchFanout(b, false, 100) }

// BenchmarkSpawnLocal is one local child at a time, for comparison with
// BenchmarkSpawnRemote.
func BenchmarkSpawnLocal(b *testing.B) { benchFanout(b, false, 1) }
