package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/budget"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/internal/peer"
	"github.com/troupe-ai/troupe/internal/testport"
	"github.com/troupe-ai/troupe/messages"
)

// A run's orchestrator and its nodes stop and start again on one prefix,
// the hub keeping all they left behind (queue, consumers, registry,
// results, the streams' duplicate windows), within minutes: every task a
// new life of the run queues is taken by the new nodes and its result
// reaches that life. The run is resumed twice before any node is back
// (each resume queues its unfinished tasks again), and then named again by
// a requester without its records, whose tasks and results carry the same
// names as the first life's: none of them may be taken for one already
// queued or stored.
func TestRunAndNodesRestartOnTheSamePrefix(t *testing.T) {
	t.Run("embedded", func(t *testing.T) { testRestartOnTheSamePrefix(t, natsServer(t).ClientURL()) })
	t.Run("external", func(t *testing.T) { testRestartOnTheSamePrefix(t, externalNATS(t)) })
}

func testRestartOnTheSamePrefix(t *testing.T, url string) {
	const prefix, run = "again", "rerun"
	srv := fanoutScript(0, false)
	defer srv.Close()
	conn := func(name string) *bus.Conn {
		nc, err := nats.Connect(url, nats.Name(name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		c, err := bus.Wrap(nc, prefix)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	startNodes := func(gen int) []*Node {
		var nodes []*Node
		for _, id := range []string{"n1", "n2"} { // a restarted node process keeps its ID
			nodes = append(nodes, startNodeWith(t, NodeOptions{Bus: conn(fmt.Sprintf("%s gen %d", id, gen)), ID: id, Name: id,
				Kinds: []string{"explore"}, Slots: 4,
				Agent: actors.Options{Workspace: workspace(t), Client: modelClient(t, srv),
					Models: actors.Models{Default: "big", Cheap: "small"}, Log: zerolog.Nop()},
				Log: zerolog.Nop()}))
		}
		return nodes
	}
	records := filepath.Join(t.TempDir(), "remote", run+".tasks.jsonl")
	life := 0
	var lastSeq uint64         // the queue's last sequence when the life started
	priors := map[string]int{} // by agent: the highest prior an earlier life queued it with
	var recorded int64         // the records' size when the life started
	tasks := conn("inspector").JetStream()
	// checkQueueings checks the queueings the life recorded: each one is
	// a message of its own (a sequence past the queue's when the life
	// began, not an earlier life's taken for a duplicate), counting its
	// attempts past every earlier life's queueing of the task (whose
	// copies a node may still hold).
	checkQueueings := func(records string) {
		t.Helper()
		b, err := os.ReadFile(records)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		for _, line := range strings.Split(strings.TrimSpace(string(b[recorded:])), "\n") {
			var rec taskRecord
			if line == "" || json.Unmarshal([]byte(line), &rec) != nil || rec.Seq == 0 {
				continue
			}
			if rec.Seq <= lastSeq {
				t.Errorf("life %d: %s queued as sequence %d, not past the queue's %d: an earlier message taken for it", life, rec.Agent, rec.Seq, lastSeq)
			}
			if p, ok := priors[rec.Agent]; ok && rec.Prior <= p {
				t.Errorf("life %d: %s queued with prior %d, not past an earlier life's %d", life, rec.Agent, rec.Prior, p)
			}
			seen[rec.Agent] = max(seen[rec.Agent], rec.Prior)
		}
		for a, p := range seen {
			priors[a] = max(priors[a], p)
		}
	}
	// requester starts a new life of the run: its own connection, its
	// records (or none) and the run's budget.
	requester := func(recs string) *Remote {
		life++
		s, err := tasks.Stream(t.Context(), bus.NamesFor(prefix).Tasks)
		if err == nil {
			lastSeq = s.CachedInfo().State.LastSeq
		}
		recorded = 0
		if st, err := os.Stat(recs); err == nil {
			recorded = st.Size()
		}
		r, err := StartRemote(t.Context(), RemoteOptions{Bus: conn(fmt.Sprintf("requester life %d", life)), Run: run,
			Placement: map[string]string{"explore": PlaceRemote}, Records: recs, Log: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.ServeBudget(budgetActor(t, run, budget.Limits{Tokens: 1_000_000})); err != nil {
			t.Fatal(err)
		}
		return r
	}
	place := func(r *Remote, ids []string) []*remoteChild {
		var cs []*remoteChild
		for _, id := range ids {
			c, err := r.Placer().Place(t.Context(), actors.ChildTask{V: messages.ProtocolVersion, Run: run, ID: id, Parent: "root",
				Kind: "explore", Task: id + ": where is main?", Model: "small"})
			if err != nil {
				t.Fatal(err)
			}
			cs = append(cs, c.(*remoteChild))
		}
		return cs
	}
	// complete has each task answered by a node through r.
	complete := func(r *Remote, ids []string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute) // hang guard
		defer cancel()
		cs := place(r, ids)
		results := make(chan actors.AgentResult, len(cs))
		for _, c := range cs {
			go func() { res, _ := c.Start(ctx); results <- res }()
		}
		for range cs {
			res := <-results
			if res.Status != actors.StatusCompleted || !strings.Contains(res.Text, ": main.go:3") {
				t.Fatalf("life %d: %s: %s %q %s (remote %+v)", life, res.Agent, res.Status, res.Text, res.Err, r.Stats())
			}
		}
		t.Logf("life %d: %+v", life, r.Stats())
	}
	// queueOnly has the tasks queued while no node runs, and the life end
	// (its orchestrator stopped) before any is taken.
	queueOnly := func(r *Remote, ids []string) {
		t.Helper()
		ctx, cancel := context.WithCancel(t.Context())
		cs := place(r, ids)
		done := make(chan struct{}, len(cs))
		for _, c := range cs {
			go func() { _, _ = c.Start(ctx); done <- struct{}{} }()
		}
		checkFor(t, 30*time.Second, func() error {
			for _, c := range cs {
				if c.queued() == 0 {
					return errorf("life %d: %s not queued yet", life, c.task.ID)
				}
			}
			return nil
		})
		r.Close()
		cancel()
		for range cs {
			<-done
		}
		checkQueueings(records)
	}
	first, later := []string{"explore-a", "explore-b", "explore-c"}, []string{"explore-d", "explore-e", "explore-f"}

	nodes := startNodes(1)
	r := requester(records)
	complete(r, first)
	r.Close() // killed: its records stay for a resume
	for _, n := range nodes {
		if err := n.Drain(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	// Resumed twice with no node running: each life queues the unfinished
	// tasks again and stops.
	queueOnly(requester(records), later)
	queueOnly(requester(records), later)
	// The nodes come back, and the run is resumed again.
	startNodes(2)
	r = requester(records)
	complete(r, slices.Concat(first, later)) // the first three taken up from the stored results
	checkQueueings(records)
	if st := r.Stats(); st.Reattached != uint64(len(first)) {
		t.Errorf("resumed: %+v, want the first %d results taken up", st, len(first))
	}
	r.Close()
	// A requester names the run again without its records (its state on
	// another machine): new tasks under the names of the first life's,
	// whose results are stored.
	elsewhere := filepath.Join(t.TempDir(), "remote", run+".tasks.jsonl")
	r = requester(elsewhere)
	complete(r, first)
	checkQueueings(elsewhere)
	r.Close()
}

// externalNATS starts a real nats-server process (the Debian package) with
// JetStream on a free loopback port, stopped at the test's end.
func externalNATS(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		peer.Missing(t, "nats-server", "not installed (tests/run.sh installs the Debian package)")
	}
	port := testport.Free(t)
	cmd := exec.Command(bin, "-a", "127.0.0.1", "-p", strconv.Itoa(port), "-js", "-sd", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() })
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	checkFor(t, 15*time.Second, func() error {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		return c.Close()
	})
	return "nats://" + addr
}
