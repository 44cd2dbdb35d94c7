package bus

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/messages"
)

// Streams are created once; a second EnsureStreams (a second orchestrator
// on the same server) neither fails nor loses what the first stored.
func TestEnsureStreamsIdempotent(t *testing.T) {
	_, c := embedded(t)
	if _, err := c.JetStream().Publish(t.Context(), EventSubject(c.Prefix(), "r", "a", "x.y"), []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if err := c.EnsureStreams(t.Context(), StreamLimits{EventsMaxAge: time.Hour}); err != nil {
		t.Fatalf("second EnsureStreams: %v", err)
	}
	s, err := c.JetStream().Stream(t.Context(), EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(t.Context())
	if err != nil || info.State.Msgs != 1 {
		t.Fatalf("events stream after a second EnsureStreams: %+v %v", info, err)
	}
	for _, name := range []string{TasksStream, ResultsStream} {
		if _, err := c.JetStream().Stream(t.Context(), name); err != nil {
			t.Errorf("stream %s: %v", name, err)
		}
	}
	if _, err := c.JetStream().KeyValue(t.Context(), NodesBucket); err != nil {
		t.Errorf("bucket %s: %v", NodesBucket, err)
	}
}

// Many agents emit at once; a subscriber replaying from the start gets
// every event, each agent's in seq order without gaps, the stream's
// sequence without gaps, and nothing is counted as dropped.
func TestPublisherToSubscriberNoLoss(t *testing.T) {
	_, c := embedded(t)
	p, err := c.NewPublisher(PublisherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const agents, per = 8, 1500
	var wg sync.WaitGroup
	for a := 0; a < agents; a++ {
		wg.Add(1)
		go func(a int) {
			defer wg.Done()
			for s := uint64(1); s <= per; s++ {
				p.Emit(event(t, "run1", fmt.Sprintf("agent-%d", a), s))
			}
		}(a)
	}
	wg.Wait()
	if err := p.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if p.Published() != agents*per || p.Dropped() != 0 {
		t.Fatalf("published %d dropped %d, want %d and 0", p.Published(), p.Dropped(), agents*per)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	es, err := c.Events(ctx, WatchOptions{Run: "run1", FromStart: true})
	if err != nil {
		t.Fatal(err)
	}
	next := map[string]uint64{}
	var lastStream uint64
	for n := 0; n < agents*per; n++ {
		select {
		case d := <-es.C:
			if d.Event.Seq != next[d.Event.Agent]+1 {
				t.Fatalf("%s: seq %d after %d", d.Event.Agent, d.Event.Seq, next[d.Event.Agent])
			}
			next[d.Event.Agent] = d.Event.Seq
			if d.StreamSeq != lastStream+1 {
				t.Fatalf("stream seq %d after %d", d.StreamSeq, lastStream)
			}
			lastStream = d.StreamSeq
		case <-time.After(30 * time.Second):
			t.Fatalf("only %d of %d events arrived", n, agents*per)
		}
	}
	if es.RejectedTotal() != 0 {
		t.Errorf("rejected: %v", es.Rejected())
	}
}

// Hostile messages on event subjects are counted by reason and skipped;
// the good ones around them still arrive.
func TestEventsRejectHostileInput(t *testing.T) {
	_, c := embedded(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	es, err := c.Events(ctx, WatchOptions{FromStart: true, MaxBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	good := event(t, "r1", "root", 1)
	goodB, _ := json.Marshal(good)
	v2 := good
	v2.V = 2
	v2B, _ := json.Marshal(v2)
	noSeq := good
	noSeq.Seq = 0
	noSeqB, _ := json.Marshal(noSeq)
	subj := EventSubject(c.Prefix(), "r1", "root", messages.EvtToolFinished)
	escAgent := good // an agent ID that would drive the watcher's terminal
	escAgent.Agent = "root\x1b]0;owned\x07"
	escB, _ := json.Marshal(escAgent)
	escParent := good
	escParent.Parent = "root\u009b2J"
	escParentB, _ := json.Marshal(escParent)
	for _, m := range []struct{ subj, data string }{
		{EventSubject(c.Prefix(), "r1", escAgent.Agent, messages.EvtToolFinished), string(escB)},
		{subj, string(escParentB)},
		{subj, "{not json"},
		{subj, string(v2B)},
		{subj, string(noSeqB)},
		{EventSubject(c.Prefix(), "r1", "forged", messages.EvtToolFinished), string(goodB)},
		{subj, `{"v":1,"pad":"` + strings.Repeat("x", 5000) + `"}`},
		{subj, string(goodB)},
	} {
		if _, err := c.JetStream().Publish(t.Context(), m.subj, []byte(m.data)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case d := <-es.C:
		if d.Event.ID != good.ID {
			t.Errorf("delivered %+v", d.Event)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the good event never arrived")
	}
	want := map[string]uint64{RejectJSON: 1, RejectVersion: 1, RejectInvalid: 3, RejectSubject: 1, RejectOversize: 1}
	if got := es.Rejected(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("rejected %v, want %v", got, want)
	}
}

// A wrong URL or wrong credentials is an error naming the setting.
func TestConnectErrors(t *testing.T) {
	_, err := Connect(t.Context(), ConnectOptions{URLs: "nats://127.0.0.1:1", Setting: "--nats", Timeout: time.Second}, zerolog.Nop())
	if err == nil || !strings.Contains(err.Error(), "--nats nats://127.0.0.1:1") || !strings.Contains(err.Error(), "no server reachable") {
		t.Errorf("wrong URL: %v", err)
	}
	e, err := StartEmbedded(t.Context(), EmbeddedOptions{Ephemeral: true, Token: "s3cret-token"}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(context.Background())
	_, err = Connect(t.Context(), ConnectOptions{URLs: e.URL(), Token: "wrong"}, zerolog.Nop())
	if err == nil || !strings.Contains(err.Error(), "refused the token in nats.token") {
		t.Errorf("wrong token: %v", err)
	}
	c, err := Connect(t.Context(), ConnectOptions{URLs: e.URL(), Token: "s3cret-token"}, zerolog.Nop())
	if err != nil {
		t.Fatalf("right token: %v", err)
	}
	c.Close()
	if _, err := Connect(t.Context(), ConnectOptions{URLs: ""}, zerolog.Nop()); err == nil || !strings.Contains(err.Error(), "nats.url is empty") {
		t.Errorf("empty URL: %v", err)
	}
}

// The embedded server listens on loopback only unless told otherwise.
func TestEmbeddedLoopbackByDefault(t *testing.T) {
	e, _ := embedded(t)
	if !strings.HasPrefix(e.URL(), "nats://127.0.0.1:") {
		t.Errorf("url %s", e.URL())
	}
}

// Emit never blocks: with the server stopped, nothing is ever
// acknowledged and the publisher is stuck on a full window, yet emitting
// 5,000 events into a queue of 10 returns, and every event beyond what the
// queue, the window and the publisher's hand can hold is counted as
// dropped as it is emitted. Once the acknowledgements time out, every
// event is counted as dropped and none as published.
func TestEmitNeverBlocks(t *testing.T) {
	e, c := embedded(t)
	const queue, window, n = 10, 16, 5000
	p, err := c.NewPublisher(PublisherOptions{Queue: queue, Window: window, AckTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	evs := make([]messages.Event, n)
	for i := range evs {
		evs[i] = event(t, "r", "a", uint64(i+1))
	}
	e.Shutdown(t.Context())
	emitted := make(chan struct{})
	go func() {
		defer close(emitted)
		for _, ev := range evs {
			p.Emit(ev)
		}
	}()
	select {
	case <-emitted:
	case <-time.After(time.Minute): // a guard against a hang, not a speed check
		t.Fatalf("Emit blocked with the server stopped: %d of %d emitted", p.Emitted(), n)
	}
	// Published counts what was sent and awaits its acknowledgement: at
	// most the window.
	if p.Emitted() != n || p.Published() > window || p.Dropped() < n-(queue+window+1) {
		t.Errorf("emitted %d, published %d, dropped %d: want %d, at most %d, at least %d",
			p.Emitted(), p.Published(), p.Dropped(), n, window, n-(queue+window+1))
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if p.Published() != 0 || p.Dropped() != n {
		t.Errorf("after close with no server: published %d, dropped %d; want 0 and %d", p.Published(), p.Dropped(), n)
	}
	p.Emit(event(t, "r", "a", n+1)) // after Close: counted, never sent
	if p.Dropped() != n+1 || p.Emitted() != n+1 {
		t.Errorf("after close: emitted %d published %d dropped %d", p.Emitted(), p.Published(), p.Dropped())
	}
}

// Put returns the handle without waiting on NATS; Flush waits for the
// upload, after which Get reads the content; Close after Flush is a no-op.
func TestArtifactsUploadInBackground(t *testing.T) {
	_, c := embedded(t)
	if err := c.EnsureStreams(t.Context(), StreamLimits{}); err != nil {
		t.Fatal(err)
	}
	a := c.Artifacts("r1")
	defer a.Close()
	h, err := a.Put(t.Context(), "out.txt", strings.NewReader("spilled output"))
	if err != nil || h != "artifact://r1/out.txt" {
		t.Fatalf("put: %q %v", h, err)
	}
	if err := a.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := a.Get(t.Context(), h, &b); err != nil || b.String() != "spilled output" || a.Failed() != 0 {
		t.Fatalf("get: %q %v (failed %d)", b.String(), err, a.Failed())
	}
	if _, err := a.Put(t.Context(), "bad name*", strings.NewReader("x")); err == nil {
		t.Error("a name that is no subject token was accepted")
	}
}
