package cluster

import (
	"context"
	"time"

	"github.com/troupe-ai/troupe/messages"
)

// Lost deliveries. The queue's consumer hands a task to a node through
// the server leading it; when that server dies between counting the task
// delivered and the node getting it, the task is lost with the server's
// socket, and the queue would deliver it again only AckWait later (30 s
// with replicas). A node tells its run at once of every delivery it gets
// (claim.go), so the run can tell: a task the queue counts delivered
// that no node spoke of for lostDelivery was lost on its way, and the run
// queues it again under a new key. Should the first delivery turn up
// after all, its node asks the run and is told to drop it: the task
// never runs twice.

const (
	// lostDelivery is how long a task may be counted delivered with no
	// word of a node before the run takes its delivery for lost: a node
	// says it took a task within moments, and sends the word again
	// across a lost server or an election.
	lostDelivery = 5 * time.Second
	// lostCheckEvery is how often the run compares its tasks with the
	// queue's delivered count.
	lostCheckEvery = time.Second
)

// watchDeliveries queues again, until the run ends, the tasks whose
// delivery was lost.
func (r *Remote) watchDeliveries() {
	defer r.sweeper.Done()
	t := time.NewTicker(lostCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case now := <-t.C:
			for _, c := range r.lostDeliveries(now) {
				r.o.Log.Warn().Str("agent", c.task.ID).Dur("after", lostDelivery).
					Msg("the queue delivered the task and no node spoke of it: its delivery was lost (with a server?); queued again")
				r.lost.Add(1)
				c.reissue(anyNode)
			}
		}
	}
}

// lostDeliveries are the waiting tasks that the queue has counted
// delivered for lostDelivery by now with no word of a node.
func (r *Remote) lostDeliveries(now time.Time) []*remoteChild {
	r.mu.Lock()
	byKind := map[string][]*remoteChild{}
	for _, c := range r.waiting {
		c.mu.Lock()
		if c.seq > 0 && !c.heard && !c.cancelled && c.node == "" {
			byKind[c.task.Kind] = append(byKind[c.task.Kind], c)
		}
		c.mu.Unlock()
	}
	r.mu.Unlock()
	var lost []*remoteChild
	for kind, cs := range byKind {
		ctx, cancel := context.WithTimeout(r.ctx, lostCheckEvery)
		cons, err := r.o.Bus.JetStream().Consumer(ctx, r.o.Bus.Names().Tasks, consumerName(r.o.Bus.Prefix(), kind, messages.ProtocolVersion))
		var delivered uint64
		if err == nil {
			info := cons.CachedInfo()
			delivered = info.Delivered.Stream
		}
		cancel()
		if err != nil { // no node made the consumer yet, or the server cannot answer: judge nothing
			continue
		}
		for _, c := range cs {
			c.mu.Lock()
			switch {
			case c.heard || c.node != "" || c.seq > delivered:
				c.delivered = time.Time{}
			case c.delivered.IsZero():
				c.delivered = now
			case now.Sub(c.delivered) >= lostDelivery:
				lost = append(lost, c)
			}
			c.mu.Unlock()
		}
	}
	return lost
}
