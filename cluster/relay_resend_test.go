package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
)

// A batch of a task's events that no requester answers goes again: here
// no requester listens when the task's first events go out (as while the
// requester reconnects after a lost server), and once the run's requester
// answers, every event reaches the stream, none dropped. A batch that
// comes twice (its answer lost, it went again) is taken twice and stored
// once: the stream knows its events by their IDs.
func TestRelaySendsAnUnansweredBatchAgain(t *testing.T) {
	s := natsServer(t)
	requester, node := wrap(t, connect(t, s)), wrap(t, connect(t, s))
	if err := requester.EnsureStreams(t.Context(), bus.StreamLimits{}); err != nil {
		t.Fatal(err)
	}
	pub, err := requester.NewPublisher(bus.PublisherOptions{Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	const run, task = "rs", "explore-1"
	secret := newSecret()
	d := newDelivery(secret, task, "n1", 1)
	var counts relayCounts
	rel := newEventRelay(node, run, task, d, &counts, 64, zerolog.Nop())
	defer rel.close()
	var evs []messages.Event
	for i := range 3 {
		ev, err := messages.NewEvent(run, task, messages.EvtToolStarted, uint64(i+1), messages.ToolStarted{Tool: "grep", CallID: fmt.Sprint(i)})
		if err != nil {
			t.Fatal(err)
		}
		ev.Kind, ev.Node = "explore", "n1"
		evs = append(evs, ev)
		rel.Emit(ev)
	}
	checkFor(t, 30*time.Second, func() error {
		if counts.resent.Load() == 0 {
			return errors.New("the unanswered batch has not gone again")
		}
		return nil
	})
	remote, err := StartRemote(t.Context(), RemoteOptions{Bus: requester, Run: run, Relay: pub, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	remote.mu.Lock()
	remote.waiting[task] = &remoteChild{r: remote, task: messages.Task{Run: run, ID: task, Kind: "explore"},
		done: make(chan actors.AgentResult, 1), secret: secret}
	remote.mu.Unlock()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	rel.flush(ctx)
	if counts.sent.Load() != 3 || counts.dropped.Load()+counts.refused.Load() != 0 {
		t.Fatalf("relay: %d taken, %d dropped, %d refused; want 3 taken", counts.sent.Load(), counts.dropped.Load(), counts.refused.Load())
	}
	// The same batch again, as a relay whose answer was lost sends it.
	b := batchOf(evs...)
	m, err := node.NATS().RequestMsg(&nats.Msg{Subject: bus.CtlSubject(DefaultPrefix, run, task, ctlEvents), Data: b, Header: d.sign(nil, b)},
		10*time.Second)
	if rep, derr := decodeReply(m, err); derr != nil || rep.Error != nil || rep.Accepted != 3 {
		t.Fatalf("the batch again: %+v, %v", rep, derr)
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	stored := storedRunEvents(t, requester)
	seen := map[string]int{}
	for _, ev := range stored {
		seen[ev.ID]++
	}
	for _, ev := range evs {
		if seen[ev.ID] != 1 {
			t.Errorf("event %s stored %d times, want once", ev.ID, seen[ev.ID])
		}
	}
	if len(stored) != len(evs) {
		t.Errorf("%d events stored, want %d", len(stored), len(evs))
	}
}
