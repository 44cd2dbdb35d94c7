package runner

import (
	"context"
	"fmt"
	"maps"
	"strings"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/cluster"
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

// anyRemote says whether placement lets some kind run on nodes.
func anyRemote(placement map[string]string) bool {
	for _, p := range placement {
		if p != cluster.PlaceLocal {
			return true
		}
	}
	return false
}

// startPlacement starts the orchestrator side of remote placement when a
// kind may run on nodes; nil when every kind runs here. Tasks carry the
// identity of the workspace's repository, so nodes serving another refuse
// them, and the run's lease. The run's events about its nodes (a node
// lost) go to o.Events; the events nodes relay for its agents, once
// checked, to the run's publisher only (the run's sinks read them back
// from the stream, followNodes).
func startPlacement(ctx context.Context, b *Bus, p Params, o actors.Options) (*cluster.Remote, error) {
	if !anyRemote(p.Placement) {
		return nil, nil
	}
	if o.StateDir == "" {
		dir, err := StateDir(o.Workspace)
		if err != nil {
			return nil, err
		}
		o.StateDir = dir
	}
	return cluster.StartRemote(ctx, cluster.RemoteOptions{Bus: b.conn, Run: o.Run, Placement: p.Placement, LeaseTimeout: p.LeaseTimeout,
		PlacementTimeout: p.PlacementTimeout, RunLease: o.RunLease, Records: cluster.RecordsPath(o.StateDir, o.Run),
		Workspace: o.Workspace, Events: o.Events, Relay: b.pub, Log: p.Log})
}
