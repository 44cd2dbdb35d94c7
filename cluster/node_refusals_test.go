package cluster

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/budget"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/internal/peer"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// A node of another protocol version, beside a good one, never receives
// the run's tasks: every task runs on the good node on its first attempt,
// so the other node spends none of their delivery attempts.
func TestOtherVersionNodeTakesNothing(t *testing.T) {
	s := natsServer(t)
	srv := blockingScript(6, func(string, int) llmtest.Turn { return llmtest.Turn{Text: "main.go:3"} })
	defer srv.Close()
	oldOpts := nodeOpts(t, s, srv, "old")
	oldOpts.Protocol, oldOpts.Slots, oldOpts.MaxDeliver = messages.ProtocolVersion+1, 8, 1
	old := startNodeWith(t, oldOpts)
	run := startTeam(t, s, srv, "rv", nil)
	// The other-version node is up and pulling before the good one exists.
	checkFor(t, 10*time.Second, func() error {
		if len(run.remote.Nodes()) != 1 {
			return fmt.Errorf("%d nodes", len(run.remote.Nodes()))
		}
		return nil
	})
	good := nodeOpts(t, s, srv, "good")
	good.MaxDeliver = 1 // one attempt each: a delivery to the other node would fail the task
	g := startNodeWith(t, good)
	res, err := run.wait(t)
	if err != nil || res.Text != "all answered" {
		t.Fatalf("run %+v %v", res, err)
	}
	for _, r := range rootToolResults(srv) {
		if !strings.Contains(r, "Status: completed") {
			t.Errorf("a task did not complete: %s", r)
		}
	}
	if st := old.Stats(); st != (NodeStats{}) {
		t.Errorf("the other-version node handled tasks: %+v", st)
	}
	if st := g.Stats(); st.Completed != 6 || st.Redelivered != 0 {
		t.Errorf("good node %+v", st)
	}
	// A task of another version published on this version's subject
	// (by hand: no orchestrator does) is refused for good with a reason
	// its parent can read, not retried.
	js, _ := jetstream.New(connect(t, s))
	bad, _ := jsonTask(messages.Task{V: 99, Run: "rv2", ID: "explore-x", Parent: "root", Kind: "explore", Task: "t"})
	if _, err := js.Publish(t.Context(), TaskSubject(DefaultPrefix, "explore", messages.ProtocolVersion), bad); err != nil {
		t.Fatal(err)
	}
	checkFor(t, 10*time.Second, func() error {
		if g.Stats().Version != 1 {
			return fmt.Errorf("good node %+v", g.Stats())
		}
		return nil
	})
}

// A node serving another repository refuses the task and says why; the
// task runs on a node that serves the orchestrator's repository.
func TestWorkspaceMismatchRefused(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		peer.Missing(t, "git", "not installed")
	}
	s := natsServer(t)
	srv := blockingScript(1, func(string, int) llmtest.Turn { return llmtest.Turn{Text: "main.go:3"} })
	defer srv.Close()
	repoA, repoB := gitRepo(t, "a"), gitRepo(t, "b")
	cloneA := filepath.Join(t.TempDir(), "clone")
	if out, err := exec.Command("git", "clone", "-q", repoA, cloneA).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v %s", err, out)
	}
	if WorkspaceKey(repoA) == "" || WorkspaceKey(repoA) != WorkspaceKey(cloneA) || WorkspaceKey(repoA) == WorkspaceKey(repoB) {
		t.Fatalf("keys: a %q, its clone %q, b %q", WorkspaceKey(repoA), WorkspaceKey(cloneA), WorkspaceKey(repoB))
	}
	if WorkspaceKey(t.TempDir()) != "" {
		t.Error("a directory outside git has a key")
	}
	wrong := nodeOpts(t, s, srv, "wrong")
	wrong.Agent.Workspace, wrong.AckWait = repoB, time.Hour
	w := startNodeWith(t, wrong)
	nc := connect(t, s)
	remote, err := StartRemote(t.Context(), RemoteOptions{Bus: wrap(t, nc), Run: "rw2", Workspace: repoA,
		Placement: map[string]string{"explore": PlaceRemote}})
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	if err := remote.ServeBudget(budgetActor(t, "rw2", budget.Limits{Tokens: 1_000_000})); err != nil {
		t.Fatal(err)
	}
	child, _ := remote.Placer().Place(t.Context(), actors.ChildTask{V: 1, Run: "rw2", ID: "explore-w", Parent: "root",
		Kind: "explore", Task: "q0: where is main?", Model: "small"})
	done := make(chan actors.AgentResult, 1)
	go func() { r, _ := child.Start(t.Context()); done <- r }()
	checkFor(t, 30*time.Second, func() error {
		if w.Stats().Workspace == 0 {
			return fmt.Errorf("wrong node %+v", w.Stats())
		}
		return nil
	})
	right := nodeOpts(t, s, srv, "right")
	right.Agent.Workspace, right.AckWait = cloneA, time.Hour
	r := startNodeWith(t, right)
	res := <-done
	checkFor(t, 10*time.Second, func() error { // the node counts it once acked
		if r.Stats().Completed != 1 {
			return fmt.Errorf("right node %+v", r.Stats())
		}
		return nil
	})
	if res.Status != actors.StatusCompleted || r.Stats().Completed != 1 || w.Stats().Completed != 0 {
		t.Fatalf("result %+v; nodes: right %+v, wrong %+v", res, r.Stats(), w.Stats())
	}
	// The refusal reached the orchestrator with the reason.
	c := child.(*remoteChild)
	c.mu.Lock()
	defer c.mu.Unlock()
	var refused string
	for _, n := range c.notices {
		refused += n.Refused
	}
	if !strings.Contains(refused, "serves another repository") || !strings.Contains(refused, WorkspaceKey(repoB)) {
		t.Errorf("refusal notices %+v", c.notices)
	}
}

// gitRepo makes a repository with one commit of its own.
func gitRepo(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n// "+name+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", name}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	return dir
}

// The orchestrator's limits travel with the task: with max_rounds 2 here,
// the remote agent stops after two rounds although the node's own limit is
// the default 50.
func TestTaskLimitsApplied(t *testing.T) {
	s := natsServer(t)
	grep := llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "grep", Args: json.RawMessage(`{"pattern":"func main"}`)}}}
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{{ToolCalls: delegateCalls(1, false)}, {Text: "done"}}},
		{Match: llmtest.Matcher{Kind: "explore"}, Turns: []llmtest.Turn{grep, grep, grep, {Text: "main.go:3"}}},
	}})
	defer srv.Close()
	n := startNode(t, s, srv, "n1", 1, &recorder{})
	defer n.Drain(t.Context())
	run := startTeam(t, s, srv, "rlim", func(o *actors.Options) {
		o.Settings.MaxRounds = 2
	})
	res, err := run.wait(t)
	if err != nil {
		t.Fatal(err)
	}
	_ = res
	got := rootToolResults(srv)
	if len(got) != 1 || !strings.Contains(got[0], actors.ReasonRoundLimit) {
		t.Errorf("the root got %q, want the child stopped at its round limit", got)
	}
	if reqs := requestsOfKind(srv, "explore"); len(reqs) != 2 {
		t.Errorf("the remote agent made %d model calls, want 2", len(reqs))
	}
}

// Cancelling the run reaches every remote agent at once through the
// run-wide cancel subject: each ends cancelled on its node.
func TestRunCancelReachesRemoteAgents(t *testing.T) {
	s := natsServer(t)
	srv := blockingScript(4, func(string, int) llmtest.Turn {
		return llmtest.Turn{Text: "never", Latency: llmtest.Duration(time.Hour)}
	})
	defer srv.Close()
	ev := &recorder{}
	var nodes []*Node
	for _, id := range []string{"n1", "n2"} {
		o := nodeOpts(t, s, srv, id)
		o.Events = ev
		nodes = append(nodes, startNodeWith(t, o))
	}
	// A watcher on the run-wide subject, as a node has.
	nc := connect(t, s)
	heard := make(chan string, 1)
	sub, err := nc.Subscribe(bus.CtlSubject(DefaultPrefix, "rcan", "", ctlCancel), func(m *natsMsg) { heard <- m.Subject })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	run := startTeam(t, s, srv, "rcan", nil)
	checkFor(t, 30*time.Second, func() error {
		running := 0
		for _, n := range nodes {
			n.mu.Lock()
			running += len(n.running)
			n.mu.Unlock()
		}
		if running != 4 {
			return fmt.Errorf("%d remote agents running", running)
		}
		return nil
	})
	run.team.Cancel()
	select {
	case <-heard:
	case <-time.After(30 * time.Second):
		t.Fatal("nothing was published on the run-wide cancel subject")
	}
	if _, err := run.wait(t); err != nil {
		t.Fatal(err)
	}
	// The root's result can come before the nodes' last events: wait for
	// them (an agent that ends otherwise fails the count for good).
	checkFor(t, 30*time.Second, func() error {
		cancelled, ended := 0, map[string]string{}
		for _, e := range ev.events() {
			switch {
			case e.Run != "rcan" || e.Kind != "explore":
			case e.Type == messages.EvtAgentCancelled:
				cancelled++
				ended[e.Agent] = e.Type
			case e.Type == messages.EvtAgentFinished || e.Type == messages.EvtAgentFailed:
				ended[e.Agent] = e.Type
			}
		}
		if cancelled != 4 {
			return fmt.Errorf("%d remote agents ended cancelled, want 4 (ends: %v)", cancelled, ended)
		}
		return nil
	})
}
