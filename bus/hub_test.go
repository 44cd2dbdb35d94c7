package bus

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/internal/natstest"
	"github.com/troupe-ai/troupe/messages"
)

// A hub of three server processes loses a server twice while a publisher
// emits events and a watcher follows them: first the events stream's
// leader is SIGKILLed (a leader election follows) and started again, then
// the server the watcher is connected to. Every asset troupe makes has
// three replicas; every event emitted is published (none dropped: those a
// lost server or the election kept unacknowledged were sent again with
// their IDs) and stored once; and the watcher receives every stored event
// once, in stream order and with no gap, each agent's in seq order.
func TestHubSurvivesLostServers(t *testing.T) {
	hub := natstest.Start(t, 3, natstest.Options{})
	connect := func(url string) *Conn {
		c, err := Connect(t.Context(), ConnectOptions{URLs: url}, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	first := connect(hub.URLs())
	if got := first.HubReplicas(); got != 3 {
		t.Fatalf("a three-server hub calls for %d replicas", got)
	}
	if err := first.EnsureStreams(t.Context(), StreamLimits{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range streamNames(first.Names()) {
		s, err := first.JetStream().Stream(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		if r := s.CachedInfo().Config.Replicas; r != 3 {
			t.Errorf("stream %s has %d replicas, want 3", name, r)
		}
	}
	leader, err := natstest.Leader(t.Context(), first.JetStream(), EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	// The watcher and the publisher on a server that is not the leader:
	// the two faults hit different servers, and the second one cuts the
	// publisher off with events on their way (lost with their server)
	// while later ones go to a survivor.
	watchOn := (hub.Index(leader) + 1) % 3
	subConn := connect(hub.URL(watchOn) + "," + hub.URLs())
	pubConn := connect(hub.URL(watchOn) + "," + hub.URLs())
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	es, err := subConn.Events(ctx, WatchOptions{Run: "ha", FromStart: true})
	if err != nil {
		t.Fatal(err)
	}
	// An acknowledgement awaited longer than an election takes (4 to 9 s):
	// an event lost with the leader is sent again only once the new leader
	// could have stored later ones, so the agents' order must hold without
	// the timing's help (TestPublisherKeepsAgentsOrderWhenAnAckIsLost
	// shows the loss that breaks it deterministically).
	p, err := pubConn.NewPublisher(PublisherOptions{AckTimeout: 15 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// Paced so that the events sent while the stream has no leader do not
	// fill a window of asynchronous publishes (which would hold the later
	// ones back until the first was sent again).
	const agents, per = 4, 1000
	var emitted atomic.Uint64
	go func() { // agents emitting steadily, never waiting on NATS
		for s := uint64(1); s <= per; s++ {
			for a := 0; a < agents; a++ {
				p.Emit(event(t, "ha", fmt.Sprintf("a%d", a), s))
				emitted.Add(1)
			}
			<-time.After(20 * time.Millisecond)
		}
	}()
	received := make(chan Delivery, agents*per)
	go func() {
		for d := range es.C {
			received <- d
		}
	}()
	checkFor(t, time.Minute, func() error { return waitCount(p.Published(), agents*per/5) })
	hub.Kill(hub.Index(leader))
	checkFor(t, 2*time.Minute, func() error { return waitCount(p.Published(), agents*per/2) })
	hub.Start(hub.Index(leader))
	hub.Kill(watchOn)
	checkFor(t, 2*time.Minute, func() error { return waitCount(emitted.Load(), agents*per) })
	cctx, ccancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer ccancel()
	if err := p.Close(cctx); err != nil {
		t.Fatal(err)
	}
	if p.Published() != agents*per || p.Dropped() != 0 {
		t.Fatalf("emitted %d: published %d, dropped %d", agents*per, p.Published(), p.Dropped())
	}
	next := map[string]uint64{}
	var last uint64
	for n := 0; n < agents*per; n++ {
		var d Delivery
		select {
		case d = <-received:
		case <-time.After(2 * time.Minute):
			t.Fatalf("the watcher received %d of %d events (resumed %d times)", n, agents*per, es.Resumed())
		}
		if d.StreamSeq != last+1 {
			t.Fatalf("stream seq %d after %d", d.StreamSeq, last)
		}
		last = d.StreamSeq
		if d.Event.Seq != next[d.Event.Agent]+1 {
			t.Fatalf("%s: seq %d after %d", d.Event.Agent, d.Event.Seq, next[d.Event.Agent])
		}
		next[d.Event.Agent] = d.Event.Seq
	}
	t.Logf("events: %d published, the watcher's consumer replaced %d times", p.Published(), es.Resumed())
	_ = messages.EvtRunStarted
}
