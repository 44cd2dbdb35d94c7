package actors

import (
	"sync"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/internal/convo"
)

// Within the interval the latest checkpoint wins; flush writes it at once.
func TestCheckpointerCoalescesAndFlushes(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var written []int
	w := newCheckpointer(time.Hour, func(ck *convo.Checkpoint) (string, error) {
		mu.Lock()
		written = append(written, ck.Round)
		mu.Unlock()
		return "", nil
	}, func(*convo.Checkpoint, string, error) {})
	w.enqueue(&convo.Checkpoint{Round: 1})
	w.flush()
	for r := 2; r <= 5; r++ { // all within the hour after round 1's write
		w.enqueue(&convo.Checkpoint{Round: r})
	}
	w.flush()
	mu.Lock()
	defer mu.Unlock()
	if len(written) != 2 || written[0] != 1 || written[1] != 5 {
		t.Errorf("written rounds %v, want [1 5]", written)
	}
}
