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

// TestRolesAgainstAnOutsidePeer runs a swarm with a credential per role,
// on `orchestrator serve` and on a Debian nats-server configured from
// `orchestrator auth init`: while remote agents hold their tasks, an
// outside peer (the npm nats client) holding the node's file, then the
// watcher's, tries each forgery; the server refuses every one with a
// permissions violation and the run ends as it would have.
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
		serve.waitStderr("--creds "+bus.CredsPath(dir, bus.RoleNode), 10*time.Second)
		for _, p := range []string{dir, bus.CredsPath(dir, bus.RoleNode), bus.CredsPath(dir, bus.RoleRequester), bus.CredsPath(dir, bus.RoleWatcher)} {
			st, err := os.Stat(p)
			must(t, err)
			if want := map[bool]os.FileMode{true: 0o700, false: 0o600}[st.IsDir()]; st.Mode().Perm() != want {
				t.Errorf("%s: mode %v, want %v", p, st.Mode().Perm(), want)
			}
		}
		rolesSwarm(t, env, url, dir)
	})
	t.Run("external", func(t *testing.T) {
		path, err := exec.LookPath("nats-server")
		if err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatal("nats-server is not installed (tests/run.sh installs the Debian package)")
			}
			t.Skip("nats-server is not installed (tests/run.sh installs the Debian package)")
		}
		dir := filepath.Join(t.TempDir(), "auth")
		if code := start(t, bin.orchestrator, nil, "auth", "init", dir).wait(30 * time.Second); code != 0 {
			t.Fatalf("auth init: exit %d", code)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		must(t, err)
		port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
		l.Close()
		conf := filepath.Join(dir, "nats.conf")
		must(t, os.WriteFile(conf, []byte(fmt.Sprintf("listen: 127.0.0.1:%s\njetstream: {store_dir: %q}\ninclude ./%s\n",
			port, t.TempDir(), bus.ServerConfigFile)), 0o600))
		start(t, path, nil, "-c", conf)
		poll(t, 15*time.Second, func() error {
			c, err := net.Dial("tcp", "127.0.0.1:"+port)
			if err == nil {
				c.Close()
			}
			return err
		})
		rolesSwarm(t, env, "nats://127.0.0.1:"+port, dir)
	})
}

func rolesSwarm(t *testing.T, env []string, url, dir string) {
	creds := func(r bus.Role) string { return bus.CredsPath(dir, r) }
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
	node := start(t, bin.node, modelEnv(srv), "--nats", url, "--creds", creds(bus.RoleNode), "--workspace", repo(t, ""), "--slots", "4")
	node.waitStderr(" ready", 30*time.Second)
	col := collect(t, url, creds(bus.RoleWatcher))
	run := start(t, bin.orchestrator, modelEnv(srv), "run", "--nats", url, "--creds", creds(bus.RoleRequester),
		"--workspace", repo(t, ""), "--json", "--placement", "explore=remote", "find main")
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

	p, a := bus.DefaultPrefix, agents[0]
	forNode := []string{
		bus.TaskSubject(p, "explore", messages.ProtocolVersion),                     // a forged task
		bus.CtlSubject(p, runID, "", "cancel"),                                      // cancel the run
		bus.CtlSubject(p, runID, a, "cancel"),                                       // cancel one agent
		bus.CtlSubject(p, runID, a, "input"),                                        // steer it
		bus.EventSubject(p, runID, "run", messages.EvtRunFinished),                  // end the run for watchers
		bus.EventSubject(p, runID, a, messages.EvtLLMResponse),                      // an event about a run (the requester's to publish)
		bus.EventSubject(p, "made-up", "x", messages.EvtLLMResponse),                // or about a made-up run
		"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.TROUPE_TASKS.troupe_explore_v1", // fail tasks
		"$JS.API.STREAM.PURGE." + bus.TasksStream,
		"sub:" + bus.BudgetSubject(p, runID, "*"), // answer budget requests
		"sub:" + bus.AskSubject(p, runID, "*"),    // answer approvals
		"sub:" + p + ".task.>",
	}
	forWatcher := append(append([]string(nil), forNode...),
		bus.ResultSubject(p, runID, a, "0123456789abcdef0123456789abcdef"), // a forged result (a guessed tag)
		bus.BudgetSubject(p, runID, "acquire"), bus.BudgetSubject(p, runID, "release"), bus.BudgetSubject(p, runID, "usage"),
		bus.AskSubject(p, runID, a),
		bus.EventSubject(p, runID, a, messages.EvtAgentFinished),
		"$KV."+bus.NodesBucket+".forged",
		"sub:"+p+".ctl.>", "sub:"+p+".result.>")
	for role, ops := range map[bus.Role][]string{bus.RoleNode: forNode, bus.RoleWatcher: forWatcher} {
		refused := peerTries(t, env, url, creds(role), ops...)
		for _, op := range ops {
			if e, ok := refused[op]; !ok || !strings.Contains(e, "PERMISSIONS_VIOLATION") && !strings.Contains(e, "Permissions Violation") {
				t.Errorf("%s: %s was not refused (%q)", role, op, e)
			}
		}
	}
	// And what each role does do still works for the peer: a node's own
	// lifecycle event, and a batch of events sent to a run's requester
	// (which refuses this one: it proves no delivery).
	if refused := peerTries(t, env, url, creds(bus.RoleNode), bus.EventSubject(p, "nodes", "x", messages.EvtNodeJoined),
		bus.CtlSubject(p, runID, a, "events")); len(refused) != 0 {
		t.Errorf("node: refused %v", refused)
	}

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
}
