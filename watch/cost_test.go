package watch

import (
	"strings"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/messages"
)

// A model without a price never shows as $0: the agent and the run say
// "cost unknown", or that part of the cost is unpriced.
func TestFrameSaysCostUnknown(t *testing.T) {
	tr := NewTree(4)
	tr.Apply(mkEvent(t, "run-unpriced1", "root", "", "root", messages.EvtAgentSpawned, 1, messages.AgentSpawned{Child: "root", Kind: "root"}))
	tr.Apply(mkEvent(t, "run-unpriced1", "root", "", "root", messages.EvtLLMResponse, 2,
		messages.LLMResponse{Round: 1, Model: "local", TokensIn: 100, TokensOut: 10}))
	text := strings.Join(Frame(tr, time.Now(), Layout{Width: 120}), "\n")
	if strings.Contains(text, "$0.0000") || strings.Count(text, "cost unknown") != 2 {
		t.Fatalf("an unpriced run shows a price:\n%s", text)
	}

	tr.Apply(mkEvent(t, "run-unpriced1", "explore-1", "root", "explore", messages.EvtLLMResponse, 1,
		messages.LLMResponse{Round: 1, Model: "priced", TokensIn: 100, TokensOut: 10, CostUSD: 0.5, CostKnown: true}))
	text = strings.Join(Frame(tr, time.Now(), Layout{Width: 120}), "\n")
	if !strings.Contains(text, "$0.5000 + unpriced") || !strings.Contains(text, "$0.5000 ·") {
		t.Fatalf("a partly priced run:\n%s", text)
	}
}

func TestCost(t *testing.T) {
	for _, c := range []struct {
		usd      float64
		unpriced bool
		want     string
	}{{0, false, "$0.0000"}, {1.25, false, "$1.2500"}, {0, true, "cost unknown"}, {0.01, true, "$0.0100 + unpriced"}} {
		if got := Cost(c.usd, c.unpriced); got != c.want {
			t.Errorf("Cost(%v, %v) = %q, want %q", c.usd, c.unpriced, got, c.want)
		}
	}
}
