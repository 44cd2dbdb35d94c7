package cluster

import (
	"testing"

	"github.com/rs/zerolog"
)

// A node that runs a task tells a redelivery of it (the same stream
// message: the running copy keeps it) from a later queueing of it (the
// run, or a new life of it, queued it again: the running copy is stopped
// as a revoked one, and the new delivery handed back until it has ended)
// and from an earlier queueing's copy (handed back, the running copy
// kept). A later queueing taken for a redelivery let a stale copy settle
// the new message with a result the run refuses.
func TestClaimTellsAQueueingFromARedelivery(t *testing.T) {
	n := &Node{o: NodeOptions{Log: zerolog.Nop()}, running: map[string]*runningTask{}}
	task := func(seq uint64) *runningTask { return &runningTask{seq: seq, gone: make(chan struct{})} }
	running := task(5)
	if got := n.claim("r.a", running); got != claimRun {
		t.Fatalf("first delivery: %d", got)
	}
	if got := n.claim("r.a", task(5)); got != claimAgain || running.revoked.Load() {
		t.Errorf("a redelivery: %d, running copy revoked %v", got, running.revoked.Load())
	}
	if got := n.claim("r.a", task(3)); got != claimHandBack || running.revoked.Load() {
		t.Errorf("an earlier queueing's copy: %d, running copy revoked %v", got, running.revoked.Load())
	}
	if got := n.claim("r.a", task(9)); got != claimHandBack || !running.revoked.Load() {
		t.Errorf("a later queueing: %d, running copy revoked %v", got, running.revoked.Load())
	}
	select {
	case <-running.gone:
	default:
		t.Error("the stopped copy was not let go (its budget requests would wait)")
	}
	if n.running["r.a"] != running {
		t.Error("the stopped copy left the running map before it ended")
	}
}
