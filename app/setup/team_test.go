package setup

import (
	"testing"

	"github.com/troupe-ai/troupe/app/config"
	"github.com/troupe-ai/troupe/llm"
)

func TestRouterFromConfig(t *testing.T) {
	m := config.Model{Default: "big", Cheap: "small"}
	cases := []struct {
		routing config.Routing
		kind    string
		round   int
		want    string
	}{
		{config.Routing{Strategy: "single"}, "explore", 1, "big"},
		{config.Routing{Strategy: "per-kind", PerKind: map[string]string{"explore": "cheap"}}, "explore", 1, "small"},
		// No rule for the kind: its role decides (the root's is default).
		{config.Routing{Strategy: "per-kind", PerKind: map[string]string{"explore": "cheap"}}, "root", 1, "big"},
		{config.Routing{Strategy: "per-kind", PerKind: map[string]string{"worker": "default"}}, "worker", 1, "big"},
		{config.Routing{Strategy: "cheap-orchestrator", CheapUntil: 3}, "root", 3, "small"},
		{config.Routing{Strategy: "cheap-orchestrator", CheapUntil: 3}, "root", 4, "big"},
		// Round-based strategies steer the root only: a worker's role (parent) decides.
		{config.Routing{Strategy: "cheap-orchestrator", CheapUntil: 3}, "worker", 1, "parent-model"},
		{config.Routing{Strategy: "cheap-orchestrator", CheapUntil: 3, PerKind: map[string]string{"explore": "cheap"}}, "explore", 9, "small"},
		{config.Routing{Strategy: "rounds", Rounds: []config.RoundModel{{From: 2, To: 3, Model: "mid"}}}, "root", 2, "mid"},
		{config.Routing{Strategy: "rounds", Rounds: []config.RoundModel{{From: 2, To: 3, Model: "mid"}}}, "root", 4, "big"},
	}
	for _, c := range cases {
		m.Routing = c.routing
		route, err := router(m)
		if err != nil {
			t.Fatalf("%+v: %v", c.routing, err)
		}
		role := map[string]string{"root": llm.RoleDefault, "worker": llm.RoleParent, "explore": llm.RoleCheap}[c.kind]
		if got := route.Choose(llm.Choice{Kind: c.kind, Round: c.round, Role: role, ParentModel: "parent-model"}); got != c.want {
			t.Errorf("%s %s round %d: %q, want %q", c.routing.Strategy, c.kind, c.round, got, c.want)
		}
	}
	m.Routing = config.Routing{Strategy: "rounds"}
	if _, err := router(m); err == nil {
		t.Error("rounds strategy without rounds accepted")
	}
}
