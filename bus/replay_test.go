package bus

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/troupe-ai/troupe/messages"
)

// A JetStream read answers on the reply subject its asker names, which
// NATS permissions cannot restrict: a direct get or a pull would copy a
// stored message (its bytes and headers) onto any subject, another
// stream's included. So the buckets and object stores answer no direct
// get, and no node or watcher may direct-get or pull anything but its
// own queue (the node) or the events (the watcher). What is left, the
// server's own JSON answers, never makes a delete marker, a lease or a
// registry entry: a watcher copying a finished run's delete marker onto a
// live run's lease leaves the live run's lease standing.
func TestReadsCopyNothingOntoOtherSubjects(t *testing.T) {
	e, _, paths := authServerFor(t, DefaultPrefix)
	conn := roleConns(t, e, paths)
	req := conn(RoleRequester)
	if err := req.EnsureStreams(t.Context(), StreamLimits{}); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for _, name := range NamesFor(DefaultPrefix).kvStreams() {
		s, err := req.JetStream().Stream(ctx, name)
		if err != nil || s.CachedInfo().Config.AllowDirect {
			t.Errorf("%s answers direct gets (%v)", name, err)
		}
	}
	n1, w := dialRole(t, e.URL(), paths[RoleNode]), dialRole(t, e.URL(), paths[RoleWatcher])
	for _, st := range []string{"KV_troupe_nodes", "KV_troupe_runs", "OBJ_troupe_changes", "OBJ_troupe_artifacts", "OBJ_troupe_snapshots", ResultsStream, TasksStream} {
		n1.refusedPub(t, "$JS.API.DIRECT.GET."+st)
	}
	for _, st := range []string{"KV_troupe_runs", "OBJ_troupe_artifacts", "OBJ_troupe_snapshots"} {
		n1.refusedPub(t, "$JS.API.CONSUMER.MSG.NEXT."+st+".x")
	}
	for _, st := range []string{"KV_troupe_nodes", "KV_troupe_runs", EventsStream} {
		w.refusedPub(t, "$JS.API.DIRECT.GET."+st)
	}
	for _, st := range []string{"KV_troupe_nodes", "KV_troupe_runs"} {
		w.refusedPub(t, "$JS.API.CONSUMER.MSG.NEXT."+st+".x")
	}

	// Run r1 ended (its lease deleted); r2 is live.
	kv, err := req.JetStream().KeyValue(ctx, RunsBucket)
	if err != nil {
		t.Fatal(err)
	}
	lease, _ := json.Marshal(messages.RunLease{Run: "r2", Origin: "h/1", LeaseMS: 10000})
	if _, err := kv.Put(ctx, "r1", lease); err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "r2", lease); err != nil {
		t.Fatal(err)
	}
	marker := []byte(`{"last_by_subj":"$KV.troupe_runs.r1"}`)
	for _, api := range []string{"$JS.API.DIRECT.GET.KV_troupe_runs", "$JS.API.STREAM.MSG.GET.KV_troupe_runs", "$JS.API.INFO"} {
		if err := w.nc.PublishRequest(api, "$KV.troupe_runs.r2", marker); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	// Whatever landed under r2 is no delete, and no lease a node would take.
	got, err := kv.Get(ctx, "r2")
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatal("a watcher deleted a live run's lease")
	}
	if err != nil {
		t.Fatal(err)
	}
	if got.Operation() != jetstream.KeyValuePut {
		t.Fatalf("r2's entry is a %v", got.Operation())
	}
	if l, err := messages.Decode[messages.RunLease](got.Value(), 1<<20); err == nil && string(got.Value()) != string(lease) {
		t.Errorf("a lease a node would take was written by a watcher: %+v", l)
	}
}
