package budget

import (
	"maps"
	"time"

	"github.com/troupe-ai/troupe/messages"
)

// wire converts a spend to its payload form.
func (s spend) wire() messages.BudgetUsage {
	return messages.BudgetUsage{Tokens: s.tok, CostUSD: toUSD(s.usd), ToolCalls: s.calls}
}

// snapshot reports the ledger: run totals, one line per lease in grant
// order, and a rollup per kind.
func (a *budgetActor) snapshot() messages.BudgetSnapshot {
	s := messages.BudgetSnapshot{V: messages.BudgetSnapshotVersion, Run: a.run, Time: time.Now().UTC(),
		Limits: a.limits.wire(), Used: a.pool.subtree.wire(), Slots: a.slots,
		KindSlots: maps.Clone(a.kindSlots), Waiting: len(a.waiters),
		Exhausted: a.exhaustedBy != "", ExhaustedBy: a.exhaustedBy,
		Agents: make([]messages.BudgetAgent, 0, len(a.granted)),
		ByKind: map[string]messages.BudgetKindTotals{}}
	for _, k := range a.pool.children {
		s.Reserved += k.footprint().tok
	}
	s.Available = a.pool.available().tok
	for _, n := range a.granted {
		s.Agents = append(s.Agents, a.agentLine(n))
		t := s.ByKind[n.kind]
		t.Agents++
		if n.live() {
			t.Live++
		}
		t.Used.Tokens += n.own.tok
		t.Used.ToolCalls += n.own.calls
		t.Used.CostUSD = toUSD(toNano(t.Used.CostUSD) + n.own.usd)
		s.ByKind[n.kind] = t
	}
	return s
}

func (a *budgetActor) agentLine(n *node) messages.BudgetAgent {
	line := messages.BudgetAgent{Agent: n.id, Kind: n.kind, State: n.state,
		Granted: n.granted.tok, Available: n.available().tok,
		Used: n.own.wire(), Subtree: n.subtree.wire(), Children: len(n.children),
		Descendants: n.descendant, AcquiredAt: n.acquiredAt.UTC()}
	if a.usdLimited {
		line.GrantedUSD = toUSD(n.granted.usd)
	}
	if n.parent != nil && n.parent.parent != nil {
		line.Parent = n.parent.id
	}
	if n.live() {
		line.Reserved = n.footprint().tok
	} else {
		at := n.releasedAt.UTC()
		line.ReleasedAt = &at
		line.Available = 0
	}
	return line
}
