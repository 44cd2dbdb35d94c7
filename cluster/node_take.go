package cluster

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Pulling tasks. A node keeps a pull request open at the server for each
// of its free slots, so a task published while the node has room is
// pushed to it at once, and a slot freed by a finished task is offered
// again without waiting for an earlier request to expire.
//
// Every request has a server-side expiry (pullWait): the client library
// gives up on a request a second after its expiry, and a message the
// server delivers to a request the client gave up on is lost until
// AckWait redelivers it. Requests that never expire on the server
// (FetchNoWait) lost whole batches that way under load, so none are used.
const (
	fetchBatch = 32          // most tasks one request asks for
	maxPulls   = 4           // requests open at once per kind
	pullWait   = time.Second // server-side expiry of a request (a drain waits for it)
)

// take keeps kind's pull requests open while the node takes tasks.
func (n *Node) take(kind string, c jetstream.Consumer) {
	defer n.pulling.Done()
	var open sync.WaitGroup
	defer open.Wait()
	pulls := make(chan struct{}, maxPulls)
	var failed atomic.Bool // a pull failed: check that the consumer still exists
	for {
		if failed.Swap(false) {
			c = n.restoreConsumer(kind, c)
		}
		select { // a free slot
		case n.slots <- struct{}{}:
		case <-n.fetching.Done():
			return
		}
		reserved := 1
	more: // and every other free slot, up to a batch
		for reserved < fetchBatch {
			select {
			case n.slots <- struct{}{}:
				reserved++
			default:
				break more
			}
		}
		select {
		case pulls <- struct{}{}:
		case <-n.fetching.Done():
			n.release(reserved)
			return
		}
		batch, err := c.Fetch(reserved, jetstream.FetchMaxWait(pullWait))
		if err != nil {
			n.release(reserved)
			n.pullFailed(kind, err)
			failed.Store(true)
			<-pulls
			continue
		}
		open.Add(1)
		go func() {
			defer open.Done()
			defer func() { <-pulls }()
			got := n.startAll(kind, batch)
			n.release(reserved - got)
			if err := batch.Error(); err != nil {
				n.pullFailed(kind, err)
				failed.Store(true)
			}
		}()
	}
}

// startAll starts each task of a batch as it arrives; each holds one of
// the slots reserved for the batch. It returns how many arrived.
func (n *Node) startAll(kind string, batch jetstream.MessageBatch) int {
	got := 0
	for m := range batch.Messages() {
		got++
		if n.fetching.Err() != nil { // draining: give it back at once to another node
			_ = m.Nak()
			n.release(1)
			continue
		}
		n.tasks.Add(1)
		go n.run(kind, m)
	}
	return got
}

// release frees k reserved slots.
func (n *Node) release(k int) {
	for ; k > 0; k-- {
		<-n.slots
	}
}

// pullFailed logs a failed pull and waits a little (the server may be
// away: do not spin).
func (n *Node) pullFailed(kind string, err error) {
	if n.fetching.Err() != nil {
		return
	}
	n.o.Log.Debug().Err(err).Str("kind", kind).Msg("pull tasks")
	select {
	case <-time.After(250 * time.Millisecond):
	case <-n.fetching.Done():
	}
}
