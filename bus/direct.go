package bus

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// Direct gets are off on troupe's buckets and object stores. A direct get
// answers with a stored message's own bytes and headers, published on the
// reply subject the asker names, and NATS permissions cannot restrict a
// reply subject: whoever may direct-get could copy what a stream holds (a
// registry entry's delete marker, a chunk a node wrote) onto any subject
// another stream stores (another node's registry key, a run's lease, the
// task queue) or a node obeys (a cancel). Reads go through
// STREAM.MSG.GET instead, whose answer is a JSON document of the server's
// (the message inside it, encoded), never a message of troupe's; nats.go
// uses it by itself for a stream without direct gets.

// kvStreams are the JetStream names of the prefix's buckets and object
// stores.
func (n Names) kvStreams() []string {
	s := streamsOf(n)
	return []string{s.nodes, s.runs, s.artifacts, s.snapshots, s.changes}
}

// disallowDirect turns direct gets off on the prefix's buckets and object
// stores (nats.go makes them with direct gets on).
func disallowDirect(ctx context.Context, js jetstream.JetStream, names Names) error {
	for _, name := range names.kvStreams() {
		s, err := js.Stream(ctx, name)
		if err != nil {
			return fmt.Errorf("look up stream %s: %w", name, err)
		}
		cfg := s.CachedInfo().Config
		if !cfg.AllowDirect {
			continue
		}
		cfg.AllowDirect = false
		if _, err := js.UpdateStream(ctx, cfg); err != nil {
			return fmt.Errorf("update stream %s to answer no direct get: %w", name, err)
		}
	}
	return nil
}

// directOn lists the prefix's buckets and object stores that still answer
// direct gets (made, not yet set up by a requester).
func directOn(ctx context.Context, js jetstream.JetStream, names Names) ([]string, error) {
	var on []string
	for _, name := range names.kvStreams() {
		s, err := js.Stream(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("look up stream %s: %w", name, err)
		}
		if s.CachedInfo().Config.AllowDirect {
			on = append(on, name+" (not set up yet)")
		}
	}
	return on, nil
}
