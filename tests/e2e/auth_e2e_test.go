package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
)

// natsPeerEnv is the environment that lets node load the npm nats client
// tests/run.sh installs into tests/.npm; without it the test fails on CI
// and skips elsewhere.
func natsPeerEnv(t *testing.T) []string {
	t.Helper()
	mods, _ := filepath.Abs("../.npm/node_modules")
	_, errNode := exec.LookPath("node")
	_, errPkg := os.Stat(filepath.Join(mods, "nats", "package.json"))
	if errNode != nil || errPkg != nil {
		msg := "the outside peer needs node and the npm nats client in tests/.npm (tests/run.sh installs them)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return append(os.Environ(), "NODE_PATH="+mods)
}

// peerTries has the npm nats client, holding creds, try each operation (a
// subject to publish on, or sub:SUBJECT) and returns whether the server
// refused it, by operation.
func peerTries(t *testing.T, env []string, url, creds string, ops ...string) map[string]string {
	t.Helper()
	cmd := exec.Command("node", append([]string{"testdata/nats_peer.cjs", url, creds}, ops...)...)
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("nats peer: %v\n%s", err, out)
	}
	got := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		var line struct {
			Op      string `json:"op"`
			Refused bool   `json:"refused"`
			Error   string `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("nats peer printed %q: %v", sc.Text(), err)
		}
		if line.Refused {
			got[line.Op] = line.Error
		}
	}
	return got
}

// firstNodeCreds is the creds file of the first node's own identity in an
// auth folder (serve --store, auth init).
func firstNodeCreds(dir string) string { return filepath.Join(dir, "nodes", bus.FirstNode+".creds") }

// orchestratorOK runs the orchestrator with args and returns its stdout,
// failing the test on a non-zero exit.
func orchestratorOK(t *testing.T, args ...string) string {
	t.Helper()
	p := start(t, bin.orchestrator, nil, args...)
	if code := p.wait(60 * time.Second); code != 0 {
		t.Fatalf("orchestrator %s: exit %d\n%s", strings.Join(args, " "), code, p.errs())
	}
	return p.out()
}

// freePort is a loopback port nobody listens on.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// externalServer starts the Debian nats-server on an auth folder's
// server.conf (with its monitoring port) and returns its client URL and
// monitoring URL.
func externalServer(t *testing.T, dir string) (url, monitor string) {
	t.Helper()
	path, err := exec.LookPath("nats-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("nats-server is not installed (tests/run.sh installs the Debian package)")
		}
		t.Skip("nats-server is not installed (tests/run.sh installs the Debian package)")
	}
	port, mport := freePort(t), freePort(t)
	conf := filepath.Join(dir, "nats.conf")
	must(t, os.WriteFile(conf, []byte(fmt.Sprintf("listen: 127.0.0.1:%s\nhttp: 127.0.0.1:%s\njetstream: {store_dir: %q}\ninclude ./%s\n",
		port, mport, t.TempDir(), bus.ServerConfigFile)), 0o600))
	start(t, path, nil, "-c", conf)
	poll(t, 15*time.Second, func() error {
		c, err := net.Dial("tcp", "127.0.0.1:"+port)
		if err == nil {
			c.Close()
		}
		return err
	})
	return "nats://127.0.0.1:" + port, "http://127.0.0.1:" + mport
}

// TestRolesAgainstAnOutsidePeer runs a swarm with a credential per role
// and per node, on `orchestrator serve` and on a Debian nats-server
// configured from `orchestrator auth init`: while remote agents hold
// their tasks (their snapshot fetched, their budget served), a watcher
// subscribed to every inbox and to everything gets nothing, and an
// outside peer (the npm nats client) holding another node's file, then
// the watcher's, tries each forgery; the server refuses every one with a
// permissions violation and the run ends as it would have. Then the node
// is revoked: its connection is closed and refused, and it stops.
func TestRolesAgainstAnOutsidePeer(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	env := natsPeerEnv(t)
	t.Run("serve", func(t *testing.T) {
		store := t.TempDir()
		serve := start(t, bin.orchestrator, nil, "serve", "--listen", "127.0.0.1:0", "--store", store)
		url := serve.firstLine(30 * time.Second)
		dir := filepath.Join(store, "creds")
		serve.waitStderr("--creds "+firstNodeCreds(dir), 10*time.Second)
		for _, p := range []string{dir, firstNodeCreds(dir), bus.CredsPath(dir, bus.RoleRequester), bus.CredsPath(dir, bus.RoleWatcher)} {
			st, err := os.Stat(p)
			must(t, err)
			if want := map[bool]os.FileMode{true: 0o700, false: 0o600}[st.IsDir()]; st.Mode().Perm() != want {
				t.Errorf("%s: mode %v, want %v", p, st.Mode().Perm(), want)
			}
		}
		if _, err := os.Stat(bus.CredsPath(dir, bus.RoleNode)); err == nil {
			t.Error("serve wrote a shared node.creds")
		}
		rolesSwarm(t, env, url, "", dir)
	})
	t.Run("external", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "auth")
		orchestratorOK(t, "auth", "init", dir)
		url, monitor := externalServer(t, dir)
		rolesSwarm(t, env, url, monitor, dir)
	})
}

func rolesSwarm(t *testing.T, env []string, url, monitor, dir string) {
	creds := func(r bus.Role) string { return bus.CredsPath(dir, r) }
	other := strings.TrimSpace(orchestratorOK(t, "auth", "node", "node-2", "--dir", dir))
	gate := make(chan struct{})
	srv := gatedFanoutN(3, gate)
	defer srv.Close()
	defer func() {
		select {
		case <-gate:
		default:
			close(gate)
		}
	}()
	// On a server of auth init, nobody has made the streams yet: the node
	// waits for the run to (its credentials may not).
	node := start(t, bin.node, modelEnv(srv), "--nats", url, "--creds", firstNodeCreds(dir), "--workspace", repo(t, ""), "--slots", "4")
	if monitor != "" {
		node.waitStderr("waiting for troupe's streams", 30*time.Second)
	}
	snoop := snoopInboxes(t, url, creds(bus.RoleWatcher))
	run := start(t, bin.orchestrator, modelEnv(srv), "run", "--nats", url, "--creds", creds(bus.RoleRequester),
		"--workspace", repo(t, ""), "--json", "--placement", "explore=remote", "find main")
	node.waitStderr(" ready", 30*time.Second)
	if !strings.Contains(node.errs(), "node "+bus.FirstNode+" ready") {
		t.Errorf("the node does not take its credentials' name as its ID:\n%s", node.errs())
	}
	col := collect(t, url, creds(bus.RoleWatcher))
	var runID string
	var agents []string
	poll(t, 60*time.Second, func() error {
		agents = agents[:0]
		for _, ev := range col.events() {
			if ev.Type == messages.EvtAgentStarted && ev.Node != "" {
				runID = ev.Run
				agents = append(agents, ev.Agent)
			}
		}
		if len(agents) < 3 {
			return fmt.Errorf("%d remote agents started", len(agents))
		}
		return nil
	})
	watch := start(t, bin.orchestrator, []string{"NO_COLOR=1"}, "watch", "--nats", url, "--creds", creds(bus.RoleWatcher),
		"--run", runID, "--from-start", "--json")
	watch.waitStderr("watching", 30*time.Second)
	forgeries(t, env, url, dir, other, runID, agents[0])

	close(gate)
	res := runJSON(t, run)
	if res.Status != "completed" || res.Text != "all answered" {
		t.Fatalf("run after the forgeries: %+v\n%s", res, run.errs())
	}
	if code := watch.wait(time.Minute); code != 0 || strings.Count(watch.out(), `"type":"run.finished"`) != 1 {
		t.Errorf("watch: exit %d, %d run.finished", code, strings.Count(watch.out(), `"type":"run.finished"`))
	}
	finished := 0
	for _, ev := range col.events() {
		if ev.Run == runID && ev.Type == messages.EvtAgentFinished && ev.Node != "" {
			finished++
		}
	}
	if finished != 3 {
		t.Errorf("%d remote agents finished, want 3", finished)
	}
	snoop.check(t)
	revokeNode(t, url, monitor, dir, node)
}

// forgeries has the outside peer try, with another node's credentials and
// then the watcher's, what neither may do.
func forgeries(t *testing.T, env []string, url, dir, otherNode, runID, a string) {
	p := bus.DefaultPrefix
	nodeKey := userKey(t, firstNodeCreds(dir))
	forNode := []string{
		bus.TaskSubject(p, "explore", messages.ProtocolVersion),                     // a forged task
		bus.CtlSubject(p, runID, "", "cancel"),                                      // cancel the run
		bus.CtlSubject(p, runID, a, "cancel"),                                       // cancel one agent
		bus.CtlSubject(p, runID, a, "input"),                                        // steer it
		bus.EventSubject(p, runID, "run", messages.EvtRunFinished),                  // end the run for watchers
		"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.TROUPE_TASKS.troupe_explore_v1", // fail tasks
		"$JS.API.STREAM.PURGE." + bus.TasksStream,
		"$JS.API.STREAM.PURGE.OBJ_" + bus.ArtifactsBucket, // every run's artifacts
		"$JS.API.STREAM.CREATE." + bus.EventsStream,       // streams are the requester's
		"$JS.API.STREAM.CREATE.KV_" + bus.NodesBucket,
		"$JS.API.STREAM.UPDATE." + bus.ResultsStream,
		"$KV." + bus.NodesBucket + "." + bus.FirstNode,     // another node's registry entry
		"sub:" + bus.BudgetSubject(p, runID, "*"),          // answer budget requests
		"sub:" + bus.AskSubject(p, runID, "*"),             // answer approvals
		"sub:" + bus.CtlSubject(p, runID, "*", "snapshot"), // answer other nodes' snapshot requests
		"sub:" + p + ".task.>",
		"sub:" + bus.InboxPrefix(nodeKey) + ".>", // another node's inbox: its tasks, bundles, budget replies
	}
	inboxes := []string{"sub:_INBOX.>", "sub:_INBOX_*.>", "sub:>"}
	forNode = append(forNode, inboxes...)
	forWatcher := append(append([]string(nil), forNode...),
		bus.ResultSubject(p, runID, a, "0123456789abcdef0123456789abcdef"), // a forged result (a guessed tag)
		bus.BudgetSubject(p, runID, "acquire"), bus.BudgetSubject(p, runID, "release"), bus.BudgetSubject(p, runID, "usage"),
		bus.AskSubject(p, runID, a),
		bus.EventSubject(p, runID, a, messages.EvtAgentFinished),
		"$KV."+bus.NodesBucket+".forged",
		"sub:"+p+".ctl.>", "sub:"+p+".result.>")
	for who, c := range map[string]struct {
		creds string
		ops   []string
	}{"node-2": {otherNode, forNode}, "watcher": {bus.CredsPath(dir, bus.RoleWatcher), forWatcher}} {
		refused := peerTries(t, env, url, c.creds, c.ops...)
		for _, op := range c.ops {
			if e, ok := refused[op]; !ok || !strings.Contains(e, "PERMISSIONS_VIOLATION") && !strings.Contains(e, "Permissions Violation") {
				t.Errorf("%s: %s was not refused (%q)", who, op, e)
			}
		}
	}
	// And what a node does do still works for the peer.
	if refused := peerTries(t, env, url, otherNode, bus.EventSubject(p, "other-run", "x", "agent.started"), "$KV."+bus.NodesBucket+".node-2"); len(refused) != 0 {
		t.Errorf("node: a node's event or own registry entry refused: %v", refused)
	}
}
