package llm

import (
	"fmt"
	"maps"
	"slices"
	"sync"
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

// Totals is usage and cost summed over calls.
type Totals struct {
	Usage Usage   `json:"usage"`
	Cost  float64 `json:"cost_usd"`
	Calls int     `json:"calls"`
	// Unpriced lists the models used that have no price (their cost
	// counts as 0), sorted.
	Unpriced []string `json:"unpriced,omitempty"`
}

func (t *Totals) add(model string, u Usage, usd float64, priced bool) {
	t.Usage.PromptTokens += u.PromptTokens
	t.Usage.CompletionTokens += u.CompletionTokens
	t.Usage.CachedTokens += u.CachedTokens
	t.Cost += usd
	t.Calls++
	if !priced {
		if i, found := slices.BinarySearch(t.Unpriced, model); !found {
			t.Unpriced = slices.Insert(t.Unpriced, i, model)
		}
	}
}

func (t Totals) clone() Totals {
	t.Unpriced = slices.Clone(t.Unpriced)
	return t
}

// CostTracker sums usage and cost per agent, per model and per run. It is
// safe for concurrent use; the zero value is not usable, use NewCostTracker.
type CostTracker struct {
	pricing Pricing
	mu      sync.Mutex
	total   Totals
	agents  map[string]*Totals
	models  map[string]*Totals
}

// NewCostTracker returns a tracker pricing calls with p.
func NewCostTracker(p Pricing) *CostTracker {
	return &CostTracker{pricing: p, agents: make(map[string]*Totals), models: make(map[string]*Totals)}
}

// Add records one call of agent on model and returns its cost.
func (t *CostTracker) Add(agent, model string, u Usage) float64 {
	usd, priced := t.pricing.Priced(model, u)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total.add(model, u, usd, priced)
	bucket(t.agents, agent).add(model, u, usd, priced)
	bucket(t.models, model).add(model, u, usd, priced)
	return usd
}

func bucket(m map[string]*Totals, key string) *Totals {
	b := m[key]
	if b == nil {
		b = &Totals{}
		m[key] = b
	}
	return b
}

// Totals returns the run's totals so far.
func (t *CostTracker) Totals() Totals {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total.clone()
}

// ByAgent returns the totals of each agent so far.
func (t *CostTracker) ByAgent() map[string]Totals {
	return t.snapshot(t.agents)
}

// ByModel returns the totals of each model so far.
func (t *CostTracker) ByModel() map[string]Totals {
	return t.snapshot(t.models)
}

func (t *CostTracker) snapshot(m map[string]*Totals) map[string]Totals {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]Totals, len(m))
	for k, v := range m {
		out[k] = v.clone()
	}
	return out
}
