package cluster

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
)

// A node that stops heartbeating (killed: no drain, no goodbye) is
// reported lost in the run's own events: node.left with reason lost, as
// agent NodesAgent numbered from 1, with the node in the envelope. A
// drained node is not (it said goodbye itself), nor a live one. A replay
// of the lost node's last entry does not bring it back; a new entry (it
// beats again) does, with node.joined, and it can be lost again.
func TestLostNodeReported(t *testing.T) {
	s := natsServer(t)
	nc := connect(t, s)
	js, _ := jetstream.New(nc)
	rec := &recorder{}
	remote, err := StartRemote(t.Context(), RemoteOptions{Bus: wrap(t, nc), Run: "rn", LeaseTimeout: time.Second,
		Events: rec, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	srv := blockingScript(0, nil)
	defer srv.Close()
	nodes := map[string]*Node{}
	for _, id := range []string{"doomed", "drained", "live"} {
		o := nodeOpts(t, s, srv, id)
		o.Name, o.Heartbeat = "box-"+id, 100*time.Millisecond
		nodes[id] = startNodeWith(t, o)
	}
	checkFor(t, 10*time.Second, func() error {
		if len(remote.Nodes()) != 3 {
			return errorf("%d nodes", len(remote.Nodes()))
		}
		return nil
	})
	if err := nodes["drained"].Drain(t.Context()); err != nil {
		t.Fatal(err)
	}
	nodes["doomed"].o.Bus.NATS().Close() // the process dies: no drain, no goodbye

	lost := waitNodeEvents(t, rec, 1)[0]
	if err := lost.Validate(); err != nil {
		t.Fatal(err)
	}
	left, err := messages.DecodeAs[messages.NodeLeft](lost)
	if lost.Type != messages.EvtNodeLeft || lost.Run != "rn" || lost.Agent != NodesAgent || lost.Kind != "node" ||
		lost.Node != "doomed" || lost.Seq != 1 || err != nil || left != (messages.NodeLeft{Node: "doomed", Name: "box-doomed", Reason: NodeLost}) {
		t.Fatalf("lost node event %+v %s (%v)", lost, lost.Data, err)
	}
	// The drained node was gone from the registry before the doomed one
	// went silent (it beat last before the doomed one did), so a sweep
	// that found the doomed one stale would have found it too.
	if got := names(remote.Nodes()); !slices.Equal(got, []string{"live"}) {
		t.Errorf("live nodes %v, want [live]", got)
	}

	// The watcher replays the entry the node was lost with (as after a
	// reconnect): still lost.
	kv, err := js.KeyValue(t.Context(), bus.NodesBucket)
	if err != nil {
		t.Fatal(err)
	}
	last, err := kv.Get(t.Context(), "doomed")
	if err != nil {
		t.Fatal(err)
	}
	remote.nodes.apply(last, zerolog.Nop())
	if got := names(remote.Nodes()); !slices.Equal(got, []string{"live"}) {
		t.Errorf("after a replay of its last entry, live nodes %v, want [live]", got)
	}
	// It beats again (its connection came back): reported back, then
	// lost again once it is silent.
	var info messages.NodeInfo
	if err := json.Unmarshal(last.Value(), &info); err != nil {
		t.Fatal(err)
	}
	info.Heartbeat = time.Now().UTC()
	b, _ := json.Marshal(info)
	if _, err := kv.Put(t.Context(), "doomed", b); err != nil {
		t.Fatal(err)
	}
	evs := waitNodeEvents(t, rec, 3)
	for i, want := range []string{messages.EvtNodeLeft, messages.EvtNodeJoined, messages.EvtNodeLeft} {
		if ev := evs[i]; ev.Type != want || ev.Seq != uint64(i+1) || ev.Node != "doomed" || ev.Agent != NodesAgent {
			t.Errorf("event %d: %s seq %d about %s as %s, want %s seq %d about doomed", i, ev.Type, ev.Seq, ev.Node, ev.Agent, want, i+1)
		}
	}
	if joined, err := messages.DecodeAs[messages.NodeJoined](evs[1]); err != nil || joined.Name != "box-doomed" || joined.Slots != 2 {
		t.Errorf("node.joined of the returned node: %+v %v", joined, err)
	}
	for _, ev := range rec.events() {
		if ev.Node != "doomed" {
			t.Errorf("the run reported %s about %s, which did not stop heartbeating", ev.Type, ev.Node)
		}
	}
}

// waitNodeEvents waits until rec holds n events and returns them.
func waitNodeEvents(t *testing.T, rec *recorder, n int) []messages.Event {
	t.Helper()
	checkFor(t, 20*time.Second, func() error {
		if got := len(rec.events()); got < n {
			return fmt.Errorf("%d node events, want %d", got, n)
		}
		return nil
	})
	return rec.events()
}

func names(ns []messages.NodeInfo) []string {
	out := make([]string, 0, len(ns))
	for _, n := range ns {
		out = append(out, n.ID)
	}
	return out
}
