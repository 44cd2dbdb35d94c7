package bus

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/messages"
)

// An event whose acknowledgement never comes (lost with its server, or
// with the stream's leader) is sent again; the agent's later events must
// not reach the stream before it. A stand-in for the stream answers the
// publishes as JetStream does (a pub ack, deduplicated by message ID) on
// a real server, and loses its first sight of agent a0's seq 3: the
// events it stores are every agent's, each once, in seq order.
func TestPublisherKeepsAgentsOrderWhenAnAckIsLost(t *testing.T) {
	e, _ := embedded(t)
	c, err := Connect(t.Context(), ConnectOptions{URLs: e.URL(), Prefix: "lostack"}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	var (
		mu     sync.Mutex
		stored []messages.Event
		seen   = map[string]bool{}
		lost   bool
	)
	sub, err := c.NATS().Subscribe("lostack.evt.>", func(m *nats.Msg) {
		var ev messages.Event
		if err := json.Unmarshal(m.Data, &ev); err != nil {
			t.Errorf("a publish that is not an event: %v", err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if ev.Agent == "a0" && ev.Seq == 3 && !lost {
			lost = true // as if its server died with it
			return
		}
		if id := m.Header.Get("Nats-Msg-Id"); !seen[id] {
			seen[id] = true
			stored = append(stored, ev)
		}
		_ = m.Respond(fmt.Appendf(nil, `{"stream":"TROUPE_EVENTS","seq":%d}`, len(stored)))
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	p, err := c.NewPublisher(PublisherOptions{AckTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	const agents, per = 2, 20
	for s := uint64(1); s <= per; s++ {
		for a := 0; a < agents; a++ {
			p.Emit(event(t, "order", fmt.Sprintf("a%d", a), s))
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if p.Published() != agents*per || p.Dropped() != 0 {
		t.Fatalf("published %d, dropped %d of %d", p.Published(), p.Dropped(), agents*per)
	}
	mu.Lock()
	defer mu.Unlock()
	if !lost {
		t.Fatal("no acknowledgement was lost")
	}
	next := map[string]uint64{}
	for _, ev := range stored {
		if ev.Seq != next[ev.Agent]+1 {
			t.Fatalf("stored %s seq %d after %d", ev.Agent, ev.Seq, next[ev.Agent])
		}
		next[ev.Agent] = ev.Seq
	}
	if len(stored) != agents*per {
		t.Fatalf("stored %d events, want %d", len(stored), agents*per)
	}
}
