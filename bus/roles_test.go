package bus

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/messages"
)

// authServer starts an embedded server in operator mode with fresh key
// material and writes the creds files; it returns the server and the
// creds paths (the node's: the first node's own, node-1).
func authServer(t testing.TB) (*Embedded, map[Role]string) {
	t.Helper()
	e, _, paths := authServerFor(t, DefaultPrefix)
	return e, paths
}

// authServerFor is authServer for prefix, with the key material.
func authServerFor(t testing.TB, prefix string) (*Embedded, *Auth, map[Role]string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "creds")
	a, paths, err := InitAuthDir(dir, prefix)
	if err != nil {
		t.Fatal(err)
	}
	paths[RoleNode] = a.NodePath(FirstNode)
	e, err := StartEmbedded(t.Context(), EmbeddedOptions{StoreDir: t.TempDir(), Auth: a}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Shutdown(context.Background()) })
	return e, a, paths
}

// roleClient is a raw nats.go client holding one creds file; violations
// collects the permission errors the server sends it.
type roleClient struct {
	nc         *nats.Conn
	violations chan error
}

func dialRole(t testing.TB, url, creds string) *roleClient {
	t.Helper()
	rc := &roleClient{violations: make(chan error, 64)}
	nc, err := nats.Connect(url, nats.UserCredentials(creds), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		rc.violations <- err
	}))
	if err != nil {
		t.Fatalf("connect with %s: %v", creds, err)
	}
	t.Cleanup(nc.Close)
	rc.nc = nc
	return rc
}

// refusedPub publishes on subj and waits for the server's permissions
// violation naming it.
func (rc *roleClient) refusedPub(t testing.TB, subj string) {
	t.Helper()
	if err := rc.nc.Publish(subj, []byte(`{}`)); err != nil {
		t.Fatalf("publish %s: %v", subj, err)
	}
	rc.expectViolation(t, "publish", subj)
}

// refusedSub subscribes to subj and waits for the violation.
func (rc *roleClient) refusedSub(t testing.TB, subj string) {
	t.Helper()
	sub, err := rc.nc.SubscribeSync(subj)
	if err != nil {
		t.Fatalf("subscribe %s: %v", subj, err)
	}
	defer sub.Unsubscribe()
	rc.expectViolation(t, "subscription", subj)
}

func (rc *roleClient) expectViolation(t testing.TB, what, subj string) {
	t.Helper()
	if err := rc.nc.FlushTimeout(5 * time.Second); err != nil {
		t.Fatalf("flush after %s %s: %v", what, subj, err)
	}
	select {
	case err := <-rc.violations:
		msg := strings.ToLower(err.Error())
		if !strings.Contains(msg, "permissions violation") || !strings.Contains(msg, what) || !strings.Contains(err.Error(), subj) {
			t.Fatalf("%s %s: want a permissions violation naming it, got %v", what, subj, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s %s: the server did not refuse it", what, subj)
	}
}

func TestRolesServerRefusesForbiddenSubjects(t *testing.T) {
	e, paths := authServer(t)
	req, err := Connect(t.Context(), ConnectOptions{URLs: e.URL(), CredsFile: paths[RoleRequester]}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer req.Close()
	if err := req.EnsureStreams(t.Context(), StreamLimits{}); err != nil {
		t.Fatalf("the requester creates the streams: %v", err)
	}
	forbidden := map[Role]struct{ pub, sub []string }{
		RoleNode: {
			pub: []string{"troupe.task.explore.v1", "troupe.ctl.r1.cancel", "troupe.ctl.r1.explore-1.cancel",
				"troupe.ctl.r1.explore-1.input", "troupe.evt.r1.root.run.finished",
				// No event about a run: a node's go to the run's requester.
				"troupe.evt.r1.explore-1.llm.response", "troupe.evt.made-up.explore-1.agent.started",
				"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.TROUPE_TASKS.troupe_explore_v1",
				"$JS.API.STREAM.DELETE.TROUPE_EVENTS", "$JS.API.STREAM.PURGE.TROUPE_TASKS", "_INBOX.x", "troupe.rate.v1.frozen"},
			sub: []string{"troupe.budget.r1.acquire", "troupe.ask.r1.root", "troupe.task.>", "troupe.evt.>", "$JS.EVENT.>",
				// A node never owns the hub's rate limits, nor speaks for the owner.
				"troupe.rate.v1.lease", "troupe.rate.v1.report", "troupe.rate.>"},
		},
		RoleWatcher: {
			pub: []string{"troupe.task.explore.v1", "troupe.ctl.r1.cancel", "troupe.evt.r1.root.run.finished",
				"troupe.evt.r1.explore-1.agent.finished", "troupe.result.r1.explore-1", "troupe.result.r1.explore-1.0123", "troupe.budget.r1.acquire",
				"troupe.budget.r1.release", "troupe.budget.r1.usage", "troupe.ask.r1.root", "troupe.ctl.r1.a.started",
				"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.TROUPE_TASKS.troupe_explore_v1", "$KV.troupe_nodes.n1",
				"$JS.API.CONSUMER.MSG.NEXT.TROUPE_TASKS.troupe_explore_v1", "$JS.ACK.TROUPE_TASKS.x.1.1.1.1.1",
				"troupe.rate.v1.lease", "troupe.rate.v1.report", "troupe.rate.v1.frozen"},
			sub: []string{"troupe.budget.r1.acquire", "troupe.ask.r1.root", "troupe.ctl.>", "troupe.result.>", "$JS.EVENT.>"},
		},
	}
	for role, f := range forbidden {
		rc := dialRole(t, e.URL(), paths[role])
		for _, s := range f.pub {
			rc.refusedPub(t, s)
		}
		for _, s := range f.sub {
			rc.refusedSub(t, s)
		}
	}
}

// roleConns connects to e with the credentials of a role, for the test.
func roleConns(t *testing.T, e *Embedded, paths map[Role]string) func(Role) *Conn {
	return roleConnsFor(t, e, paths, DefaultPrefix)
}

// roleConnsFor is roleConns for prefix.
func roleConnsFor(t *testing.T, e *Embedded, paths map[Role]string, prefix string) func(Role) *Conn {
	return func(role Role) *Conn {
		c, err := Connect(t.Context(), ConnectOptions{URLs: e.URL(), CredsFile: paths[role], Name: string(role), Prefix: prefix}, zerolog.Nop())
		if err != nil {
			t.Fatalf("%s: %v", role, err)
		}
		t.Cleanup(c.Close)
		return c
	}
}

// Each role does what it does, with any prefix: the grants name the
// prefix's own streams, buckets and subjects.
func TestRolesAllowWhatEachRoleDoes(t *testing.T) {
	for _, prefix := range []string{DefaultPrefix, "alpha"} {
		t.Run(prefix, func(t *testing.T) { rolesAllow(t, prefix) })
	}
}

func rolesAllow(t *testing.T, p string) {
	e, _, paths := authServerFor(t, p)
	ctx := t.Context()
	conn := roleConnsFor(t, e, paths, p)
	names := NamesFor(p)
	node := conn(RoleNode)
	if node.MayCreateStreams() {
		t.Fatal("a node's credentials may create streams")
	}
	// A node starting first waits for the streams; the requester makes them.
	awaited := make(chan error, 1)
	go func() { awaited <- node.AwaitStreams(ctx, zerolog.Nop()) }()
	req, watcher := conn(RoleRequester), conn(RoleWatcher)
	if err := req.EnsureStreams(ctx, StreamLimits{}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-awaited:
		if err != nil {
			t.Fatalf("the node waiting for the streams: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the node did not see the streams the requester made")
	}
	// The node's durable consumer, a task from the requester, the pull and the ack.
	cons, err := node.JetStream().CreateOrUpdateConsumer(ctx, names.Tasks, jetstream.ConsumerConfig{Durable: ConsumerName(p, "explore", 1),
		FilterSubject: TaskSubject(p, "explore", 1), AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatalf("node consumer: %v", err)
	}
	if _, err := req.JetStream().Publish(ctx, TaskSubject(p, "explore", 1), []byte(`{}`)); err != nil {
		t.Fatalf("requester task: %v", err)
	}
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		if err := m.InProgress(); err != nil {
			t.Fatal(err)
		}
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatalf("node ack: %v", err)
		}
	}
	if batch.Error() != nil {
		t.Fatal(batch.Error())
	}
	// A result, the registry, an artifact.
	if _, err := node.JetStream().Publish(ctx, ResultSubject(p, "r1", "explore-1", "0123"), []byte(`{}`)); err != nil {
		t.Fatalf("node result: %v", err)
	}
	kv, err := node.JetStream().KeyValue(ctx, names.Nodes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, FirstNode, []byte(`{}`)); err != nil {
		t.Fatalf("node registry: %v", err)
	}
	arts := node.Artifacts("r1")
	defer arts.Close()
	if _, err := arts.Put(ctx, "out.txt", strings.NewReader("hello")); err != nil {
		t.Fatalf("node artifact: %v", err)
	}
	if err := arts.Flush(ctx); err != nil || arts.Failed() != 0 {
		t.Fatalf("node artifact upload: %v (failed %d)", err, arts.Failed())
	}
	// Budget: the node asks, the requester answers.
	sub, err := req.NATS().Subscribe(BudgetSubject(p, "r1", "*"), func(m *nats.Msg) { _ = m.Respond([]byte("granted")) })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	_ = req.NATS().Flush()
	if m, err := node.NATS().Request(BudgetSubject(p, "r1", "acquire"), nil, 5*time.Second); err != nil || string(m.Data) != "granted" {
		t.Fatalf("budget request: %v", err)
	}
	// Status: the requester asks, the node answers.
	nsub, err := node.NATS().Subscribe(CtlSubject(p, "*", "*", "status"), func(m *nats.Msg) { _ = m.Respond([]byte("busy")) })
	if err != nil {
		t.Fatal(err)
	}
	defer nsub.Unsubscribe()
	_ = node.NATS().Flush()
	if m, err := req.NATS().Request(CtlSubject(p, "r1", "explore-1", "status"), nil, 5*time.Second); err != nil || string(m.Data) != "busy" {
		t.Fatalf("status request: %v", err)
	}
	// Approval: the node's agent asks, the requester (watch --interactive) answers.
	ans, err := req.Answer("r1", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer ans.Stop()
	go func() {
		if q, ok := <-ans.C; ok {
			_ = q.Answer(true, "test")
		}
	}()
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if ok, err := node.NewApprover(zerolog.Nop()).Approve(actx, messages.AskRequest{V: messages.ProtocolVersion, ID: "q1", Run: "r1",
		Agent: "explore-1", Kind: "explore", Tool: "shell", Question: "run it?"}); err != nil || !ok {
		t.Fatalf("approval: %v %v", ok, err)
	}
	// A node sends a run's events to its requester, which answers.
	esub, err := req.NATS().Subscribe(CtlSubject(p, "r1", "*", "events"), func(m *nats.Msg) { _ = m.Respond([]byte("taken")) })
	if err != nil {
		t.Fatal(err)
	}
	defer esub.Unsubscribe()
	_ = req.NATS().Flush()
	if m, err := node.NATS().Request(CtlSubject(p, "r1", "explore-1", "events"), nil, 5*time.Second); err != nil || string(m.Data) != "taken" {
		t.Fatalf("events relay: %v", err)
	}
	// The watcher reads the node's own lifecycle events and the registry.
	pub, err := node.NewPublisher(PublisherOptions{Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	pub.Emit(event(t, "nodes", "n1", 1))
	if err := pub.Close(ctx); err != nil || pub.Dropped() != 0 {
		t.Fatalf("node lifecycle event: %v (dropped %d)", err, pub.Dropped())
	}
	wkv, err := watcher.JetStream().KeyValue(ctx, names.Nodes)
	if err != nil {
		t.Fatalf("watcher registry: %v", err)
	}
	if _, err := wkv.Get(ctx, FirstNode); err != nil {
		t.Fatalf("watcher registry get: %v", err)
	}
	w, err := wkv.WatchAll(ctx)
	if err != nil {
		t.Fatalf("watcher registry watch: %v", err)
	}
	defer w.Stop()
	es, err := watcher.Events(ctx, WatchOptions{Run: "nodes", FromStart: true, Log: zerolog.Nop()})
	if err != nil {
		t.Fatalf("watcher events: %v", err)
	}
	defer es.Stop()
	select {
	case d := <-es.C:
		if d.Event.Agent != "n1" {
			t.Fatalf("watcher got %+v", d.Event)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watcher did not get the node's event")
	}
}

func TestAuthDirKeepsIdentityAcrossRestarts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "creds")
	a1, p1, err := InitAuthDir(dir, DefaultPrefix)
	if err != nil {
		t.Fatal(err)
	}
	p1[RoleNode] = a1.NodePath(FirstNode)
	before, _ := os.ReadFile(p1[RoleNode])
	a2, p2, err := InitAuthDir(dir, DefaultPrefix)
	if err != nil {
		t.Fatal(err)
	}
	if _, shared := p2[RoleNode]; shared {
		t.Fatal("a new auth folder has a shared node.creds")
	}
	p2[RoleNode] = a2.NodePath(FirstNode)
	if a1.ServerConfig() == "" || p1[RoleNode] != p2[RoleNode] {
		t.Fatal("paths differ")
	}
	k1, _ := a1.account.PublicKey()
	k2, _ := a2.account.PublicKey()
	if k1 != k2 {
		t.Fatal("the account key changed across a restart")
	}
	after, _ := os.ReadFile(p2[RoleNode])
	u1, _ := existingUserFrom(before)
	u2, _ := existingUserFrom(after)
	if u1 == "" || u1 != u2 {
		t.Fatal("the node's user key changed across a restart")
	}
	for _, p := range []string{dir, p2[RoleNode], p2[RoleWatcher], p2[RoleRequester], filepath.Join(dir, accountSeedFile)} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		want := os.FileMode(0o600)
		if st.IsDir() {
			want = 0o700
		}
		if st.Mode().Perm() != want {
			t.Fatalf("%s is %v, want %v", p, st.Mode().Perm(), want)
		}
	}
	// An old creds file still connects to a server of the restarted material.
	e, err := StartEmbedded(t.Context(), EmbeddedOptions{StoreDir: t.TempDir(), Auth: a2}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(context.Background())
	old := filepath.Join(t.TempDir(), "old.creds")
	if err := os.WriteFile(old, before, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Connect(t.Context(), ConnectOptions{URLs: e.URL(), CredsFile: old}, zerolog.Nop())
	if err != nil {
		t.Fatalf("a node's creds from before the restart: %v", err)
	}
	c.Close()
	if _, err := Connect(t.Context(), ConnectOptions{URLs: e.URL()}, zerolog.Nop()); err == nil {
		t.Fatal("connected without credentials")
	}
}

func existingUserFrom(creds []byte) (string, error) {
	kp, err := jwt.ParseDecoratedUserNKey(creds)
	if err != nil {
		return "", err
	}
	return kp.PublicKey()
}
