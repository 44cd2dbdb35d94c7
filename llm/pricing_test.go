package llm_test

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/troupe-ai/troupe/llm"
)

func TestPricingCost(t *testing.T) {
	t.Parallel()
	p := llm.Pricing{
		"gpt-4o-mini": {Input: 0.15, CachedInput: 0.075, Output: 0.6},
		"no-cache":    {Input: 1, Output: 2},
		"free":        {},
	}
	cases := []struct {
		name   string
		model  string
		u      llm.Usage
		want   float64
		priced bool
	}{
		// 1M input at 0.15 + 1M output at 0.6.
		{"plain", "gpt-4o-mini", llm.Usage{PromptTokens: 1_000_000, CompletionTokens: 1_000_000}, 0.75, true},
		// 600k uncached at 0.15 (0.09) + 400k cached at 0.075 (0.03) + 10k out at 0.6 (0.006).
		{"cached", "gpt-4o-mini", llm.Usage{PromptTokens: 1_000_000, CachedTokens: 400_000, CompletionTokens: 10_000}, 0.126, true},
		// No CachedInput price: cached tokens at Input (2000 at $1/M = 0.002) + 1000 out at 2 (0.002).
		{"no cache price", "no-cache", llm.Usage{PromptTokens: 2000, CachedTokens: 1500, CompletionTokens: 1000}, 0.004, true},
		// Cached more than prompt (a provider bug) is clamped: all 100 at cached rate.
		{"cached clamped", "gpt-4o-mini", llm.Usage{PromptTokens: 100, CachedTokens: 500}, 100 * 0.075 / 1e6, true},
		{"free model", "free", llm.Usage{PromptTokens: 1000, CompletionTokens: 1000}, 0, true},
		{"unknown model", "mystery", llm.Usage{PromptTokens: 1000, CompletionTokens: 1000}, 0, false},
		{"zero usage", "gpt-4o-mini", llm.Usage{}, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, priced := p.Priced(tc.model, tc.u)
			if math.Abs(got-tc.want) > 1e-12 || priced != tc.priced {
				t.Errorf("Priced = %v, %v; want %v, %v", got, priced, tc.want, tc.priced)
			}
			if c := p.Cost(tc.model, tc.u); c != got {
				t.Errorf("Cost = %v, Priced = %v", c, got)
			}
		})
	}
	if pr, ok := p.Lookup("no-cache"); !ok || pr.Output != 2 {
		t.Errorf("Lookup(no-cache) = %+v, %v", pr, ok)
	}
	if _, ok := p.Lookup("mystery"); ok {
		t.Error("Lookup found an unknown model")
	}
	var nilPricing llm.Pricing
	if c, ok := nilPricing.Priced("x", llm.Usage{PromptTokens: 5}); c != 0 || ok {
		t.Errorf("nil pricing: %v %v", c, ok)
	}
}

func TestPricingValidate(t *testing.T) {
	t.Parallel()
	err := llm.Pricing{"ok": {Input: 1}, "bad": {Output: -1}}.Validate()
	if err == nil || !strings.Contains(err.Error(), "pricing.bad: negative price") {
		t.Errorf("err = %v", err)
	}
}

func TestCostTracker(t *testing.T) {
	t.Parallel()
	tr := llm.NewCostTracker(llm.Pricing{"m": {Input: 1, Output: 10}})
	// Many agents add concurrently: 20 agents × 50 calls of 1000 in / 100 out.
	var wg sync.WaitGroup
	for a := range 20 {
		wg.Go(func() {
			for range 50 {
				tr.Add(fmt.Sprintf("agent-%d", a), "m", llm.Usage{PromptTokens: 1000, CompletionTokens: 100})
			}
		})
	}
	wg.Go(func() { tr.Add("agent-x", "unpriced-b", llm.Usage{PromptTokens: 7}) })
	wg.Go(func() { tr.Add("agent-x", "unpriced-a", llm.Usage{CompletionTokens: 3, CachedTokens: 1}) })
	wg.Go(func() { // readers race with writers
		for range 50 {
			_ = tr.Totals()
			_ = tr.ByAgent()
		}
	})
	wg.Wait()

	tot := tr.Totals()
	// 1000 calls: 1M in at $1/M + 100k out at $10/M = $2.
	if tot.Calls != 1002 || tot.Usage.PromptTokens != 1_000_007 || tot.Usage.CompletionTokens != 100_003 || tot.Usage.CachedTokens != 1 {
		t.Errorf("totals = %+v", tot)
	}
	if math.Abs(tot.Cost-2) > 1e-9 {
		t.Errorf("total cost = %v, want 2", tot.Cost)
	}
	if strings.Join(tot.Unpriced, ",") != "unpriced-a,unpriced-b" {
		t.Errorf("unpriced = %v", tot.Unpriced)
	}
	by := tr.ByAgent()
	if len(by) != 21 || by["agent-3"].Calls != 50 || math.Abs(by["agent-3"].Cost-0.1) > 1e-12 || by["agent-x"].Cost != 0 {
		t.Errorf("by agent: %d agents, agent-3 %+v, agent-x %+v", len(by), by["agent-3"], by["agent-x"])
	}
	models := tr.ByModel()
	if models["m"].Calls != 1000 || models["unpriced-a"].Calls != 1 {
		t.Errorf("by model = %+v", models)
	}
	// Snapshots are copies.
	tot.Unpriced[0] = "changed"
	if tr.Totals().Unpriced[0] != "unpriced-a" {
		t.Error("Totals shares its slice with the tracker")
	}
}

func TestAddReturnsCost(t *testing.T) {
	t.Parallel()
	tr := llm.NewCostTracker(llm.Pricing{"m": {Input: 3, Output: 15}})
	if got := tr.Add("a", "m", llm.Usage{PromptTokens: 1_000_000, CompletionTokens: 200_000}); math.Abs(got-6) > 1e-12 {
		t.Errorf("Add = %v, want 6", got)
	}
}
