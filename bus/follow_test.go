package bus

import (
	"context"
	"testing"
	"time"
)

// A consumer that stops delivering while the stream holds messages for
// it (here its subscription is stopped under it, as a lost server left
// one: reconnected and silent, no error to go by) is replaced by a new
// one that starts right after the last message handed on: every event
// comes once, in order.
func TestFollowResumesStalledConsumer(t *testing.T) {
	_, c := embedded(t)
	p, err := c.NewPublisher(PublisherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	emit := func(from, to uint64) {
		for s := from; s <= to; s++ {
			p.Emit(event(t, "stall", "root", s))
		}
		if err := p.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	emit(1, 10)
	es, err := c.Events(ctx, WatchOptions{Run: "stall", FromStart: true})
	if err != nil {
		t.Fatal(err)
	}
	recv := func(from, to uint64) {
		t.Helper()
		for want := from; want <= to; want++ {
			select {
			case d := <-es.C:
				if d.Event.Seq != want {
					t.Fatalf("seq %d, want %d", d.Event.Seq, want)
				}
			case <-time.After(time.Minute):
				t.Fatalf("no event %d within a minute (consumers replaced: %d)", want, es.Resumed())
			}
		}
	}
	recv(1, 10)
	es.f.mu.Lock()
	es.f.cc.Stop() // the consumer goes silent
	es.f.mu.Unlock()
	emit(11, 30)
	recv(11, 30)
	if es.Resumed() == 0 {
		t.Fatal("the events came without the consumer being replaced: was it silent?")
	}
	select {
	case d := <-es.C:
		t.Fatalf("an event more: %+v", d.Event)
	case <-time.After(2 * followCheckEvery):
	}
}
