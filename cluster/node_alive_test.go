package cluster

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

// A task whose set-up (fetching and checking out its snapshot) takes
// longer than AckWait keeps its claim: the node keeps it alive from the
// moment it claims it, so it is delivered once although a second node
// waits for work all along. Here the set-up lasts until the node has sent
// six progress acks, two AckWaits' worth.
func TestSlowSetUpNotRedelivered(t *testing.T) {
	s := natsServer(t)
	// Long enough that a loaded machine's scheduling does not cost a
	// claim between two acks (500 ms apart).
	const ackWait = 1500 * time.Millisecond
	srv := blockingScript(1, func(string, int) llmtest.Turn { return llmtest.Turn{Text: "main.go:3"} })
	defer srv.Close()
	var first atomic.Pointer[Node]
	var kept atomic.Bool // the set-up saw the six progress acks
	o1 := nodeOpts(t, s, srv, "n1")
	o1.AckWait = ackWait
	o1.beforeSetUp = func(actors.ChildTask) {
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
			if n := first.Load(); n != nil && n.Stats().Progress >= 6 {
				kept.Store(true)
				return
			}
			<-time.After(10 * time.Millisecond)
		}
	}
	n1 := startNodeWith(t, o1)
	first.Store(n1)
	run := startTeam(t, s, srv, "rs", nil)
	waitRunning(t, n1, 1) // the task is n1's before a second node exists
	o2 := nodeOpts(t, s, srv, "n2")
	o2.AckWait = ackWait
	n2 := startNodeWith(t, o2)
	res, err := run.wait(t)
	if err != nil || res.Text != "all answered" {
		t.Fatalf("run %+v %v", res, err)
	}
	if !kept.Load() {
		t.Errorf("no progress acks while the task was set up: %+v", n1.Stats())
	}
	st1, st2 := n1.Stats(), n2.Stats()
	if st1.Completed != 1 || st1.Duplicates != 0 || st2.Taken+st2.Redelivered+st2.Lapsed != 0 {
		t.Errorf("first node %+v, second %+v: want the task run once, on the first", st1, st2)
	}
	if reqs := requestsOfKind(srv, "explore"); len(reqs) != 1 {
		t.Errorf("%d model calls for the explore agent, want 1", len(reqs))
	}
}
