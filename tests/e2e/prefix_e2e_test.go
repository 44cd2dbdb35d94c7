package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
)

// defaultPrefixRequester connects a requester of the default prefix from
// the same account as the auth folder dir (a copy of its keys, signed for
// troupe): another deployment sharing the server.
func defaultPrefixRequester(t *testing.T, url, dir string) *bus.Conn {
	t.Helper()
	copyDir := filepath.Join(t.TempDir(), "troupe-creds")
	must(t, os.MkdirAll(copyDir, 0o700))
	for _, f := range []string{"operator.nk", "account.nk", "system.nk"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		must(t, err)
		must(t, os.WriteFile(filepath.Join(copyDir, f), b, 0o600))
	}
	a, _, err := bus.LoadAuth(copyDir, bus.DefaultPrefix)
	must(t, err)
	creds, err := a.Creds(bus.RoleRequester)
	must(t, err)
	c, err := bus.Connect(t.Context(), bus.ConnectOptions{URLs: url, Creds: creds}, zerolog.Nop())
	must(t, err)
	t.Cleanup(c.Close)
	return c
}

// nats.prefix alpha with credentials, all through serve: the node, the
// run and the watcher of alpha work, and alpha's users (each role's) can
// read nothing of the default prefix's streams and subjects on the same
// server.
func TestPrefixedDeploymentWithCredentials(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	env := natsPeerEnv(t)
	cfg := filepath.Join(t.TempDir(), "alpha.yaml")
	must(t, os.WriteFile(cfg, []byte("nats:\n  prefix: alpha\n"), 0o644))
	store := t.TempDir()
	serve := start(t, bin.orchestrator, nil, "serve", "--listen", "127.0.0.1:0", "--store", store, "--config", cfg)
	url := serve.firstLine(30 * time.Second)
	dir := filepath.Join(store, "creds")
	serve.waitStderr("--creds "+firstNodeCreds(dir), 10*time.Second)

	// The default prefix's deployment on the same server, with an event.
	troupe := defaultPrefixRequester(t, url, dir)
	must(t, troupe.EnsureStreams(t.Context(), bus.StreamLimits{}))
	ev, err := messages.NewEvent("r0", "a", messages.EvtAgentStarted, 1, map[string]any{"kind": "explore"})
	must(t, err)
	pub, err := troupe.NewPublisher(bus.PublisherOptions{Log: zerolog.Nop()})
	must(t, err)
	pub.Emit(ev)
	must(t, pub.Close(t.Context()))

	srv := fanout(3)
	defer srv.Close()
	node := start(t, bin.node, modelEnv(srv), "--nats", url, "--creds", firstNodeCreds(dir), "--config", cfg, "--workspace", repo(t, ""), "--slots", "4")
	node.waitStderr(" ready", 30*time.Second)
	alpha, err := bus.Connect(t.Context(), bus.ConnectOptions{URLs: url, CredsFile: bus.CredsPath(dir, bus.RoleWatcher), Prefix: "alpha"}, zerolog.Nop())
	must(t, err)
	defer alpha.Close()
	es, err := alpha.Events(t.Context(), bus.WatchOptions{FromStart: true})
	must(t, err)
	var mu sync.Mutex
	var evs []messages.Event
	go func() {
		for d := range es.C {
			mu.Lock()
			evs = append(evs, d.Event)
			mu.Unlock()
		}
	}()
	run := start(t, bin.orchestrator, modelEnv(srv), "run", "--nats", url, "--creds", bus.CredsPath(dir, bus.RoleRequester), "--config", cfg,
		"--workspace", repo(t, ""), "--json", "--placement", "explore=remote", "find main")
	res := runJSON(t, run)
	if res.Status != "completed" {
		t.Fatalf("alpha's run: %+v\n%s", res, run.errs())
	}
	watch := start(t, bin.orchestrator, []string{"NO_COLOR=1"}, "watch", "--nats", url, "--creds", bus.CredsPath(dir, bus.RoleWatcher),
		"--config", cfg, "--run", res.Run, "--from-start", "--json")
	if code := watch.wait(time.Minute); code != 0 || strings.Count(watch.out(), `"type":"run.finished"`) != 1 {
		t.Errorf("alpha's watch: exit %d\n%s\n%s", code, watch.out(), watch.errs())
	}
	poll(t, 30*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		remote := 0
		for _, e := range evs {
			if e.Run == res.Run && e.Type == messages.EvtAgentFinished && e.Node == bus.FirstNode {
				remote++
			}
		}
		if remote != 3 {
			return fmt.Errorf("%d of alpha's agents finished on node-1, want 3", remote)
		}
		return nil
	})

	// Nothing of troupe's for alpha's users.
	ops := []string{"$JS.API.STREAM.INFO.TROUPE_EVENTS", "$JS.API.STREAM.MSG.GET.TROUPE_EVENTS",
		"$JS.API.DIRECT.GET.TROUPE_EVENTS.troupe.evt.r0.a.agent.started", "$JS.API.CONSUMER.CREATE.TROUPE_EVENTS.snoop.troupe.evt.r0.a.agent.started",
		"$JS.API.STREAM.INFO.TROUPE_TASKS", "$JS.API.CONSUMER.MSG.NEXT.TROUPE_TASKS.troupe_explore_v1", "$JS.API.STREAM.MSG.GET.TROUPE_RESULTS",
		"$JS.API.DIRECT.GET.KV_troupe_nodes", "$JS.API.STREAM.INFO.OBJ_troupe_snapshots", "$JS.API.STREAM.PURGE.OBJ_troupe_artifacts",
		"$KV.troupe_runs.r0", "troupe.evt.r0.a.agent.finished", "troupe.task.explore.v1",
		"sub:troupe.>", "sub:troupe.evt.>", "sub:$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.TROUPE_TASKS.troupe_explore_v1"}
	for _, f := range []string{bus.CredsPath(dir, bus.RoleRequester), firstNodeCreds(dir), bus.CredsPath(dir, bus.RoleWatcher)} {
		refused := peerTries(t, env, url, f, ops...)
		for _, op := range ops {
			if e, ok := refused[op]; !ok || !strings.Contains(e, "PERMISSIONS_VIOLATION") && !strings.Contains(e, "Permissions Violation") {
				t.Errorf("%s: %s was not refused (%q)", filepath.Base(f), op, e)
			}
		}
	}
}
