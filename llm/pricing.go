package llm

import (
	"fmt"
	"maps"
	"slices"
)

// Price is a model's price in USD per million tokens.
type Price struct {
	Input float64 `json:"input" yaml:"input"`
	// CachedInput prices prompt tokens served from the provider's cache;
	// 0 bills them at Input (no known discount).
	CachedInput float64 `json:"cached_input" yaml:"cached_input"`
	Output      float64 `json:"output" yaml:"output"`
}

// Pricing maps a model name, exactly as sent to the provider, to its price.
type Pricing map[string]Price

// Lookup returns the price of model and whether it has one.
func (p Pricing) Lookup(model string) (Price, bool) {
	pr, ok := p[model]
	return pr, ok
}

// Cost is the USD cost of u on model: cached prompt tokens at CachedInput,
// the other prompt tokens at Input, completion tokens at Output. A model
// without a price costs 0; Priced tells the two apart.
func (p Pricing) Cost(model string, u Usage) float64 {
	c, _ := p.Priced(model, u)
	return c
}

// Priced is Cost plus whether model has a price.
func (p Pricing) Priced(model string, u Usage) (float64, bool) {
	pr, ok := p[model]
	if !ok {
		return 0, false
	}
	cached := min(max(u.CachedTokens, 0), u.PromptTokens)
	cachedRate := pr.CachedInput
	if cachedRate == 0 {
		cachedRate = pr.Input
	}
	usd := float64(u.PromptTokens-cached)*pr.Input + float64(cached)*cachedRate + float64(u.CompletionTokens)*pr.Output
	return usd / 1e6, true
}

// Validate reports a negative price, naming the model.
func (p Pricing) Validate() error {
	for _, m := range slices.Sorted(maps.Keys(p)) {
		pr := p[m]
		if pr.Input < 0 || pr.CachedInput < 0 || pr.Output < 0 {
			return fmt.Errorf("llm config: pricing.%s: negative price", m)
		}
	}
	return nil
}
