package budget

import (
	"errors"
	"fmt"
)

// checkInvariants verifies the ledger from scratch; tests run it after
// every message (withInvariantCheck). It returns the first broken rule.
func (a *budgetActor) checkInvariants() error {
	if err := a.checkPool(a.pool); err != nil {
		return err
	}
	slots, kinds := 0, map[string]int{}
	for _, n := range a.granted {
		if !n.live() {
			if len(n.children) != 0 {
				return fmt.Errorf("released lease %s still has %d live children", n.id, len(n.children))
			}
			continue
		}
		slots++
		kinds[n.kind]++
		if n.parent.children[n.id] != n {
			return fmt.Errorf("live lease %s is missing from its parent's children", n.id)
		}
		if err := a.checkPool(n); err != nil {
			return err
		}
	}
	if slots != a.slots {
		return fmt.Errorf("slots: counted %d live leases, ledger says %d", slots, a.slots)
	}
	if a.limits.MaxConcurrent > 0 && slots > a.limits.MaxConcurrent {
		return fmt.Errorf("slots: %d live leases over MaxConcurrent %d", slots, a.limits.MaxConcurrent)
	}
	for kind, k := range kinds {
		if a.kindSlots[kind] != k {
			return fmt.Errorf("kind %s: counted %d live leases, ledger says %d", kind, k, a.kindSlots[kind])
		}
		if c, ok := a.limits.kindCap(kind); ok && k > c {
			return fmt.Errorf("kind %s: %d live leases over its cap %d", kind, k, c)
		}
	}
	if len(a.waiters) != len(a.waiting) {
		return fmt.Errorf("queue: %d waiters, %d indexed", len(a.waiters), len(a.waiting))
	}
	if a.exhaustedBy != "" && len(a.waiters) > 0 {
		return errors.New("queue: requests still wait on an exhausted run")
	}
	return nil
}

// checkPool verifies one pool: its children's grants fit in its own grant
// (reservations never exceed a limit), and its need equals its consumption
// plus its live children's footprints.
func (a *budgetActor) checkPool(p *node) error {
	var grants, need res
	need = p.consumed
	for _, k := range p.children {
		if !k.live() {
			return fmt.Errorf("pool %s lists released child %s", poolName(p), k.id)
		}
		grants = grants.add(k.granted)
		need = need.add(k.footprint())
	}
	if grants.tok > p.granted.tok || grants.usd > p.granted.usd {
		return fmt.Errorf("pool %s: children reserve %+v, over its grant %+v", poolName(p), grants, p.granted)
	}
	if need != p.need {
		return fmt.Errorf("pool %s: need %+v, recomputed %+v", poolName(p), p.need, need)
	}
	return nil
}
