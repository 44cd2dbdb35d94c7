package bus

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/internal/testport"
)

// Three embedded servers routed on loopback form a JetStream cluster:
// the streams are created once it has a meta leader, replicated on all
// three, and events a publisher on one server emits reach a subscriber on
// another, all of them, in order.
func TestEmbeddedClusterStreamsAndEvents(t *testing.T) {
	// Clustered JetStream wants routes on every server, the first too: the
	// route ports are picked before any server starts.
	ports := make([]int, 3)
	var routes []string
	for i := range ports {
		ports[i] = testport.Free(t)
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", ports[i]))
	}
	var servers []*Embedded
	for i, name := range []string{"a", "b", "c"} {
		e, err := StartEmbedded(t.Context(), EmbeddedOptions{StoreDir: t.TempDir(), ServerName: name, ClusterName: "troupe-test",
			ClusterPort: ports[i], Routes: routes}, zerolog.Nop())
		if err != nil {
			t.Fatalf("server %d: %v", i, err)
		}
		t.Cleanup(func() { e.Shutdown(context.Background()) })
		servers = append(servers, e)
	}
	// JetStream answers once the cluster has elected a meta leader and every
	// server has caught up with it.
	checkFor(t, 60*time.Second, func() error {
		leaders := 0
		for _, e := range servers {
			if !e.Server().JetStreamIsCurrent() {
				return fmt.Errorf("server %s is not current", e.Server().Name())
			}
			if e.Server().JetStreamIsLeader() {
				leaders++
			}
		}
		if leaders != 1 {
			return fmt.Errorf("%d meta leaders", leaders)
		}
		return nil
	})
	connect := func(e *Embedded) *Conn {
		c, err := Connect(t.Context(), ConnectOptions{URLs: e.URL()}, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	pubConn, subConn := connect(servers[0]), connect(servers[2])
	if err := pubConn.EnsureStreams(t.Context(), StreamLimits{Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	s, err := subConn.JetStream().Stream(t.Context(), EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.Replicas != 3 || info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
		t.Fatalf("events stream: replicas %d, cluster %+v; want 3 (a leader and 2 replicas)", info.Config.Replicas, info.Cluster)
	}
	if _, err := subConn.JetStream().KeyValue(t.Context(), NodesBucket); err != nil {
		t.Errorf("bucket %s: %v", NodesBucket, err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	es, err := subConn.Events(ctx, WatchOptions{Run: "clustered", FromStart: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := pubConn.NewPublisher(PublisherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 500
	for s := uint64(1); s <= n; s++ {
		p.Emit(event(t, "clustered", "root", s))
	}
	if err := p.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if p.Published() != n || p.Dropped() != 0 {
		t.Fatalf("published %d, dropped %d; want %d and 0", p.Published(), p.Dropped(), n)
	}
	for want := uint64(1); want <= n; want++ {
		select {
		case d := <-es.C:
			if d.Event.Seq != want {
				t.Fatalf("seq %d, want %d", d.Event.Seq, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("received %d of %d events", want-1, n)
		}
	}
}

// A server that cannot start says why, at once: here a cluster without
// routes, which clustered JetStream refuses.
func TestEmbeddedStartErrorSaysWhy(t *testing.T) {
	_, err := StartEmbedded(t.Context(), EmbeddedOptions{StoreDir: t.TempDir(), ServerName: "alone", ClusterName: "troupe-test"}, zerolog.Nop())
	if err == nil || !strings.Contains(err.Error(), "JetStream cluster requires configured routes") {
		t.Fatalf("a cluster without routes: %v", err)
	}
}
