package bus

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/rs/zerolog"
)

// allowedSub subscribes to subj and checks the server took it: a refused
// publish sent after it is the first violation the connection hears (the
// server answers in order, and the client reports in order).
func (rc *roleClient) allowedSub(t testing.TB, subj string) {
	t.Helper()
	if _, err := rc.nc.SubscribeSync(subj); err != nil {
		t.Fatalf("subscribe %s: %v", subj, err)
	}
	rc.refusedPub(t, "$SYS.REQ.SERVER.PING.IDZ") // nobody may: a marker
}

// userKey is the public key of the creds file at path.
func userKey(t testing.TB, path string) string {
	t.Helper()
	kp, err := existingUser(path)
	if err != nil || kp == nil {
		t.Fatalf("%s: %v", path, err)
	}
	pub, _ := kp.PublicKey()
	return pub
}

// Every user's replies (JetStream answers, pulled tasks, consumer
// deliveries, budget and snapshot replies) come to an inbox only it may
// read: _INBOX.>, everyone's inboxes, another user's and > are refused to
// every role, its own is not, and a Conn uses its own.
func TestInboxesArePrivate(t *testing.T) {
	e, a, paths := authServerFor(t, DefaultPrefix)
	other, err := a.IssueNode("node-2", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, role := range Roles {
		rc := dialRole(t, e.URL(), paths[role])
		for _, s := range []string{"_INBOX.>", "_INBOX_*.>", ">", "_INBOX.abc", InboxPrefix(userKey(t, other)) + ".>"} {
			rc.refusedSub(t, s)
		}
		own := InboxPrefix(userKey(t, paths[role]))
		rc.allowedSub(t, own+".>")
		c := roleConns(t, e, paths)(role)
		if got := c.NATS().Opts.InboxPrefix; got != own {
			t.Errorf("%s connects with inbox prefix %q, want %q", role, got, own)
		}
	}
}

// A node's own credentials create, update, purge or delete no stream
// (the artifacts' included), write no other node's registry entry, read
// no other node's inbox, hear none of the run's control but its agents',
// and pull only its kinds.
func TestNodeGrantsAreLeast(t *testing.T) {
	e, a, paths := authServerFor(t, DefaultPrefix)
	explorer, err := a.IssueNode("reader-1", []string{"explore"})
	if err != nil {
		t.Fatal(err)
	}
	var pub []string
	for _, s := range streamsOf(NamesFor(DefaultPrefix)).all() {
		for _, op := range []string{"CREATE", "UPDATE", "PURGE", "DELETE", "MSG.DELETE"} {
			pub = append(pub, "$JS.API.STREAM."+op+"."+s)
		}
	}
	pub = append(pub, "$KV.troupe_nodes.reader-1", "$KV.troupe_nodes.node-2", "$KV.troupe_runs.r1", "$O.troupe_snapshots.M.x",
		"$JS.API.CONSUMER.DELETE.TROUPE_TASKS.troupe_explore_v1", "$JS.API.CONSUMER.CREATE.TROUPE_EVENTS.x.troupe.evt.>",
		"troupe.task.explore.v1", "troupe.ctl.r1.cancel", "troupe.ctl.r1.a.cancel", "_INBOX.x", InboxPrefix(userKey(t, explorer))+".x")
	n1 := dialRole(t, e.URL(), paths[RoleNode])
	for _, s := range pub {
		n1.refusedPub(t, s)
	}
	for _, s := range []string{"troupe.ctl.r1.a.snapshot", "troupe.ctl.r1.a.started", "troupe.ctl.>", "troupe.budget.>", "troupe.result.>",
		InboxPrefix(userKey(t, explorer)) + ".>"} {
		n1.refusedSub(t, s)
	}
	// A node of the explore kind only: no other kind's consumer.
	n2 := dialRole(t, e.URL(), explorer)
	for _, s := range []string{"$JS.API.CONSUMER.MSG.NEXT.TROUPE_TASKS.troupe_worker_v1", "$JS.API.CONSUMER.CREATE.TROUPE_TASKS.troupe_worker_v1.troupe.task.worker.v1",
		"$JS.API.CONSUMER.CREATE.TROUPE_TASKS.troupe_explore_v1.troupe.task.worker.v1", "$JS.ACK.TROUPE_TASKS.troupe_worker_v1.1.1.1.1.1",
		"$KV.troupe_nodes.node-1"} {
		n2.refusedPub(t, s)
	}
	id, err := Connect(t.Context(), ConnectOptions{URLs: e.URL(), CredsFile: explorer}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer id.Close()
	if got := id.Identity(); got.Role != RoleNode || got.Node != "reader-1" || id.MayCreateStreams() ||
		!got.MayPublish("$JS.API.CONSUMER.MSG.NEXT.TROUPE_TASKS.troupe_explore_v1") || got.MayPublish("$JS.API.CONSUMER.MSG.NEXT.TROUPE_TASKS.troupe_worker_v1") {
		t.Errorf("identity %+v", got)
	}
}

// A prefix's users reach nothing of another prefix on the same server
// (one account): alpha's requester, node and watcher can neither read
// nor change troupe's streams, buckets or subjects.
func TestPrefixGrantsStayInTheirPrefix(t *testing.T) {
	e, a, paths := authServerFor(t, "alpha")
	// The default prefix's requester, from the same account.
	troupe := *a
	troupe.prefix = DefaultPrefix
	b, err := troupe.Creds(RoleRequester)
	if err != nil {
		t.Fatal(err)
	}
	req, err := Connect(t.Context(), ConnectOptions{URLs: e.URL(), Creds: b}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer req.Close()
	if err := req.EnsureStreams(t.Context(), StreamLimits{}); err != nil {
		t.Fatal(err)
	}
	pub := []string{"$JS.API.STREAM.INFO.TROUPE_EVENTS", "$JS.API.STREAM.MSG.GET.TROUPE_TASKS", "$JS.API.DIRECT.GET.TROUPE_RESULTS.>",
		"$JS.API.CONSUMER.CREATE.TROUPE_EVENTS.x.troupe.evt.>", "$JS.API.CONSUMER.CREATE.TROUPE_TASKS.troupe_explore_v1.troupe.task.explore.v1",
		"$JS.API.CONSUMER.MSG.NEXT.TROUPE_TASKS.troupe_explore_v1", "$JS.API.DIRECT.GET.KV_troupe_nodes.$KV.troupe_nodes.n1",
		"$JS.API.STREAM.PURGE.OBJ_troupe_artifacts", "$JS.API.STREAM.CREATE.TROUPE_EVENTS", "$KV.troupe_nodes.node-1", "$KV.troupe_runs.r1",
		"$O.troupe_changes.M.x", "troupe.evt.r1.a.agent.started", "troupe.task.explore.v1", "troupe.result.r1.a.b", "troupe.ctl.r1.cancel"}
	sub := []string{"troupe.>", "troupe.evt.>", "troupe.ctl.r1.a.cancel", "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.TROUPE_TASKS.troupe_explore_v1"}
	for _, role := range Roles {
		rc := dialRole(t, e.URL(), paths[role])
		for _, s := range pub {
			rc.refusedPub(t, s)
		}
		for _, s := range sub {
			rc.refusedSub(t, s)
		}
	}
}

// The revocation of a node's credentials, pushed to the server, closes
// that node's connection (before the push is answered) and refuses it
// from then on; another node goes on.
func TestRevokeClosesAndRefuses(t *testing.T) {
	e, a, paths := authServerFor(t, DefaultPrefix)
	other, err := a.IssueNode("node-2", nil)
	if err != nil {
		t.Fatal(err)
	}
	conns := roleConns(t, e, map[Role]string{RoleRequester: paths[RoleRequester], RoleNode: paths[RoleNode], RoleWatcher: other})
	if err := conns(RoleRequester).EnsureStreams(t.Context(), StreamLimits{}); err != nil {
		t.Fatal(err)
	}
	revoked, kept := conns(RoleNode), conns(RoleWatcher) // node-1, node-2
	key := userKey(t, paths[RoleNode])
	held, err := os.ReadFile(paths[RoleNode])
	if err != nil {
		t.Fatal(err)
	}
	r, err := a.Revoke(FirstNode)
	if err != nil || r.Key != key {
		t.Fatalf("revoke: %+v %v", r, err)
	}

	if err := a.PushAccount(t.Context(), ConnectOptions{URLs: e.URL()}); err != nil {
		t.Fatalf("push: %v", err)
	}
	// The server closed it before it answered the push.
	cz, err := e.srv.Connz(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cz.Conns {
		if c.AuthorizedUser == key {
			t.Errorf("the revoked node is still connected: %+v", c)
		}
	}
	select {
	case <-revoked.Closed():
		if err := revoked.Err(); err == nil || !strings.Contains(strings.ToLower(err.Error()), "revoked") && !strings.Contains(strings.ToLower(err.Error()), "authorization") {
			t.Errorf("closed with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the revoked node's connection did not close for good (status %v, last error %v)", revoked.NATS().Status(), revoked.Err())
	}
	if _, err := Connect(t.Context(), ConnectOptions{URLs: e.URL(), Creds: held}, zerolog.Nop()); err == nil ||
		!strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Fatalf("the revoked node connecting again: %v", err)
	}
	kv, err := kept.JetStream().KeyValue(t.Context(), NodesBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(t.Context(), "node-2", []byte(`{}`)); err != nil {
		t.Fatalf("the other node after the revocation: %v", err)
	}
	// A restart keeps it revoked: the account is signed with it.
	again, err := OpenAuth(a.Dir())
	if err != nil {
		t.Fatal(err)
	}
	ac, err := jwt.DecodeAccountClaims(again.accountJWT)
	if err != nil || !ac.Revocations.IsRevoked(key, time.Now().Add(-time.Minute)) {
		t.Fatalf("the account signed again does not revoke %s: %v", key, err)
	}
}
