package cluster

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// watchKV follows every key of kv until ctx ends (or the server ends the
// watch): apply gets each entry as it comes, with initial set for those
// that existed when the watch began. ready is closed once those are in,
// done once the watch has ended.
func watchKV(ctx context.Context, kv jetstream.KeyValue, apply func(e jetstream.KeyValueEntry, initial bool)) (ready, done <-chan struct{}, err error) {
	w, err := kv.WatchAll(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("watch %s: %w", kv.Bucket(), err)
	}
	in, end := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(end)
		defer func() { _ = w.Stop() }()
		initial := true
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-w.Updates():
				if !ok {
					return
				}
				if e == nil { // the entries that existed are in
					if initial {
						close(in)
						initial = false
					}
					continue
				}
				apply(e, initial)
			}
		}
	}()
	return in, end, nil
}
