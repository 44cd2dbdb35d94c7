package setup

import (
	"github.com/troupe-ai/troupe/app/config"
	"github.com/troupe-ai/troupe/bus"
)

// StreamLimits are the events stream's limits of cfg. Limits that a file,
// the environment or a flag set are applied to an existing stream; those
// left at their defaults are only used for a stream created now, so a run
// or node with a plain configuration never undoes what an operator set
// (with serve --config, say).
func StreamLimits(cfg config.Config) bus.StreamLimits {
	return bus.StreamLimits{
		EventsMaxAge: cfg.NATS.EventsMaxAge, ApplyEventsMaxAge: cfg.IsSet("nats.events_max_age"),
		EventsMaxBytes: cfg.NATS.EventsMaxBytes, ApplyEventsMaxBytes: cfg.IsSet("nats.events_max_bytes"),
		Replicas: cfg.NATS.Replicas, ApplyReplicas: cfg.IsSet("nats.replicas") && cfg.NATS.Replicas != 0,
	}
}
