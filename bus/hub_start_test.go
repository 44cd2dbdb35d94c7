package bus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/internal/natstest"
)

// A process that starts while the hub cannot answer (two of its three
// servers down: no majority, so no JetStream) waits for it, saying so,
// and goes on once a server is back: a node or a run connecting, and a
// watcher following the events.
func TestStartWaitsForTheHub(t *testing.T) {
	hub := natstest.Start(t, 3, natstest.Options{})
	first, err := Connect(t.Context(), ConnectOptions{URLs: hub.URLs()}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(first.Close)
	if err := first.EnsureStreams(t.Context(), StreamLimits{}); err != nil {
		t.Fatal(err)
	}
	hub.Kill(1)
	hub.Kill(2)
	// Until server 0 has seen its majority go (a leader keeps answering
	// for a while after losing it), a Connect would pass without waiting.
	checkFor(t, time.Minute, func() error {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		if _, err := first.JetStream().AccountInfo(ctx); err == nil {
			return errors.New("server 0 still answers for JetStream: its majority's loss not seen yet")
		}
		return nil
	})
	var log syncBuffer
	logger := zerolog.New(&log)
	said := func(what string) func() error {
		return func() error {
			if !strings.Contains(log.String(), what) {
				return fmt.Errorf("not said yet: %q in\n%s", what, log.String())
			}
			return nil
		}
	}
	type connected struct {
		c   *Conn
		err error
	}
	done := make(chan connected, 1)
	go func() {
		c, err := Connect(t.Context(), ConnectOptions{URLs: hub.URL(0)}, logger)
		done <- connected{c, err}
	}()
	checkFor(t, time.Minute, said("JetStream: the server cannot answer yet"))
	hub.Start(1)
	var c *Conn
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		c = r.c
		t.Cleanup(c.Close)
	case <-time.After(StartWait):
		t.Fatal("Connect did not return once a majority was back")
	}
	checkFor(t, time.Minute, said("JetStream: the server answers again"))

	hub.Kill(1)
	type following struct {
		es  *EventStream
		err error
	}
	watching := make(chan following, 1)
	go func() {
		es, err := c.Events(t.Context(), WatchOptions{Run: "late", FromStart: true, Log: logger})
		watching <- following{es, err}
	}()
	checkFor(t, time.Minute, said("follow events: the server cannot answer yet"))
	hub.Start(2)
	var f following
	select {
	case f = <-watching:
		if f.err != nil {
			t.Fatal(f.err)
		}
	case <-time.After(StartWait):
		t.Fatal("Events did not return once a majority was back")
	}
	p, err := first.NewPublisher(PublisherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Emit(event(t, "late", "root", 1))
	select {
	case d := <-f.es.C:
		if d.Event.Run != "late" || d.Event.Seq != 1 {
			t.Fatalf("the watcher got %+v", d.Event)
		}
	case <-time.After(time.Minute):
		t.Fatal("the watcher that waited for the hub got no event")
	}
}
