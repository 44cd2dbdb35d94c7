package changes

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/internal/testfiles"
)

// Callers asking while a take is under way share the next take, which
// starts after they asked: they see the change made meanwhile, and a
// burst of callers costs two takes.
func TestCallersDuringATakeShareTheNext(t *testing.T) {
	var state, calls atomic.Int64
	state.Store(1)
	entered, release := make(chan struct{}), make(chan struct{})
	c := coalesced[int64]{ctx: t.Context(), do: func(context.Context) (int64, error) {
		seen := state.Load()
		if calls.Add(1) == 1 {
			close(entered)
			<-release
		}
		return seen, nil
	}}
	first := make(chan int64, 1)
	go func() { v, _ := c.get(t.Context()); first <- v }()
	<-entered
	state.Store(2) // an edit made while the first take is under way
	const n = 10
	var wg sync.WaitGroup
	got := make([]int64, n)
	for i := range n {
		wg.Add(1)
		go func() { defer wg.Done(); got[i], _ = c.get(t.Context()) }()
	}
	waitFor(t, 10*time.Second, func() error {
		if w := c.waiting(); w != n {
			return errors.New("callers not all waiting yet")
		}
		return nil
	})
	close(release)
	wg.Wait()
	if v := <-first; v != 1 {
		t.Errorf("the first caller got state %d, want 1", v)
	}
	for i, v := range got {
		if v != 2 {
			t.Errorf("caller %d got state %d, taken before it asked; want 2", i, v)
		}
	}
	if calls.Load() != 2 {
		t.Errorf("%d takes for %d callers, want 2", calls.Load(), n+1)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := c.get(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("a caller whose context ended got %v", err)
	}
}

// waitFor calls fn until it returns nil, failing t when it has not
// after total.
var waitFor = testfiles.Poll
