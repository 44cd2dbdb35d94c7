package bus

import (
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Durability of the embedded server's store. JetStream acknowledges a
// write once it is in the operating system's page cache (on a majority of
// replicas, in a cluster), and flushes it to the disk now and then:
// nats-server's default is every two minutes, so a power failure loses up
// to two minutes of acknowledged tasks, results and events (all servers
// of a cluster at once: a coordinated power failure, or one server with
// unreplicated streams). nats.sync chooses.
const (
	// SyncAlways flushes every write to the disk before acknowledging it:
	// nothing acknowledged is lost to a power failure; each write costs a
	// flush.
	SyncAlways = "always"
	// SyncDefault is nats.sync's default: a flush every second bounds
	// what a power failure of every server at once loses to the last
	// second, at little cost (see the README's figures).
	SyncDefault = "1s"
)

// ParseSync reads a nats.sync value: "always", or an interval such as
// 1s or 2m ("" is SyncDefault).
func ParseSync(s string) (always bool, every time.Duration, err error) {
	if s == "" {
		s = SyncDefault
	}
	if s == SyncAlways {
		return true, 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return false, 0, fmt.Errorf("nats.sync %q: want always, or an interval such as 1s or 2m", s)
	}
	return false, d, nil
}

// setSync sets the store's flushing on opts.
func setSync(opts *server.Options, sync string) error {
	always, every, err := ParseSync(sync)
	if err != nil {
		return err
	}
	opts.SyncAlways, opts.SyncInterval = always, every
	if always {
		opts.SyncInterval = 0
	}
	return nil
}
