package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
)

// A run that stops with remote tasks queued, resumed by a new process:
// the task whose result a node stored meanwhile is taken up from the
// results stream (no second run), the one no node took is queued again
// once, as a new message, the old copy gone.
func TestResumedRunTakesUpStoredResults(t *testing.T) {
	s := natsServer(t)
	nc := connect(t, s)
	conn := wrap(t, nc)
	recs := filepath.Join(t.TempDir(), "remote", "rr.tasks.jsonl")
	start := func() *Remote {
		r, err := StartRemote(t.Context(), RemoteOptions{Bus: conn, Run: "rr", Placement: map[string]string{"explore": PlaceRemote},
			Records: recs, Log: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	task := func(id string) actors.ChildTask {
		return actors.ChildTask{V: messages.ProtocolVersion, Run: "rr", ID: id, Parent: "root", Kind: "explore", Task: "q: where is main?", Model: "small"}
	}
	first := start()
	ended := make(chan actors.AgentResult, 2)
	for _, id := range []string{"explore-done", "explore-never"} {
		c, err := first.Placer().Place(t.Context(), task(id))
		if err != nil {
			t.Fatal(err)
		}
		go func() { res, _ := c.Start(context.Background()); ended <- res }()
	}
	js, _ := jetstream.New(nc)
	cons, err := js.CreateConsumer(t.Context(), conn.Names().Tasks, jetstream.ConsumerConfig{Durable: "taker",
		FilterSubject: TaskSubject(DefaultPrefix, "explore", messages.ProtocolVersion), AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	// A node takes explore-done; the run stops before its result comes.
	var taken messages.Task
	checkFor(t, 10*time.Second, func() error {
		m, err := cons.Next(jetstream.FetchMaxWait(time.Second))
		if err != nil {
			return err
		}
		tk, err := DecodeTask(m.Data())
		if err != nil || tk.ID != "explore-done" {
			_ = m.NakWithDelay(time.Minute) // let explore-done come next
			return errorf("took %s (%v), waiting for explore-done", tk.ID, err)
		}
		taken = tk
		return m.Ack()
	})
	first.Close()
	<-ended
	<-ended
	// The node's result is stored while the run is down.
	res, _ := json.Marshal(actors.AgentResult{Agent: "explore-done", Kind: "explore", Status: actors.StatusCompleted, Text: "main.go:3"}.Wire("rr", "n1", 1))
	d := newDelivery(taken.Secret, "explore-done", "n1", 1)
	if _, err := js.PublishMsg(t.Context(), &nats.Msg{Subject: bus.ResultSubject(DefaultPrefix, "rr", "explore-done", d.tag), Data: res,
		Header: d.sign(nil, res)}); err != nil {
		t.Fatal(err)
	}

	second := start()
	defer second.Close()
	c, err := second.Placer().Place(t.Context(), task("explore-done"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Start(t.Context())
	if err != nil || got.Text != "main.go:3" || got.Status != actors.StatusCompleted {
		recTxt, _ := os.ReadFile(recs)
		t.Fatalf("taken up: %+v %v\n%s\ntaken secret %s", got, err, recTxt, taken.Secret)
	}
	never, err := second.Placer().Place(t.Context(), task("explore-never"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() { _, _ = never.Start(ctx) }()
	checkFor(t, 10*time.Second, func() error {
		if st := second.Stats(); st.Reattached != 1 {
			return errorf("stats %+v", st)
		}
		str, err := js.Stream(t.Context(), conn.Names().Tasks)
		if err != nil {
			return err
		}
		info, err := str.Info(t.Context())
		if err != nil {
			return err
		}
		if info.State.Msgs != 1 {
			var ids []string
			for q := info.State.FirstSeq; q <= info.State.LastSeq; q++ {
				if m, err := str.GetMsg(t.Context(), q); err == nil {
					tk, _ := DecodeTask(m.Data)
					ids = append(ids, fmt.Sprintf("%d:%s/p%d/%s", q, tk.ID, tk.Prior, m.Header.Get("Nats-Msg-Id")))
				}
			}
			recTxt, _ := os.ReadFile(recs)
			return errorf("%d tasks queued, want explore-never's new copy only: %v\n%s", info.State.Msgs, ids, recTxt)
		}
		m, err := str.GetLastMsgForSubject(t.Context(), TaskSubject(DefaultPrefix, "explore", messages.ProtocolVersion))
		if err != nil {
			return err
		}
		tk, err := DecodeTask(m.Data)
		if err != nil || tk.ID != "explore-never" || tk.Prior != resumeAttempts {
			return errorf("queued %+v %v", tk, err)
		}
		return nil
	})
}

// A run's task records outlive a run that may be resumed (Close alone:
// cancelled, failed, killed) and go with one that ended for good (Ended,
// then Close), their directory with them once empty.
func TestTaskRecordsKeptForResumeDeletedAtTheEnd(t *testing.T) {
	s := natsServer(t)
	conn := wrap(t, connect(t, s))
	dir := filepath.Join(t.TempDir(), "remote")
	run := func(id string, ended bool) string {
		path := filepath.Join(dir, id+".tasks.jsonl")
		r, err := StartRemote(t.Context(), RemoteOptions{Bus: conn, Run: id, Placement: map[string]string{"explore": PlaceRemote},
			Records: path, Log: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		c, err := r.Placer().Place(t.Context(), actors.ChildTask{V: messages.ProtocolVersion, Run: id, ID: "explore-1", Parent: "root",
			Kind: "explore", Task: "q", Model: "small"})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); _, _ = c.Start(ctx) }()
		checkFor(t, 10*time.Second, func() error {
			if b, _ := os.ReadFile(path); len(b) == 0 {
				return errorf("no record of the queued task yet")
			}
			return nil
		})
		cancel()
		<-done
		if ended {
			r.Ended()
		}
		r.Close()
		return path
	}
	kept := run("kept", false)
	if _, err := os.Stat(kept); err != nil {
		t.Fatalf("the records of a run resume may take up: %v", err)
	}
	gone := run("gone", true)
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Fatalf("the records of a run that ended: %v", err)
	}
	if _, err := os.Stat(kept); err != nil {
		t.Fatalf("another run's records went with it: %v", err)
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Remove(kept))
	run("last", true)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the emptied records directory stays: %v", err)
	}
}
