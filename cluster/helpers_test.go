package cluster

import (
	"encoding/json"
	"github.com/troupe-ai/troupe/messages"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/budget"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/internal/testfiles"
)

// wrap makes a bus.Conn of nc with the default prefix.
func wrap(t testing.TB, nc *nats.Conn) *bus.Conn {
	t.Helper()
	c, err := bus.Wrap(nc, "")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// natsServer starts a real in-process NATS server with JetStream on a
// random loopback port.
func natsServer(t testing.TB) *server.Server {
	t.Helper()
	opts := &server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true, JetStream: true, StoreDir: t.TempDir()}
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s
}

func connect(t testing.TB, s *server.Server) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// budgetActor spawns a real budget actor for run with limits.
func budgetActor(t testing.TB, run string, limits budget.Limits) *budget.Client {
	t.Helper()
	sys := actor.NewActorSystem()
	pid, err := budget.Spawn(sys.Root, run, limits)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = budget.Stop(sys.Root, pid); sys.Shutdown() })
	return budget.NewClient(sys.Root, pid)
}

// checkFor polls fn until it returns nil or total passes.
var checkFor = testfiles.Poll

type natsMsg = nats.Msg

// waitingTask makes the run wait for a task agent (as if placed, and
// delivered to node on its first attempt) and returns that delivery.
func waitingTask(r *Remote, agent, node string) *delivery {
	c := &remoteChild{r: r, task: messages.Task{Run: r.o.Run, ID: agent, Kind: "explore"}, done: make(chan actors.AgentResult, 1),
		secret: newSecret()}
	r.mu.Lock()
	r.waiting[agent] = c
	r.mu.Unlock()
	return newDelivery(c.secret, agent, node, 1)
}

func jsonTask(t messages.Task) ([]byte, error) { return json.Marshal(t) }

// publishSignedResult stores a completed result of run's task, signed as
// the delivery d (attempt on node), with text as its text and message ID.
func publishSignedResult(t testing.TB, js jetstream.JetStream, run, task string, d *delivery, node string, attempt int, text string) {
	t.Helper()
	b, _ := json.Marshal(messages.Result{V: messages.ProtocolVersion, Run: run, Agent: task, Kind: "explore", Node: node,
		Attempt: attempt, Status: "completed", Reason: "finished", Text: text})
	h := d.sign(nats.Header{jetstream.MsgIDHeader: []string{text}}, b)
	if _, err := js.PublishMsg(t.Context(), &nats.Msg{Subject: bus.ResultSubject(DefaultPrefix, run, task, d.tag), Data: b, Header: h}); err != nil {
		t.Fatal(err)
	}
}
