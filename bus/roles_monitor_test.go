package bus

import (
	"context"
	"slices"
	"testing"
	"time"
)

// What a monitoring client holding watcher.creds (or node.creds) may ask
// JetStream, as the nats CLI asks it: the streams' names (`nats stream ls
// --names`), the info of troupe's streams (`nats stream info`), the task
// queue's depth among them, and the registry bucket's status (`nats kv
// info`). A full listing (`nats stream ls`, and `nats kv ls` with or
// without --names, as natscli 0.5.0 asks them) asks for every stream of
// the account at once ($JS.API.STREAM.LIST), which no grant can limit to
// one prefix's streams: it is refused, and the README says to use `nats
// stream ls --names` or a requester's credentials.
func TestRolesMonitoringReads(t *testing.T) {
	e, paths := authServer(t)
	conn := roleConns(t, e, paths)
	if err := conn(RoleRequester).EnsureStreams(t.Context(), StreamLimits{}); err != nil {
		t.Fatal(err)
	}
	for _, role := range []Role{RoleWatcher, RoleNode} {
		c := conn(role)
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		var names []string
		lister := c.JetStream().StreamNames(ctx)
		for n := range lister.Name() {
			names = append(names, n)
		}
		if err := lister.Err(); err != nil || !slices.Contains(names, TasksStream) {
			t.Errorf("%s: stream names %v, %v", role, names, err)
		}
		for _, s := range []string{EventsStream, TasksStream} {
			if st, err := c.JetStream().Stream(ctx, s); err != nil || st.CachedInfo().Config.Name != s {
				t.Errorf("%s: info of %s: %v", role, s, err)
			}
		}
		kv, err := c.JetStream().KeyValue(ctx, NodesBucket)
		if err == nil {
			_, err = kv.Status(ctx)
		}
		if err != nil {
			t.Errorf("%s: status of %s: %v", role, NodesBucket, err)
		}
		cancel()
		dialRole(t, e.URL(), paths[role]).refusedPub(t, "$JS.API.STREAM.LIST")
	}
	// The watcher may not read the queue's tasks, only its info.
	dialRole(t, e.URL(), paths[RoleWatcher]).refusedPub(t, "$JS.API.STREAM.MSG.GET."+TasksStream)
}
