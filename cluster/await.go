package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/bus"
)

// Starting against a hub that cannot answer yet. A node, a run or a
// watcher that starts while a cluster forms, or while a lost server's
// streams elect new leaders, waits for what it needs (bus.Await), saying
// so, for at most bus.StartWait; only then does it give up.

// awaitStart is bus.Await bounded by bus.StartWait.
func awaitStart(ctx context.Context, log zerolog.Logger, what string, fn func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, bus.StartWait)
	defer cancel()
	return bus.Await(ctx, log, what, fn)
}

// openBucket opens the KV bucket named bucket, waiting out a server that
// cannot answer yet.
func openBucket(ctx context.Context, conn *bus.Conn, log zerolog.Logger, bucket string) (jetstream.KeyValue, error) {
	var kv jetstream.KeyValue
	err := awaitStart(ctx, log, "open "+bucket, func(ctx context.Context) error {
		var err error
		kv, err = conn.JetStream().KeyValue(ctx, bucket)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", bucket, err)
	}
	return kv, nil
}

// Publishing what matters. A task, a result or a start notice that a lost
// server or an election kept from the stream is sent again, with the same
// message ID, until the stream has it (at most publishFor: well within
// the streams' two-minute deduplication window, so a publish that did
// get through is stored once).
const (
	publishFor = time.Minute
	// publishTry bounds one try: an acknowledgement lost with its server
	// is given up on this soon, and the publish sent again (stored once).
	publishTry = 2 * time.Second
)

// publishRetried publishes m with JetStream, sending it again (m carries
// its message ID) while the failures are those of a lost server or an
// election, for at most publishFor or until ctx ends.
func publishRetried(ctx context.Context, conn *bus.Conn, log zerolog.Logger, what string, m *nats.Msg) (*jetstream.PubAck, error) {
	ctx, cancel := context.WithTimeout(ctx, publishFor)
	defer cancel()
	var ack *jetstream.PubAck
	err := bus.Await(ctx, log, what, func(ctx context.Context) error {
		tctx, cancel := context.WithTimeout(ctx, publishTry)
		defer cancel()
		var err error
		ack, err = conn.JetStream().PublishMsg(tctx, m)
		return err
	})
	return ack, err
}

// queueAckWait is the AckWait a node takes by default: ReplicatedAckWait
// when the task queue has replicas, else DefaultAckWait.
func queueAckWait(ctx context.Context, conn *bus.Conn, log zerolog.Logger) time.Duration {
	var replicas int
	_ = awaitStart(ctx, log, "look up stream "+conn.Names().Tasks, func(ctx context.Context) error {
		s, err := conn.JetStream().Stream(ctx, conn.Names().Tasks)
		if err == nil {
			replicas = s.CachedInfo().Config.Replicas
		}
		return err
	})
	if replicas > 1 {
		return ReplicatedAckWait
	}
	return DefaultAckWait
}
