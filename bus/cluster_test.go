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
	servers := startCluster(t)
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

// In a cluster of three the stream's creator chooses its replicas: streams
// made with nats.replicas 1 keep one replica through a reconcile that lets
// the hub choose (a run or node that leaves nats.replicas unset), but for
// one made with one replica only for want of servers, which it raises to
// three in place, its messages with it; an explicit nats.replicas 3 raises
// the rest (each raise reported), and an explicit 1 brings them back.
func TestReplicasChosenByTheStreamsCreator(t *testing.T) {
	servers := startCluster(t)
	c, err := Connect(t.Context(), ConnectOptions{URLs: servers[0].URL()}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if got := c.HubReplicas(); got != ClusterReplicas {
		t.Fatalf("the hub calls for %d replicas, want %d", got, ClusterReplicas)
	}
	if _, err := c.ReconcileStreams(t.Context(), StreamLimits{Replicas: 1, ApplyReplicas: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.JetStream().Publish(t.Context(), DefaultPrefix+".task.explore.v1", []byte("kept")); err != nil {
		t.Fatal(err)
	}
	replicas := func() map[string]int {
		out := map[string]int{}
		for _, name := range streamNames(c.Names()) {
			s, err := c.JetStream().Stream(t.Context(), name)
			if err != nil {
				t.Fatal(err)
			}
			out[name] = s.CachedInfo().Config.Replicas
		}
		return out
	}
	expect := func(when string, want func(name string) int) {
		t.Helper()
		for name, r := range replicas() {
			if r != want(name) {
				t.Errorf("%s: stream %s has %d replicas, want %d", when, name, r, want(name))
			}
		}
	}
	expect("made with nats.replicas 1", func(string) int { return 1 })
	// A party that lets the hub choose changes nothing that exists.
	if diffs, err := c.ReconcileStreams(t.Context(), StreamLimits{}); err != nil || len(diffs) != 0 {
		t.Fatalf("a reconcile that lets the hub choose: %v %v", diffs, err)
	}
	expect("after a reconcile that lets the hub choose", func(string) int { return 1 })
	// The task queue made with one replica for want of servers is raised
	// by it, and loses its mark.
	if err := markFewer(t.Context(), c.JetStream(), TasksStream); err != nil {
		t.Fatal(err)
	}
	diffs, err := c.ReconcileStreams(t.Context(), StreamLimits{})
	if err != nil || len(diffs) != 1 || diffs[0].Stream != TasksStream || !diffs[0].Applied || diffs[0].Had != "1" || diffs[0].Want != "3" {
		t.Fatalf("raising the stream made for want of servers: %+v %v", diffs, err)
	}
	expect("after the raise of the task queue", func(name string) int {
		if name == TasksStream {
			return 3
		}
		return 1
	})
	s, err := c.JetStream().Stream(t.Context(), TasksStream)
	if err != nil {
		t.Fatal(err)
	}
	if info := s.CachedInfo(); info.State.Msgs != 1 || strings.Contains(info.Config.Description, fewerMark) {
		t.Errorf("the task queue after the raise: %d messages (want 1), description %q", info.State.Msgs, info.Config.Description)
	}
	// nats.replicas 3 set explicitly raises the rest.
	diffs, err = c.ReconcileStreams(t.Context(), StreamLimits{Replicas: 3, ApplyReplicas: true})
	if err != nil || len(diffs) != len(streamNames(c.Names()))-1 {
		t.Fatalf("explicit 3: %v %v", diffs, err)
	}
	for _, d := range diffs {
		if d.Setting != "nats.replicas" || !d.Applied || d.Had != "1" || d.Want != "3" {
			t.Errorf("diff %+v", d)
		}
	}
	expect("with nats.replicas 3", func(string) int { return 3 })
	// Three stay through a reconcile that lets the hub choose; an explicit
	// nats.replicas 1 brings them down.
	if diffs, err := c.ReconcileStreams(t.Context(), StreamLimits{}); err != nil || len(diffs) != 0 {
		t.Fatalf("second reconcile: %v %v", diffs, err)
	}
	if _, err := c.ReconcileStreams(t.Context(), StreamLimits{Replicas: 1, ApplyReplicas: true}); err != nil {
		t.Fatal(err)
	}
	expect("with nats.replicas 1 again", func(string) int { return 1 })
}

// A single server keeps one replica when the hub chooses, and refuses
// three asked for explicitly with JetStream's reason; replicas other than
// 1 and 3 are refused before anything is asked.
func TestReplicasOnASingleServer(t *testing.T) {
	_, c := embedded(t)
	if got := c.HubReplicas(); got != 1 {
		t.Fatalf("a single server calls for %d replicas", got)
	}
	s, err := c.JetStream().Stream(t.Context(), EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	if r := s.CachedInfo().Config.Replicas; r != 1 {
		t.Errorf("events stream with %d replicas", r)
	}
	_, c2 := embeddedBare(t)
	if _, err := c2.ReconcileStreams(t.Context(), StreamLimits{Replicas: 3, ApplyReplicas: true}); err == nil ||
		!strings.Contains(err.Error(), "not supported in non-clustered mode") {
		t.Errorf("three replicas on one server: %v", err)
	}
	if _, err := c.ReconcileStreams(t.Context(), StreamLimits{Replicas: 2}); err == nil || !strings.Contains(err.Error(), "nats.replicas 2") {
		t.Errorf("two replicas: %v", err)
	}
}

// startCluster starts three embedded servers routed on loopback and
// waits until JetStream has a meta leader every server follows.
func startCluster(t *testing.T) []*Embedded {
	t.Helper()
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
	return servers
}
