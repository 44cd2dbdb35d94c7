package cluster

import (
	"sync"
	"time"
)

// Keeping a task alive. The queue delivers a task again once AckWait
// passes without an ack or a progress ack from the node holding it. A
// node keeps its claim alive from the moment it claims the task until it
// settles it: fetching and checking out the snapshot, running the agent,
// capturing its changes, flushing its outputs and publishing its result
// all count. Slow set-up on a loaded machine, or a large repository's
// bundle, would otherwise hand a running task to a second node.

// aliveEvery is how often a claimed task is kept alive: three progress
// acks per AckWait, so one lost or late one does not cost the claim.
func (n *Node) aliveEvery() time.Duration { return n.o.AckWait / 3 }

// keepAlive starts sending rt's latest delivery progress acks every
// every, each reported to sent, until quiet is called or the claim is revoked (another node may
// hold the task then: keeping this delivery alive would hold it back).
func (rt *runningTask) keepAlive(every time.Duration, sent func(error)) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if rt.revoked.Load() {
					return
				}
				// A failed one: the server may have delivered the task again
				// meanwhile; if to this node, claim hands the new delivery to
				// this copy.
				sent(rt.latest().InProgress())
			}
		}
	}()
	var once sync.Once
	rt.mu.Lock()
	rt.quietFn = func() { once.Do(func() { close(done); wg.Wait() }) }
	rt.mu.Unlock()
}

// quiet stops rt's progress acks and waits until none is in flight: the
// delivery is about to be settled (acked, nak'ed or terminated).
func (rt *runningTask) quiet() {
	rt.mu.Lock()
	q := rt.quietFn
	rt.mu.Unlock()
	if q != nil {
		q()
	}
}
