package main

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/troupe-ai/troupe/app/console"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/watch"
)

// fillFinishedRuns publishes n finished runs into the events stream of a
// real JetStream, as a run's root agent makes them: run.started,
// agent.started, round.started, llm.response, agent.ended, run.finished.
func fillFinishedRuns(tb testing.TB, c *bus.Conn, n int) { fillRuns(tb, c, n, 0) }

// fillRuns is fillFinishedRuns whose first unfinished runs stop before
// their root agent ends.
func fillRuns(tb testing.TB, c *bus.Conn, n, unfinished int) {
	tb.Helper()
	ctx := context.Background()
	if err := c.EnsureStreams(ctx, bus.StreamLimits{}); err != nil {
		tb.Fatal(err)
	}
	js := c.JetStream()
	for i := range n {
		run := fmt.Sprintf("%08x-0000-4000-8000-%012d", i, i)
		evs := []struct {
			agent, typ string
			data       any
		}{
			{"run", messages.EvtRunStarted, messages.RunStarted{Task: "task " + run, Model: "m1"}},
			{"root", messages.EvtAgentStarted, messages.AgentStarted{Task: "task " + run}},
			{"root", messages.EvtRoundStarted, messages.RoundStarted{Round: 1, Model: "m1"}},
			{"root", messages.EvtLLMResponse, messages.LLMResponse{Round: 1, Model: "m1", TokensIn: 100, TokensOut: 20}},
			{"root", messages.EvtAgentFinished, messages.AgentEnded{Status: "completed", Reason: "finished", Rounds: 1}},
			{"run", messages.EvtRunFinished, messages.RunFinished{Status: "completed", Reason: "finished", Rounds: 1, Tokens: 120}},
		}
		if i < unfinished {
			evs = evs[:4]
		}
		seq := map[string]uint64{}
		for _, e := range evs {
			seq[e.agent]++
			ev, err := messages.NewEvent(run, e.agent, e.typ, seq[e.agent], e.data)
			if err != nil {
				tb.Fatal(err)
			}
			if e.agent == "root" {
				ev.Kind = "root"
			}
			raw, err := json.Marshal(ev)
			if err != nil {
				tb.Fatal(err)
			}
			if _, err := js.PublishAsync(bus.EventSubject(bus.DefaultPrefix, run, e.agent, e.typ), raw); err != nil {
				tb.Fatal(err)
			}
		}
		if i%500 == 499 {
			<-js.PublishAsyncComplete()
		}
	}
	<-js.PublishAsyncComplete()
}

// cpuTime is this process's user + system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkWatchReplay is `watch --from-start` on a terminal over a
// stream holding 1,000 and 10,000 finished runs (6 events each): the time until it
// has caught up and ends (every run finished), and the CPU it took (the
// whole process's: the in-process NATS server's sending included); the
// 10 most recent runs shown (the default), and every run (--all).
func BenchmarkWatchReplay(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("runs=%d", n), func(b *testing.B) { benchWatchReplay(b, n, false) })
	}
	b.Run("runs=10000/all", func(b *testing.B) { benchWatchReplay(b, 10_000, true) })
}

func benchWatchReplay(b *testing.B, runs int, all bool) {
	_, c := embeddedServer(b)
	fillFinishedRuns(b, c, runs)
	var cpu time.Duration
	for b.Loop() {
		before := cpuTime()
		ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
		es, err := c.Events(ctx, bus.WatchOptions{FromStart: true, Log: zerolog.Nop()})
		if err != nil {
			b.Fatal(err)
		}
		w := console.NewWatcher(es, "", map[string]bool{"from-start": true, "all": all}, &watch.View{W: io.Discard, Width: 120, Height: 50}, nil)
		w.Stderr = io.Discard
		interrupted, err := w.Loop(ctx)
		cancel()
		if interrupted || err != nil {
			b.Fatalf("watch interrupted %v: %v", interrupted, err)
		}
		cpu += cpuTime() - before
	}
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
}

// BenchmarkWatchIdle is `watch --follow` on a terminal over a stream
// holding 500 unfinished and 1,000 finished runs, for 5 s: the replay,
// then idle. Its CPU (cpu-ms per 5 s) is what a watcher left open costs.
func BenchmarkWatchIdle(b *testing.B) {
	_, c := embeddedServer(b)
	fillRuns(b, c, 1_500, 500)
	var cpu time.Duration
	for b.Loop() {
		before := cpuTime()
		ctx, cancel := context.WithTimeout(b.Context(), 5*time.Second)
		es, err := c.Events(ctx, bus.WatchOptions{FromStart: true, Log: zerolog.Nop()})
		if err != nil {
			b.Fatal(err)
		}
		w := console.NewWatcher(es, "", map[string]bool{"from-start": true, "follow": true}, &watch.View{W: io.Discard, Width: 120, Height: 50}, nil)
		w.Stderr = io.Discard
		interrupted, err := w.Loop(ctx)
		cancel()
		if !interrupted || err != nil {
			b.Fatalf("watch not interrupted (%v): %v", interrupted, err)
		}
		cpu += cpuTime() - before
	}
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
}
