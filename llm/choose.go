package llm

// Choice is what decides an agent's model in one round.
type Choice struct {
	Kind  string // the agent's kind
	Round int    // from 1
	// Override is the model a delegate call asked for (a model or an
	// alias); it wins over everything.
	Override string
	// KindModel is the kind's own model (an agent file's model: line).
	KindModel string
	// Role is the kind's model role when no rule names it: RoleCheap,
	// RoleParent or RoleDefault ("" = RoleDefault).
	Role string
	// ParentModel is the parent's current model, for the parent role.
	ParentModel string
}

// The model roles of agent kinds (the kinds' model_role): which model an
// agent gets when no rule names its kind.
const (
	RoleCheap   = AliasCheap   // the cheap model (RouteConfig.Cheap)
	RoleParent  = "parent"     // the delegating agent's current model
	RoleDefault = AliasDefault // the default model (RouteConfig.Default)
)

// ValidRole reports whether role is a model role ("" means RoleDefault).
func ValidRole(role string) bool {
	switch role {
	case "", RoleCheap, RoleParent, RoleDefault:
		return true
	}
	return false
}

// RootKind is the kind the round-based strategies steer.
const RootKind = "root"

// Choose is the one place an agent's model is decided, from the
// configuration (which already holds flags and environment: Default,
// Cheap, the strategy and its rules) and the agent's kind and round:
//
//  1. the delegate call's override;
//  2. the kind's own model;
//  3. the strategy: single puts every agent on Default; per_kind rules
//     apply to their kinds under every other strategy; cheap-orchestrator
//     and rounds steer the root's rounds;
//  4. the kind's role: cheap → Cheap, parent → the parent's model,
//     default → Default.
func (r *Router) Choose(c Choice) string {
	if c.Override != "" {
		return r.resolve(c.Override)
	}
	if c.KindModel != "" {
		return r.resolve(c.KindModel)
	}
	cfg := &r.cfg
	switch {
	case cfg.Strategy == RouteSingle:
		return cfg.Default
	case cfg.PerKind[c.Kind] != "":
		return r.resolve(cfg.PerKind[c.Kind])
	case c.Kind == RootKind && (cfg.Strategy == RouteCheapOrchestrator || cfg.Strategy == RouteRounds):
		return r.Pick(c.Kind, c.Round, "")
	}
	switch c.Role {
	case RoleCheap:
		return r.resolve(AliasCheap)
	case RoleParent:
		if c.ParentModel != "" {
			return c.ParentModel
		}
	}
	return cfg.Default
}
