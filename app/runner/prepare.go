package runner

import (
	"context"
	"path/filepath"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/app/config"
	"github.com/troupe-ai/troupe/app/setup"
	"github.com/troupe-ai/troupe/cluster"
	"github.com/troupe-ai/troupe/telemetry"
)

// Spec is a run of `orchestrator run` or `resume`.
type Spec struct {
	Config      config.Config
	NATSSetting string // where nats.url came from (Overrides.NATSSetting)
	Workspace   string // as the user named it
	Task        string
	Resume      *actors.Checkpoint // the run to go on with; nil for a new run
	Sinks       []actors.Emitter   // in-process views of the run's events
	Tracer      telemetry.Tracer   // the run's spans (setup.Tracing); zero: off
	Log         zerolog.Logger
}

// Prepare builds a run from its configuration: the team's options (model
// client, kinds, tools, MCP servers), a new run ID (or the resumed run's),
// its NATS and artifacts store, then Start. A configuration that cannot
// make a team is an ErrUsage. Close releases all of it.
func Prepare(ctx context.Context, s Spec) (*Run, error) {
	b, err := StartBus(ctx, s.Config.NATS, setup.StreamLimits(s.Config), s.NATSSetting, Abs(s.Workspace), s.Log)
	if err != nil {
		return nil, err
	}
	closeBus := func() { b.Close(ctx) }
	// The run's model calls take their turns with every other run and node
	// of the hub (and the run owns the hub's quota while nobody else does).
	rates, err := cluster.StartRateHub(ctx, b.conn, cluster.RateHubOptions{Candidate: true, Name: "run", Log: s.Log})
	if err != nil {
		closeBus()
		return nil, err
	}
	closeBus = func() { rates.Close(); b.Close(ctx) }
	opts, err := setup.TeamOptions(s.Config, s.Workspace, s.Log, rates.Limiter())
	if err != nil {
		closeBus()
		return nil, Usage("%v", err)
	}
	closeTools := func() { setup.CloseToolSources(opts.ToolSources) } // MCP servers end with the run
	opts.Task, opts.Resume, opts.Run, opts.Tracer = s.Task, s.Resume, uuid.NewString(), s.Tracer
	if opts.StateDir, err = StateDir(s.Workspace); err != nil {
		closeTools()
		return nil, err
	}
	if s.Resume != nil {
		opts.Run = s.Resume.Run
	}
	opts.Artifacts = b.conn.Artifacts(opts.Run)
	r, err := Start(ctx, b, Params{Options: opts, Placement: s.Config.Placement, LeaseTimeout: s.Config.Node.LeaseTimeout, PlacementTimeout: s.Config.Node.PlacementTimeout,
		RunLease: s.Config.Node.RunLease, Sinks: s.Sinks, Log: s.Log})
	if err != nil {
		closeBus()
		closeTools()
		return nil, err
	}
	r.closers = append(r.closers, closeTools, closeBus)
	return r, nil
}

// ID is the run's ID.
func (r *Run) ID() string { return r.Options.Run }

// Abs is dir made absolute, or dir when that fails.
func Abs(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}
