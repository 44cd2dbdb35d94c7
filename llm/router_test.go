package llm_test

import (
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/llm"
)

func TestRouterModel(t *testing.T) {
	t.Parallel()
	perKind := map[string]string{"explore": llm.AliasCheap, "planner": "planner-model"}
	cases := []struct {
		name     string
		cfg      llm.RouteConfig
		kind     string
		round    int
		override string
		want     string
	}{
		{"single", llm.RouteConfig{Default: "big", Cheap: "small", PerKind: perKind}, "explore", 1, "", "big"},
		{"empty strategy is single", llm.RouteConfig{Default: "big"}, "root", 9, "", "big"},
		{"single override wins", llm.RouteConfig{Default: "big"}, "root", 1, "other", "other"},
		{"override alias", llm.RouteConfig{Default: "big", Cheap: "small"}, "root", 1, llm.AliasCheap, "small"},

		{"per-kind alias", llm.RouteConfig{Strategy: llm.RoutePerKind, Default: "big", Cheap: "small", PerKind: perKind}, "explore", 3, "", "small"},
		{"per-kind name", llm.RouteConfig{Strategy: llm.RoutePerKind, Default: "big", PerKind: perKind}, "planner", 1, "", "planner-model"},
		{"per-kind other kind", llm.RouteConfig{Strategy: llm.RoutePerKind, Default: "big", PerKind: perKind}, "worker", 1, "", "big"},
		{"per-kind cheap unset falls back to default", llm.RouteConfig{Strategy: llm.RoutePerKind, Default: "big", PerKind: perKind}, "explore", 1, "", "big"},
		{"per-kind override wins", llm.RouteConfig{Strategy: llm.RoutePerKind, Default: "big", Cheap: "small", PerKind: perKind}, "explore", 1, "big", "big"},

		{"cheap-orchestrator early", llm.RouteConfig{Strategy: llm.RouteCheapOrchestrator, Default: "big", Cheap: "small", CheapUntil: 2}, "root", 1, "", "small"},
		{"cheap-orchestrator last cheap round", llm.RouteConfig{Strategy: llm.RouteCheapOrchestrator, Default: "big", Cheap: "small", CheapUntil: 2}, "root", 2, "", "small"},
		{"cheap-orchestrator after", llm.RouteConfig{Strategy: llm.RouteCheapOrchestrator, Default: "big", Cheap: "small", CheapUntil: 2}, "root", 3, "", "big"},
		{"cheap-orchestrator per-kind", llm.RouteConfig{Strategy: llm.RouteCheapOrchestrator, Default: "big", Cheap: "small", CheapUntil: 2, PerKind: perKind}, "planner", 1, "", "planner-model"},

		{"rounds first range", roundsCfg(), "root", 1, "", "a"},
		{"rounds range end inclusive", roundsCfg(), "root", 3, "", "a"},
		{"rounds gap uses default", roundsCfg(), "root", 4, "", "big"},
		{"rounds open end", roundsCfg(), "root", 100, "", "small"},
		{"rounds overlap first wins", roundsCfg(), "root", 6, "", "b"},
		{"rounds alias", roundsCfg(), "root", 8, "", "small"},
		{"rounds per-kind", roundsCfg(), "explore", 1, "", "small"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := llm.NewRouter(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Pick(tc.kind, tc.round, tc.override); got != tc.want {
				t.Errorf("Pick(%q, %d, %q) = %q, want %q", tc.kind, tc.round, tc.override, got, tc.want)
			}
			if tc.override == "" {
				if got := r.Model(tc.kind, tc.round); got != tc.want {
					t.Errorf("Model(%q, %d) = %q, want %q", tc.kind, tc.round, got, tc.want)
				}
			}
		})
	}
}

// roundsCfg: rounds 1-3 on a, 5-7 on b, 6 also on c (shadowed), 8- cheap.
func roundsCfg() llm.RouteConfig {
	return llm.RouteConfig{Strategy: llm.RouteRounds, Default: "big", Cheap: "small",
		PerKind: map[string]string{"explore": "small"},
		Rounds: []llm.RoundRoute{{From: 1, To: 3, Model: "a"}, {From: 5, To: 7, Model: "b"},
			{From: 6, To: 6, Model: "c"}, {From: 8, Model: llm.AliasCheap}}}
}

func TestRouterConfigErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		cfg  llm.RouteConfig
		want string
	}{
		{"no default", llm.RouteConfig{}, "default model is empty"},
		{"unknown strategy", llm.RouteConfig{Strategy: "random", Default: "m"}, `unknown strategy "random"`},
		{"cheap until", llm.RouteConfig{Strategy: llm.RouteCheapOrchestrator, Default: "m"}, "cheap_until must be at least 1"},
		{"no rounds", llm.RouteConfig{Strategy: llm.RouteRounds, Default: "m"}, "at least one rounds entry"},
		{"from zero", llm.RouteConfig{Strategy: llm.RouteRounds, Default: "m", Rounds: []llm.RoundRoute{{From: 0, Model: "x"}}}, "rounds[0].from must be at least 1"},
		{"to before from", llm.RouteConfig{Strategy: llm.RouteRounds, Default: "m", Rounds: []llm.RoundRoute{{From: 1, To: 1, Model: "x"}, {From: 4, To: 2, Model: "x"}}}, "rounds[1]: to 2 is before from 4"},
		{"round model", llm.RouteConfig{Strategy: llm.RouteRounds, Default: "m", Rounds: []llm.RoundRoute{{From: 1}}}, "rounds[0].model is empty"},
		{"per-kind empty", llm.RouteConfig{Strategy: llm.RoutePerKind, Default: "m", PerKind: map[string]string{"explore": ""}}, "per_kind.explore is empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := llm.NewRouter(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestRouterCopiesConfig(t *testing.T) {
	t.Parallel()
	perKind := map[string]string{"explore": "small"}
	r, err := llm.NewRouter(llm.RouteConfig{Strategy: llm.RoutePerKind, Default: "big", PerKind: perKind})
	if err != nil {
		t.Fatal(err)
	}
	perKind["explore"] = "changed"
	if got := r.Model("explore", 1); got != "small" {
		t.Errorf("router follows the caller's map after construction: %q", got)
	}
}
