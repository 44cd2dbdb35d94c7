package watch

import (
	"encoding/json"
	"github.com/troupe-ai/troupe/bus/bustest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
)

// rolesServer is an embedded server in operator mode whose streams the
// requester made, and a connection of each role.
func rolesServer(t *testing.T) map[bus.Role]*bus.Conn {
	t.Helper()
	s := bustest.StartAuth(t, bus.DefaultPrefix)
	conns := map[bus.Role]*bus.Conn{}
	for _, r := range bus.Roles {
		conns[r] = s.ConnWith(t, s.Paths[r], string(r))
	}
	return conns
}

// waitFor polls cond every 20 ms for up to 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not met in 30 s: %s", what)
		}
		<-time.After(20 * time.Millisecond)
	}
}

// lines is a concurrency-safe log sink.
type lines struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// With the watcher's credentials, the monitor reads the task queue's real
// depth (two tasks a requester queued, no node to take them) and the
// registry's live nodes with the free slots they report, and the server
// refuses nothing it asks (the watcher's grant covers the queue's info).
func TestMonitorReadsQueueAndNodesAsWatcher(t *testing.T) {
	conns := rolesServer(t)
	var log lines
	watcher := conns[bus.RoleWatcher]
	mon := StartMonitor(t.Context(), MonitorOptions{Conn: watcher, QueuePeriod: 50 * time.Millisecond, Log: zerolog.New(&log)})
	defer mon.Close()
	waitFor(t, "an empty queue and registry", func() bool {
		s := mon.Stats()
		return s.QueueDepth != nil && *s.QueueDepth == 0 && s.Nodes != nil && len(s.Nodes) == 0
	})

	for range 2 {
		if _, err := conns[bus.RoleRequester].JetStream().Publish(t.Context(), bus.TaskSubject(bus.DefaultPrefix, "explore", messages.ProtocolVersion), []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	info, _ := json.Marshal(messages.NodeInfo{ID: "node-1", Name: "builder", Kinds: []string{"explore"}, Slots: 4, Free: 3, BeatMS: 60_000})
	kv, err := conns[bus.RoleNode].JetStream().KeyValue(t.Context(), bus.NodesBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(t.Context(), "node-1", info); err != nil {
		t.Fatal(err)
	}
	var s Stats
	waitFor(t, "the queue's two tasks and the node", func() bool {
		s = mon.Stats()
		return s.QueueDepth != nil && *s.QueueDepth == 2 && len(s.Nodes) == 1
	})
	if n := s.Nodes[0]; n.ID != "node-1" || n.Name != "builder" || n.Slots != 4 || n.Free != 3 {
		t.Errorf("node %+v", n)
	}
	if err := kv.Delete(t.Context(), "node-1"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the node gone from the registry", func() bool { return len(mon.Stats().Nodes) == 0 })
	if strings.Contains(log.String(), "cannot read") {
		t.Errorf("the monitor could not read as a watcher:\n%s", log.String())
	}
}

// A node whose entry stops being renewed (killed: its entry expires with
// no delete) leaves the list after two of its heartbeats.
func TestMonitorForgetsSilentNodes(t *testing.T) {
	conns := rolesServer(t)
	mon := StartMonitor(t.Context(), MonitorOptions{Conn: conns[bus.RoleWatcher]})
	defer mon.Close()
	kv, err := conns[bus.RoleNode].JetStream().KeyValue(t.Context(), bus.NodesBucket)
	if err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(messages.NodeInfo{ID: "node-1", Name: "b", Slots: 1, Free: 1, BeatMS: 100})
	if _, err := kv.Put(t.Context(), "node-1", info); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the node listed", func() bool { return len(mon.Stats().Nodes) == 1 })
	waitFor(t, "the silent node forgotten", func() bool { return len(mon.Stats().Nodes) == 0 })
}

// A figure that cannot be read (here: a prefix whose streams no one made)
// is left out, and its failure is logged once however often the monitor
// tries again.
func TestMonitorUnreadableLoggedOnce(t *testing.T) {
	conns := rolesServer(t)
	conn, err := bus.Wrap(conns[bus.RoleRequester].NATS(), "alpha")
	if err != nil {
		t.Fatal(err)
	}
	var log lines
	mon := StartMonitor(t.Context(), MonitorOptions{Conn: conn, QueuePeriod: 5 * time.Millisecond, Log: zerolog.New(&log)})
	defer mon.Close()
	waitFor(t, "several failed reads", func() bool {
		mon.mu.Lock()
		defer mon.mu.Unlock()
		return mon.misses["queue"] >= 4
	})
	if s := mon.Stats(); s.QueueDepth != nil || s.Nodes != nil {
		t.Errorf("unreadable figures given: %+v", s)
	}
	if n := strings.Count(log.String(), "cannot read the task queue"); n != 1 {
		t.Errorf("the failure was logged %d times, want once:\n%s", n, log.String())
	}
}
