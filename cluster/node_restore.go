package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/troupe-ai/troupe/bus"
)

// A server that restarts with its store keeps the task consumers and the
// registry bucket, and the node goes on where it was. One that restarts
// without it (an ephemeral store, a rebuilt server) has neither: the
// node's pulls and heartbeats would fail for ever. So when they fail, the
// node asks whether what they need still exists and, if it is gone,
// creates its consumer or the bucket again; the streams it creates again
// only where its credentials allow (none, or a shared token): a node's own
// credentials may not, and it waits for serve or the next run to.

// consumer creates (or finds) the durable consumer of kind's tasks.
func (n *Node) consumer(ctx context.Context, kind string) (jetstream.Consumer, error) {
	o := n.o
	c, err := o.Bus.JetStream().CreateOrUpdateConsumer(ctx, o.Bus.Names().Tasks, jetstream.ConsumerConfig{
		Durable: consumerName(o.Bus.Prefix(), kind, o.Protocol), FilterSubject: TaskSubject(o.Bus.Prefix(), kind, o.Protocol),
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: o.AckWait, MaxDeliver: o.MaxDeliver, MaxAckPending: -1,
		Description: fmt.Sprintf("troupe nodes taking %s tasks of protocol %d", kind, o.Protocol)})
	if err != nil {
		return nil, fmt.Errorf("consumer for %s tasks: %w", kind, err)
	}
	return c, nil
}

// gone reports whether err says a stream, consumer or bucket does not
// exist on the server.
func gone(err error) bool {
	return errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) ||
		errors.Is(err, jetstream.ErrBucketNotFound)
}

// restoreConsumer returns c, or kind's consumer created again when the
// server no longer has c (or its stream).
func (n *Node) restoreConsumer(kind string, c jetstream.Consumer) jetstream.Consumer {
	ctx, cancel := context.WithTimeout(n.fetching, 10*time.Second)
	defer cancel()
	if _, err := c.Info(ctx); !gone(err) {
		return c
	}
	if err := n.ensureStreams(ctx); err != nil {
		n.o.Log.Warn().Err(err).Str("kind", kind).Msg("the task queue is gone from the server and cannot be created again yet")
		return c
	}
	fresh, err := n.consumer(ctx, kind)
	if err != nil {
		n.o.Log.Warn().Err(err).Str("kind", kind).Msg("the task consumer is gone from the server and cannot be created again yet")
		return c
	}
	n.stats.restored.Add(1)
	n.o.Log.Warn().Str("kind", kind).Msg("the server had lost the task consumer (restarted without its store?); created it again")
	return fresh
}

// registry is the node bucket as the node last opened it.
func (n *Node) registry() jetstream.KeyValue {
	n.kvMu.Lock()
	defer n.kvMu.Unlock()
	return n.kv
}

// restoreRegistry opens the node bucket again, creating it (and the
// streams) when the server no longer has it; it reports whether there is
// a bucket to write to again.
func (n *Node) restoreRegistry(ctx context.Context) bool {
	kv, err := n.o.Bus.JetStream().KeyValue(ctx, n.o.Bus.Names().Nodes)
	if gone(err) {
		if err = n.ensureStreams(ctx); err == nil {
			kv, err = n.o.Bus.JetStream().KeyValue(ctx, n.o.Bus.Names().Nodes)
		}
		if err == nil {
			n.stats.restored.Add(1)
			n.o.Log.Warn().Msg("the server had lost the node registry (restarted without its store?); created it again")
		}
	}
	if err != nil {
		return false
	}
	n.kvMu.Lock()
	n.kv = kv
	n.kvMu.Unlock()
	return true
}

// ensureStreams creates the streams that are missing where the node's
// credentials allow; otherwise it only checks they exist (a requester or
// serve makes them).
func (n *Node) ensureStreams(ctx context.Context) error {
	if n.o.Bus.MayCreateStreams() {
		return n.o.Bus.EnsureStreams(ctx, bus.StreamLimits{})
	}
	missing, err := n.o.Bus.MissingStreams(ctx)
	if err == nil && len(missing) > 0 {
		err = fmt.Errorf("%w: %v (serve or the next run creates them; this node's credentials may not)", jetstream.ErrStreamNotFound, missing)
	}
	return err
}
