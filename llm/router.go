package llm

import (
	"fmt"
	"maps"
	"slices"
)

// The routing strategies.
const (
	// RouteSingle runs every agent and round on the default model.
	RouteSingle = "single"
	// RoutePerKind runs an agent kind on its PerKind model, others on the
	// default.
	RoutePerKind = "per-kind"
	// RouteCheapOrchestrator runs rounds 1..CheapUntil on the cheap model,
	// later rounds on the default (PerKind still applies).
	RouteCheapOrchestrator = "cheap-orchestrator"
	// RouteRounds runs each round on the model of the first Rounds entry
	// covering it, else the default (PerKind still applies).
	RouteRounds = "rounds"
)

// Model aliases usable in PerKind and Rounds.
const (
	AliasCheap   = "cheap"   // RouteConfig.Cheap (the default when unset)
	AliasDefault = "default" // RouteConfig.Default
)

// RoundRoute runs rounds From..To (inclusive; To 0 means no end) on Model.
type RoundRoute struct {
	From  int    `json:"from" yaml:"from"`
	To    int    `json:"to" yaml:"to"`
	Model string `json:"model" yaml:"model"`
}

// RouteConfig says which model serves an agent kind in a round.
type RouteConfig struct {
	// Strategy is one of the Route* constants; empty means RouteSingle.
	Strategy string
	// Default is the default model; Cheap the cheapest configured one
	// (empty: Default).
	Default string
	Cheap   string
	// PerKind maps an agent kind to a model or alias (e.g. explore →
	// "cheap"). It applies in every strategy but RouteSingle.
	PerKind map[string]string
	// CheapUntil is the last round on the cheap model (cheap-orchestrator).
	CheapUntil int
	// Rounds are the round overrides (rounds strategy); the first entry
	// covering a round wins.
	Rounds []RoundRoute
}

// Router picks models. It is immutable and safe for concurrent use.
type Router struct {
	cfg RouteConfig
}

// NewRouter validates cfg and returns its router.
func NewRouter(cfg RouteConfig) (*Router, error) {
	if cfg.Strategy == "" {
		cfg.Strategy = RouteSingle
	}
	if cfg.Default == "" {
		return nil, fmt.Errorf("llm routing: default model is empty")
	}
	switch cfg.Strategy {
	case RouteSingle, RoutePerKind:
	case RouteCheapOrchestrator:
		if cfg.CheapUntil < 1 {
			return nil, fmt.Errorf("llm routing: cheap_until must be at least 1 for %s, got %d", cfg.Strategy, cfg.CheapUntil)
		}
	case RouteRounds:
		if len(cfg.Rounds) == 0 {
			return nil, fmt.Errorf("llm routing: strategy %s needs at least one rounds entry", cfg.Strategy)
		}
		for i, r := range cfg.Rounds {
			switch {
			case r.From < 1:
				return nil, fmt.Errorf("llm routing: rounds[%d].from must be at least 1, got %d", i, r.From)
			case r.To != 0 && r.To < r.From:
				return nil, fmt.Errorf("llm routing: rounds[%d]: to %d is before from %d (0 means no end)", i, r.To, r.From)
			case r.Model == "":
				return nil, fmt.Errorf("llm routing: rounds[%d].model is empty", i)
			}
		}
	default:
		return nil, fmt.Errorf("llm routing: unknown strategy %q (want %s, %s, %s or %s)",
			cfg.Strategy, RouteSingle, RoutePerKind, RouteCheapOrchestrator, RouteRounds)
	}
	for _, k := range slices.Sorted(maps.Keys(cfg.PerKind)) {
		if cfg.PerKind[k] == "" {
			return nil, fmt.Errorf("llm routing: per_kind.%s is empty", k)
		}
	}
	cfg.PerKind = maps.Clone(cfg.PerKind)
	cfg.Rounds = slices.Clone(cfg.Rounds)
	return &Router{cfg: cfg}, nil
}

// Model is the model for an agent of kind in round (from 1).
func (r *Router) Model(kind string, round int) string {
	return r.Pick(kind, round, "")
}

// Pick is Model with an explicit per-call override (a parent delegating
// with model=X), which wins over every rule; the override may be an alias.
func (r *Router) Pick(kind string, round int, override string) string {
	if override != "" {
		return r.resolve(override)
	}
	c := &r.cfg
	if c.Strategy == RouteSingle {
		return c.Default
	}
	if m, ok := c.PerKind[kind]; ok {
		return r.resolve(m)
	}
	switch c.Strategy {
	case RouteCheapOrchestrator:
		if round <= c.CheapUntil {
			return r.resolve(AliasCheap)
		}
	case RouteRounds:
		for _, rr := range c.Rounds {
			if round >= rr.From && (rr.To == 0 || round <= rr.To) {
				return r.resolve(rr.Model)
			}
		}
	}
	return c.Default
}

// resolve turns an alias into a model name.
func (r *Router) resolve(m string) string {
	switch m {
	case AliasCheap:
		if r.cfg.Cheap != "" {
			return r.cfg.Cheap
		}
		return r.cfg.Default
	case AliasDefault:
		return r.cfg.Default
	}
	return m
}
