package changes

import (
	"context"
	"sync"
)

// coalesced takes an observation that is costly and whose result many
// callers can share (a snapshot of the workspace) on their behalf, one
// at a time. A caller gets the result of a take that started after it
// asked, so the result holds every change made before it asked; the
// callers that ask while a take is under way all share the next one. A
// burst of delegations thus costs two snapshots, not one each.
type coalesced[T any] struct {
	ctx context.Context // a take is bound to it, not to its callers'
	do  func(context.Context) (T, error)

	busy sync.Mutex // held by the take under way
	mu   sync.Mutex
	next *flight[T] // the take that callers asking now share; not started
}

// flight is one take and the callers sharing it.
type flight[T any] struct {
	done    chan struct{}
	callers int // guarded by coalesced.mu
	val     T
	err     error
}

// get returns the result of a take started after the call; when ctx
// ends first, ctx's error (the take goes on for the others).
func (c *coalesced[T]) get(ctx context.Context) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err // a take already done may not hold what it asks for
	}
	c.mu.Lock()
	f := c.next
	if f == nil {
		f = &flight[T]{done: make(chan struct{})}
		c.next = f
		go c.take(f)
	}
	f.callers++
	c.mu.Unlock()
	select {
	case <-f.done:
		return f.val, f.err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// take runs f once the take under way has ended. From the moment it
// starts, callers join the next flight.
func (c *coalesced[T]) take(f *flight[T]) {
	c.busy.Lock()
	defer c.busy.Unlock()
	c.mu.Lock()
	c.next = nil
	c.mu.Unlock()
	f.val, f.err = c.do(c.ctx)
	close(f.done)
}

// waiting is how many callers share the take not yet started.
func (c *coalesced[T]) waiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.next == nil {
		return 0
	}
	return c.next.callers
}
