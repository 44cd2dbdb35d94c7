package llm_test

import (
	"math"
	"strings"
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
