package cluster

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/internal/testport"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

// startPersistent starts an embedded JetStream server on port with its
// store in dir; it is shut down at the end of the test unless stopped
// before.
func startPersistent(t *testing.T, port int, dir string) *bus.Embedded {
	t.Helper()
	e, err := bus.StartEmbedded(t.Context(), bus.EmbeddedOptions{Port: port, StoreDir: dir}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Shutdown(context.Background()) })
	return e
}

// dial connects as the node and orchestrator programs do (bus.Connect:
// reconnecting forever).
func dial(t *testing.T, url, name string) *bus.Conn {
	t.Helper()
	c, err := bus.Connect(t.Context(), bus.ConnectOptions{URLs: url, Name: name}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// reconnected waits until c is connected again after at least n
// reconnects.
func reconnected(t *testing.T, c *bus.Conn, n uint64) {
	t.Helper()
	checkFor(t, 60*time.Second, func() error {
		nc := c.NATS()
		if st := nc.Status(); st != nats.CONNECTED || nc.Stats().Reconnects < n {
			return errorf("%s: status %s after %d reconnects", nc.Opts.Name, st, nc.Stats().Reconnects)
		}
		return nil
	})
}

// A node survives its NATS server's restart: after the server is shut
// down and started again on the same port, the node reconnects, heartbeats
// again, and takes and completes a new run's task, whose result reaches
// its parent exactly once. With the same store the node goes on as it
// was; with an empty one (a server restarted without its store) it
// creates its task consumer and the registry again.
func TestNodeSurvivesServerRestart(t *testing.T) {
	t.Run("same store", func(t *testing.T) { testNodeSurvivesServerRestart(t, true) })
	t.Run("store lost", func(t *testing.T) { testNodeSurvivesServerRestart(t, false) })
}

func testNodeSurvivesServerRestart(t *testing.T, keepStore bool) {
	port, dir := testport.Free(t), t.TempDir()
	e := startPersistent(t, port, dir)
	url := e.URL()
	// One explore agent per run; the root's script starts over for the
	// second run (both roots are agent "root").
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Repeat: true, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: json.RawMessage(`{"type":"explore","task":"question 0: where is main?"}`)}}},
			{Text: "all answered"}}},
		{Match: llmtest.Matcher{Kind: "explore"}, Repeat: true, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "grep", Args: json.RawMessage(`{"pattern":"func main"}`)}}},
			{Text: "answer to question 0: main.go:3"}}},
	}})
	defer srv.Close()

	nodeConn := dial(t, url, "node n1")
	n := startNodeWith(t, NodeOptions{Bus: wrap(t, nodeConn.NATS()), ID: "n1", Name: "n1",
		Kinds: []string{"explore"}, Slots: 2,
		Agent: actors.Options{Workspace: workspace(t), Client: modelClient(t, srv),
			Models: actors.Models{Default: "big", Cheap: "small"}, Log: zerolog.Nop()},
		Events: &recorder{}, AckWait: 5 * time.Second, Heartbeat: 200 * time.Millisecond, Log: zerolog.Nop()})
	orch := dial(t, url, "orchestrator")

	// runOnce runs one run whose single explore agent is placed remote,
	// and checks that its one answer reached the root exactly once.
	runOnce := func(run string) {
		t.Helper()
		remote, err := StartRemote(t.Context(), RemoteOptions{Bus: wrap(t, orch.NATS()), Run: run,
			Placement: map[string]string{"explore": PlaceRemote}, Log: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		defer remote.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute) // hang guard
		defer cancel()
		before := len(requestsOfKind(srv, "root"))
		res, err := actors.Run(ctx, actors.Options{Run: run, Workspace: workspace(t), Task: "find main",
			Client: modelClient(t, srv), Models: actors.Models{Default: "big", Cheap: "small"}, Events: &recorder{},
			Settings: actors.Settings{PlanFirst: map[string]bool{"root": false}},
			Placer:   remote.Placer(), OnBudget: remote.ServeBudget, Log: zerolog.Nop()})
		if err != nil || res.Status != actors.StatusCompleted || res.Text != "all answered" {
			t.Fatalf("run %s: %+v %v", run, res.AgentResult, err)
		}
		roots := requestsOfKind(srv, "root")[before:]
		answers := 0
		for _, m := range roots[len(roots)-1].Messages {
			if m.Role == "tool" && strings.Contains(m.Content, ": main.go:3") && strings.Contains(m.Content, "Status: completed") {
				answers++
			}
		}
		if answers != 1 {
			t.Errorf("run %s: %d answers reached the root, want 1", run, answers)
		}
		if st := remote.Stats(); st != (RemoteStats{}) {
			t.Errorf("run %s: dropped results %+v", run, st)
		}
		// The run's one result is in the results stream, from n1.
		s, err := orch.JetStream().Stream(ctx, bus.ResultsStream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(bus.ResultSubject(DefaultPrefix, run, "*", "*")))
		if err != nil {
			t.Fatal(err)
		}
		if len(info.State.Subjects) != 1 {
			t.Errorf("run %s: results on %v, want one subject", run, info.State.Subjects)
		}
		for subj, count := range info.State.Subjects {
			m, err := s.GetLastMsgForSubject(ctx, subj)
			if err != nil {
				t.Fatal(err)
			}
			r, err := DecodeResult(m.Data)
			if err != nil || count != 1 || r.Node != "n1" || r.Status != "completed" || r.Attempt != 1 {
				t.Errorf("run %s: %d results on %s, the last %+v %v", run, count, subj, r, err)
			}
		}
	}

	runOnce("before-restart")
	if st := n.Stats(); st.Completed != 1 {
		t.Fatalf("before the restart: %+v", st)
	}

	e.Shutdown(t.Context())
	// The node runs into the outage: its heartbeat and pull requests go
	// to the reconnect buffer while the server is away.
	checkFor(t, 30*time.Second, func() error {
		nc := nodeConn.NATS()
		if nc.IsConnected() {
			return errorf("the node has not noticed the server is gone")
		}
		if b, _ := nc.Buffered(); b == 0 {
			return errorf("the node has sent nothing since the server went away")
		}
		return nil
	})
	if !keepStore {
		dir = t.TempDir()
	}
	startPersistent(t, port, dir) // shut down at the end of the test
	reconnected(t, nodeConn, 1)
	reconnected(t, orch, 1)

	// The node heartbeats again: its registry entry is rewritten after
	// the restart (into a bucket the node made again if the store was lost).
	restarted := time.Now().UTC()
	checkFor(t, 30*time.Second, func() error {
		kv, err := orch.JetStream().KeyValue(t.Context(), bus.NodesBucket)
		if err != nil {
			return err
		}
		entry, err := kv.Get(t.Context(), "n1")
		if err != nil {
			return err
		}
		if !entry.Created().After(restarted) {
			return errorf("n1's registry entry was last written %s, before the restart", entry.Created())
		}
		return nil
	})

	runOnce("after-restart")
	if st := n.Stats(); st.Taken != 2 || st.Completed != 2 || st.Redelivered != 0 || (st.Restored > 0) == keepStore {
		t.Errorf("node stats after both runs (store kept: %v): %+v", keepStore, st)
	}
	if err := n.Drain(t.Context()); err != nil {
		t.Fatal(err)
	}
}
