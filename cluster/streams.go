package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Stream and bucket names of the distributed half.
const (
	TasksStream   = "TROUPE_TASKS"
	ResultsStream = "TROUPE_RESULTS"
	NodesBucket   = "troupe_nodes"
)

// StreamOptions size the streams; zero values take the defaults.
type StreamOptions struct {
	Prefix       string        // default DefaultPrefix
	ResultsAge   time.Duration // how long results are kept (default 24h)
	NodeTTL      time.Duration // a node entry expires this long after its last heartbeat (default 15s)
	Replicas     int           // stream replicas in a cluster (default 1)
	DuplicateWin time.Duration // publish deduplication window (default 2m)
}

func (o StreamOptions) withDefaults() StreamOptions {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.ResultsAge == 0 {
		o.ResultsAge = 24 * time.Hour
	}
	if o.NodeTTL == 0 {
		o.NodeTTL = 15 * time.Second
	}
	if o.Replicas == 0 {
		o.Replicas = 1
	}
	if o.DuplicateWin == 0 {
		o.DuplicateWin = 2 * time.Minute
	}
	return o
}

// EnsureStreams creates the task queue, the results stream and the node
// registry if they are missing. It never resets them: a second
// orchestrator or node against the same server finds them as they are.
func EnsureStreams(ctx context.Context, js jetstream.JetStream, o StreamOptions) error {
	o = o.withDefaults()
	streams := []jetstream.StreamConfig{
		{Name: TasksStream, Subjects: []string{o.Prefix + ".task.>"}, Retention: jetstream.WorkQueuePolicy,
			Storage: jetstream.FileStorage, Replicas: o.Replicas, Duplicates: o.DuplicateWin,
			Description: "troupe agent tasks for remote nodes (work queue)"},
		{Name: ResultsStream, Subjects: []string{o.Prefix + ".result.>"}, Retention: jetstream.LimitsPolicy,
			Storage: jetstream.FileStorage, Replicas: o.Replicas, MaxAge: o.ResultsAge, Duplicates: o.DuplicateWin,
			MaxMsgsPerSubject: 1, Description: "troupe remote agents' results, one per agent"},
	}
	for _, cfg := range streams {
		if _, err := js.Stream(ctx, cfg.Name); err == nil {
			continue // exists: leave it as it is
		} else if !errors.Is(err, jetstream.ErrStreamNotFound) {
			return fmt.Errorf("look up stream %s: %w", cfg.Name, err)
		}
		if _, err := js.CreateStream(ctx, cfg); err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return fmt.Errorf("create stream %s: %w", cfg.Name, err)
		}
	}
	if _, err := js.KeyValue(ctx, NodesBucket); err == nil {
		return nil
	} else if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return fmt.Errorf("look up bucket %s: %w", NodesBucket, err)
	}
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: NodesBucket, TTL: o.NodeTTL,
		Replicas: o.Replicas, Description: "troupe nodes: one entry per live node"}); err != nil &&
		!errors.Is(err, jetstream.ErrBucketExists) {
		return fmt.Errorf("create bucket %s: %w", NodesBucket, err)
	}
	return nil
}
