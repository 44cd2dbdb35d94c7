package llm

import "testing"

// Every precedence case of Choose, in one table.
func TestChoose(t *testing.T) {
	mk := func(rc RouteConfig) *Router {
		rc.Default, rc.Cheap = "big", "small"
		r, err := NewRouter(rc)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	perKind := mk(RouteConfig{Strategy: RoutePerKind, PerKind: map[string]string{"explore": "cheap", "worker": "default"}})
	single := mk(RouteConfig{Strategy: RouteSingle, PerKind: map[string]string{"explore": "cheap"}})
	orch := mk(RouteConfig{Strategy: RouteCheapOrchestrator, CheapUntil: 2, PerKind: map[string]string{"explore": "cheap"}})
	rounds := mk(RouteConfig{Strategy: RouteRounds, Rounds: []RoundRoute{{From: 3, To: 4, Model: "mid"}}})
	for _, c := range []struct {
		name string
		r    *Router
		c    Choice
		want string
	}{
		{"override wins", perKind, Choice{Kind: "explore", Override: "x", KindModel: "y"}, "x"},
		{"override alias", perKind, Choice{Kind: "worker", Override: "cheap"}, "small"},
		{"kind's own model", single, Choice{Kind: "reviewer", KindModel: "gpt-4.1"}, "gpt-4.1"},
		{"single: everyone on default", single, Choice{Kind: "explore", Role: RoleCheap}, "big"},
		{"per-kind rule", perKind, Choice{Kind: "explore", Role: RoleParent, ParentModel: "p"}, "small"},
		{"per-kind alias default", perKind, Choice{Kind: "worker", Role: RoleParent, ParentModel: "p"}, "big"},
		{"no rule: parent role", perKind, Choice{Kind: "planner", Role: RoleParent, ParentModel: "p"}, "p"},
		{"no rule: parent role, no parent", perKind, Choice{Kind: "planner", Role: RoleParent}, "big"},
		{"no rule: cheap role", perKind, Choice{Kind: "scout", Role: RoleCheap}, "small"},
		{"no rule: default role", perKind, Choice{Kind: "root", Role: RoleDefault}, "big"},
		{"cheap orchestrator: early root", orch, Choice{Kind: "root", Round: 2, Role: RoleDefault}, "small"},
		{"cheap orchestrator: late root", orch, Choice{Kind: "root", Round: 3, Role: RoleDefault}, "big"},
		{"cheap orchestrator: a worker's role", orch, Choice{Kind: "worker", Round: 1, Role: RoleParent, ParentModel: "p"}, "p"},
		{"cheap orchestrator: per-kind still", orch, Choice{Kind: "explore", Round: 9}, "small"},
		{"rounds: covered root round", rounds, Choice{Kind: "root", Round: 3}, "mid"},
		{"rounds: uncovered root round", rounds, Choice{Kind: "root", Round: 5}, "big"},
		{"rounds: not the root", rounds, Choice{Kind: "worker", Round: 3, Role: RoleCheap}, "small"},
	} {
		if got := c.r.Choose(c.c); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestValidRole(t *testing.T) {
	for _, r := range []string{"", RoleCheap, RoleParent, RoleDefault} {
		if !ValidRole(r) {
			t.Errorf("%q refused", r)
		}
	}
	for _, r := range []string{"Cheap", "small", "inherit"} {
		if ValidRole(r) {
			t.Errorf("%q accepted", r)
		}
	}
}
