package mcp

import (
	"context"
	"fmt"
	"sync"
)

// Limit bounds how many worktree instances of a run's MCP servers run at
// once (see Server.instanceFor): a run of a thousand workers in worktrees
// never starts a thousand servers. An instance holds a slot from its
// start until it stops. A start that finds every slot taken stops an idle
// instance (one in no call; its agent's next call starts it again) to
// take its slot, and otherwise waits for a slot to free, up to its call's
// timeout, which is then an error result naming the limit. It is safe for
// concurrent use.
type Limit struct {
	max int

	mu   sync.Mutex
	live map[*Server]bool
	wake chan struct{} // closed and replaced when a slot frees
	peak int
}

// NewLimit returns a limit of n instances at once (at least 1).
func NewLimit(n int) *Limit {
	return &Limit{max: max(1, n), live: map[*Server]bool{}, wake: make(chan struct{})}
}

// Max is the limit.
func (l *Limit) Max() int { return l.max }

// Live is how many instances hold a slot now.
func (l *Limit) Live() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.live)
}

// Peak is the most instances that held slots at once.
func (l *Limit) Peak() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.peak
}

// acquire takes a slot for inst, which is about to start: at once when
// one is free, else by stopping an idle instance, else when one frees.
// It fails when ctx ends or inst is closed first. inst's lock is held,
// so other instances are only tried (never waited on) for theirs.
func (l *Limit) acquire(ctx context.Context, inst *Server) error {
	for {
		l.mu.Lock()
		if len(l.live) < l.max {
			l.live[inst] = true
			l.peak = max(l.peak, len(l.live))
			l.mu.Unlock()
			return nil
		}
		others := make([]*Server, 0, len(l.live))
		for s := range l.live {
			if s != inst {
				others = append(others, s)
			}
		}
		wake := l.wake
		l.mu.Unlock()
		evicted := false
		for _, s := range others {
			if s.evictIdle() {
				evicted = true
				break
			}
		}
		if evicted {
			continue
		}
		select {
		case <-wake:
		case <-inst.done:
			return ErrClosed
		case <-ctx.Done():
			return fmt.Errorf("all %d MCP server instances for agents in worktrees (mcp.max_worktree_servers) are busy in other agents' calls; none freed before this call's timeout", l.max)
		}
	}
}

// release gives inst's slot back, if it holds one.
func (l *Limit) release(inst *Server) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.live[inst] {
		return
	}
	delete(l.live, inst)
	close(l.wake)
	l.wake = make(chan struct{})
}
