package budget

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// res is an amount of the two pooled resources: tokens and nano-dollars.
type res struct{ tok, usd int64 }

func (a res) add(b res) res { return res{a.tok + b.tok, a.usd + b.usd} }
func (a res) sub(b res) res { return res{a.tok - b.tok, a.usd - b.usd} }
func (a res) max(b res) res { return res{max(a.tok, b.tok), max(a.usd, b.usd)} }

// spend is what an agent spent: tokens, nano-dollars, tool calls.
type spend struct{ tok, usd, calls int64 }

func (a *spend) add(b spend) { a.tok += b.tok; a.usd += b.usd; a.calls += b.calls }

// node is a pool in the ledger: the run itself (parent nil, id "") or one
// agent's lease. A lease's pool is its grant; its children's leases are
// carved out of it.
//
// need is what the pool has committed: its own consumption (own usage plus
// the final consumption of released children) plus the footprint of each
// live child, where a child's footprint is the larger of its grant and its
// own need (a child that overshot its grant takes the excess from here).
// available = granted - need.
type node struct {
	id, kind string
	parent   *node
	children map[string]*node // live children only

	granted  res
	need     res
	consumed res

	own, subtree spend // own usage; own plus all descendants'

	state      State
	ticket     uint64
	order      uint64
	holder     *actor.PID
	acquiredAt time.Time
	releasedAt time.Time
	descendant int // number of agents ever leased below this one

	returned int64 // tokens given back to the parent when the lease ended
	explicit bool  // a Release for this agent was handled
}

func (n *node) live() bool { return n.state != StateReleased }

// footprint is what a live lease takes from its parent's pool.
func (n *node) footprint() res { return n.granted.max(n.need) }

// available is what is left of the pool for the agent itself and for new
// children; negative when overshot.
func (n *node) available() res { return n.granted.sub(n.need) }

// ceiling is the most this pool could ever have available: what is not yet
// consumed for good.
func (n *node) ceiling() res { return n.granted.sub(n.consumed) }

// adjust adds delta to n's need and carries the change of n's footprint up
// to the run.
func adjust(n *node, delta res) {
	for n != nil {
		if n.parent == nil {
			n.need = n.need.add(delta)
			return
		}
		before := n.footprint()
		n.need = n.need.add(delta)
		delta = n.footprint().sub(before)
		if delta == (res{}) {
			return
		}
		n = n.parent
	}
}

// charge books s against n: its consumption, its own usage and the subtree
// totals of it and all its ancestors (the run's subtree is the run total).
func charge(n *node, s spend) {
	n.consumed = n.consumed.add(res{s.tok, s.usd})
	n.own.add(s)
	for a := n; a != nil; a = a.parent {
		a.subtree.add(s)
	}
	adjust(n, res{s.tok, s.usd})
}

// lend carves child's grant out of parent's pool.
func lend(parent, child *node) {
	child.parent = parent
	parent.children[child.id] = child
	for a := parent; a != nil; a = a.parent {
		a.descendant++
	}
	adjust(parent, child.granted)
}

// grow adds more to n's grant, taken from its parent's pool.
func grow(n *node, more res) {
	before := n.footprint()
	n.granted = n.granted.add(more)
	adjust(n.parent, n.footprint().sub(before))
}

// settle ends a live lease whose children are all released: its
// consumption becomes its parent's for good and the rest of its footprint
// returns to the parent's pool. It returns the tokens given back.
func settle(n *node, now time.Time) int64 {
	before := n.footprint()
	p := n.parent
	delete(p.children, n.id)
	p.consumed = p.consumed.add(n.consumed)
	adjust(p, n.consumed.sub(before))
	n.need = n.consumed
	n.state = StateReleased
	n.releasedAt = now
	return max(0, before.tok-n.consumed.tok)
}
