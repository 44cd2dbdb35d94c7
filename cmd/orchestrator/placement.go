package main

import (
	"context"
	"fmt"
	"maps"
	"strings"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/cluster"
	"github.com/troupe-ai/troupe/internal/config"
)

// parsePlacement reads "explore=remote,worker=local" over base.
func parsePlacement(v string, base map[string]string) (map[string]string, error) {
	out := maps.Clone(base)
	if out == nil {
		out = map[string]string{}
	}
	for _, part := range strings.Split(v, ",") {
		kind, where, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || kind == "" {
			return nil, fmt.Errorf("want KIND=local|remote|auto[,...], got %q", part)
		}
		switch where {
		case cluster.PlaceLocal, cluster.PlaceRemote, cluster.PlaceAuto:
		default:
			return nil, fmt.Errorf("%s: want local, remote or auto, got %q", kind, where)
		}
		out[kind] = where
	}
	return out, nil
}

// startPlacement starts the orchestrator side of remote placement when a
// kind may run on nodes; nil when every kind runs here. Tasks carry the
// identity of workspace's repository, so nodes serving another refuse them.
// events gets the run's events about its nodes (a node lost).
func startPlacement(ctx context.Context, nb *runBus, cfg config.Config, run, workspace string, events actors.Emitter, log zerolog.Logger) (*cluster.Remote, error) {
	remote := false
	for _, p := range cfg.Placement {
		remote = remote || p != cluster.PlaceLocal
	}
	if !remote {
		return nil, nil
	}
	return cluster.StartRemote(ctx, cluster.RemoteOptions{Bus: nb.conn,
		Run: run, Placement: cfg.Placement, LeaseTimeout: cfg.Node.LeaseTimeout, Workspace: workspace, Events: events, Log: log})
}
