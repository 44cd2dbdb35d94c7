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

// A run's run.finished is stored after every event of its run given to
// the publisher before it, however long the stream holds one back: a
// watcher that ends at run.finished sees them all. A stand-in for the
// stream (on a real server, answering as JetStream does) holds agent a1's
// event unacknowledged until it has seen it sent twice (by then its lane
// has timed out once, and run.finished, on a lane of its own, would long
// be stored); it holds an event of the run given after run.finished until
// run.finished is stored. Stored: a1's event, then run.finished, then the
// later one; another run's events are not held back by it.
func TestRunFinishedIsStoredAfterItsRunsEarlierEvents(t *testing.T) {
	e, _ := embedded(t)
	c, err := Connect(t.Context(), ConnectOptions{URLs: e.URL(), Prefix: "runend"}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	var (
		mu       sync.Mutex
		stored   []messages.Event
		seen     = map[string]bool{}
		a1Tries  int
		finished bool
	)
	sub, err := c.NATS().Subscribe("runend.evt.>", func(m *nats.Msg) {
		var ev messages.Event
		if err := json.Unmarshal(m.Data, &ev); err != nil {
			t.Errorf("a publish that is not an event: %v", err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		switch {
		case ev.Agent == "a1" && a1Tries < 2:
			a1Tries++ // held: no acknowledgement
			if finished {
				t.Errorf("run.finished was stored while a1's earlier event was held")
			}
			return
		case ev.Agent == "late" && !finished:
			return // held until run.finished is stored
		}
		if id := m.Header.Get("Nats-Msg-Id"); !seen[id] {
			seen[id] = true
			stored = append(stored, ev)
			finished = finished || ev.Type == messages.EvtRunFinished
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
	fin, err := messages.NewEvent("r", "run", messages.EvtRunFinished, 2, messages.RunFinished{Status: "completed", Reason: "finished"})
	if err != nil {
		t.Fatal(err)
	}
	p.Emit(event(t, "r", "a0", 1))
	p.Emit(event(t, "r", "a1", 1))
	p.Emit(fin)
	p.Emit(event(t, "r", "late", 1))
	p.Emit(event(t, "other", "a0", 1))
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if p.Published() != 5 || p.Dropped() != 0 {
		t.Fatalf("published %d, dropped %d of 5", p.Published(), p.Dropped())
	}
	mu.Lock()
	defer mu.Unlock()
	at := map[string]int{}
	for i, ev := range stored {
		at[ev.Run+"/"+ev.Agent] = i
	}
	if a1Tries != 2 || at["r/a1"] > at["r/run"] || at["r/a0"] > at["r/run"] || at["r/late"] < at["r/run"] {
		t.Fatalf("a1 held %d times; stored in this order: %v", a1Tries, stored)
	}
}
