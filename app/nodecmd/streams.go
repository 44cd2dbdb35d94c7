package nodecmd

import (
	"context"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/app/config"
	"github.com/troupe-ai/troupe/app/setup"
	"github.com/troupe-ai/troupe/bus"
)

// nodeStreams sets the streams up as far as the node's credentials let
// it. Without role credentials (no auth, a shared token) the node creates
// what is missing and applies the limits its configuration sets, as a
// run does. A node's own credentials may create nothing: it says so when
// its configuration sets stream limits (serve or the requester applies
// them) and leaves the streams to StartNode, which waits for them. The
// shared node.creds of earlier troupes still works, with a warning.
func nodeStreams(ctx context.Context, conn *bus.Conn, cfg config.Config, log zerolog.Logger) error {
	id := conn.Identity()
	if id.Role == bus.RoleNode && id.Node == "" {
		log.Warn().Msg("these are the shared node.creds of earlier troupes: every node holding them is the same user, and none can be revoked alone; " +
			"issue each node its own (orchestrator auth node NAME --dir AUTH_DIR). The shared file stops working in the next release")
	}
	if !conn.MayCreateStreams() {
		if l := setup.StreamLimits(cfg); l.ApplyEventsMaxAge || l.ApplyEventsMaxBytes {
			log.Warn().Msg("nats.events_max_age and nats.events_max_bytes are not applied by a node (its credentials may not change streams): set them for serve or the run")
		}
		return nil
	}
	diffs, err := conn.ReconcileStreams(ctx, setup.StreamLimits(cfg))
	if err != nil {
		return err
	}
	for _, d := range diffs { // applied: the node's configuration set it
		if d.Applied {
			log.Info().Str("stream", d.Stream).Str("setting", d.Setting).Msg(d.String())
		}
	}
	return nil
}
