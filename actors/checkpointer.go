package actors

import (
	"sync"

	"github.com/troupe-ai/troupe/internal/convo"
)

// checkpointer writes an agent's checkpoints off the round loop: the round
// goes on while the file is written and synced. Writes are serialized and
// the latest checkpoint wins (an older one still waiting is skipped, since
// the newer holds everything it held). flush waits for the last write.
type checkpointer struct {
	save    func(*convo.Checkpoint) (string, error)
	onSaved func(ck *convo.Checkpoint, path string, err error)

	mu      sync.Mutex
	pending *convo.Checkpoint
	running bool
	idle    *sync.Cond
}

func newCheckpointer(save func(*convo.Checkpoint) (string, error), onSaved func(*convo.Checkpoint, string, error)) *checkpointer {
	w := &checkpointer{save: save, onSaved: onSaved}
	w.idle = sync.NewCond(&w.mu)
	return w
}

// enqueue schedules ck to be written.
func (w *checkpointer) enqueue(ck *convo.Checkpoint) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pending = ck
	if !w.running {
		w.running = true
		go w.loop()
	}
}

func (w *checkpointer) loop() {
	for {
		w.mu.Lock()
		ck := w.pending
		w.pending = nil
		if ck == nil {
			w.running = false
			w.idle.Broadcast()
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		path, err := w.save(ck)
		w.onSaved(ck, path, err)
	}
}

// flush waits until every enqueued checkpoint is written.
func (w *checkpointer) flush() {
	w.mu.Lock()
	for w.running {
		w.idle.Wait()
	}
	w.mu.Unlock()
}
