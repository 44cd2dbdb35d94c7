package config

import "time"

// validate checks the settings of the hub's durability: nats.replicas is
// 0 (the hub chooses), 1 or 3; nats.sync is "always" or an interval.
func (n NATS) validate() error {
	if n.Replicas != 0 && n.Replicas != 1 && n.Replicas != 3 {
		return bad("nats.replicas", "must be 1 or 3 (or 0: 3 in a cluster of three or more servers, else 1), got %d", n.Replicas)
	}
	if n.Sync == "" || n.Sync == "always" {
		return nil
	}
	if d, err := time.ParseDuration(n.Sync); err != nil || d <= 0 {
		return bad("nats.sync", "must be always (every write on disk before it is acknowledged) or an interval such as 1s, got %q", n.Sync)
	}
	return nil
}
