package mcpserver

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/app/runner"
	"github.com/troupe-ai/troupe/app/setup"
	"github.com/troupe-ai/troupe/ratelimit"
)

// start begins a run of task in the background, its placement and token
// budget as given (budget 0: the configured one; above it: clamped).
// Past mcp.max_runs runs it is refused.
func (s *Server) start(task, placement string, budgetTokens int64) (*run, error) {
	cfg := s.o.Config
	if placement != "" {
		if err := (runner.Overrides{Placement: placement}).Apply(&cfg); err != nil {
			return nil, invalidParams("placement: %v", err)
		}
	}
	budget, note := clampBudget(budgetTokens, cfg.Budget.Tokens)
	if err := s.runs.reserve(); err != nil {
		return nil, err
	}
	r, err := s.launch(task, budget, note, cfg.Placement)
	if err != nil {
		s.runs.release()
		return nil, err
	}
	return r, nil
}

// clampBudget is the run's token budget: the one asked for, but never
// above the configured one (0 asks for the configured one), and what to
// tell the caller when it was lowered.
func clampBudget(asked, configured int64) (int64, string) {
	switch {
	case asked <= 0:
		return configured, ""
	case configured > 0 && asked > configured:
		return configured, fmt.Sprintf("budget_tokens %d is above the configured budget (budget.tokens: %d); the run got %d", asked, configured, configured)
	}
	return asked, ""
}

// launch starts the team of a run whose slot is reserved.
func (s *Server) launch(task string, budget int64, note string, placement map[string]string) (*run, error) {
	cfg := s.o.Config
	var lim *ratelimit.Limiter
	if s.rates != nil {
		lim = s.rates.Limiter()
	}
	opts, err := setup.TeamOptions(cfg, s.o.Workspace, s.o.Log, lim)
	if err != nil {
		return nil, err
	}
	r := newRun(uuid.NewString(), budget, note)
	opts.Task, opts.Run, opts.Tracer = task, r.id, s.o.Tracer
	opts.Budget.Tokens = budget
	opts.Artifacts = s.o.Bus.Conn().Artifacts(r.id)
	ctx, cancel := context.WithCancel(s.ctx)
	r.cancel = cancel
	team, err := runner.Start(ctx, s.o.Bus, runner.Params{Options: opts, Placement: placement, LeaseTimeout: cfg.Node.LeaseTimeout,
		PlacementTimeout: cfg.Node.PlacementTimeout, RunLease: cfg.Node.RunLease, Sinks: []actors.Emitter{actors.EmitterFunc(r.collect)}, Log: s.o.Log})
	if err != nil {
		cancel()
		setup.CloseToolSources(opts.ToolSources)
		return nil, err
	}
	s.runs.add(r)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer cancel()
		defer setup.CloseToolSources(opts.ToolSources)
		defer team.Close()
		res, err := team.Execute(ctx)
		s.runs.finish(r) // first: once a caller sees the run end, its slot is free
		r.end(res, err)
	}()
	return r, nil
}
