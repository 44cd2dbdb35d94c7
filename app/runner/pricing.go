package runner

import (
	"slices"
	"sync"

	"github.com/troupe-ai/troupe/messages"
)

// pricingWatch notes the models that answered without a price, so totals
// say "cost unknown" instead of a wrong $0.
type pricingWatch struct {
	mu       sync.Mutex
	unpriced []string
}

// Emit implements actors.Emitter.
func (p *pricingWatch) Emit(ev messages.Event) {
	if ev.Type != messages.EvtLLMResponse {
		return
	}
	d, err := messages.DecodeAs[messages.LLMResponse](ev)
	if err != nil || d.CostKnown {
		return
	}
	p.mu.Lock()
	if !slices.Contains(p.unpriced, d.Model) {
		p.unpriced = append(p.unpriced, d.Model)
		slices.Sort(p.unpriced)
	}
	p.mu.Unlock()
}

// models lists the unpriced models seen.
func (p *pricingWatch) models() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.unpriced)
}
