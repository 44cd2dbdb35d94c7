package actors

import (
	"sync"
	"time"

	"github.com/troupe-ai/troupe/internal/convo"
)

// checkpointer writes an agent's checkpoints off the round loop: the round
// goes on while the file is written and synced. Writes are serialized and
// the latest checkpoint wins: one still waiting when a newer arrives is
// skipped, since the newer holds everything it held. Writes are at least
// interval apart, which bounds checkpoint I/O when rounds are fast; a
// round's checkpoint waits at most interval, and flush writes the pending
// one at once (the agent ends, is cancelled or interrupted).
type checkpointer struct {
	save     func(*convo.Checkpoint) (string, error)
	onSaved  func(ck *convo.Checkpoint, path string, err error)
	interval time.Duration

	mu       sync.Mutex
	pending  *convo.Checkpoint
	running  bool
	flushing bool
	last     time.Time
	wake     chan struct{} // nudges a loop waiting out the interval
	idle     *sync.Cond
}

func newCheckpointer(interval time.Duration, save func(*convo.Checkpoint) (string, error), onSaved func(*convo.Checkpoint, string, error)) *checkpointer {
	w := &checkpointer{save: save, onSaved: onSaved, interval: interval, wake: make(chan struct{}, 1)}
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
		if w.pending != nil && !w.flushing {
			if wait := w.interval - time.Since(w.last); wait > 0 {
				w.mu.Unlock()
				select {
				case <-time.After(wait):
				case <-w.wake: // flush asked for the pending one now
				}
				continue
			}
		}
		ck := w.pending
		w.pending = nil
		if ck == nil {
			w.running = false
			w.idle.Broadcast()
			w.mu.Unlock()
			return
		}
		w.last = time.Now()
		w.mu.Unlock()
		path, err := w.save(ck)
		w.onSaved(ck, path, err)
	}
}

// flush writes what is pending now and waits until every enqueued
// checkpoint is on disk.
func (w *checkpointer) flush() {
	w.mu.Lock()
	w.flushing = true
	select {
	case w.wake <- struct{}{}:
	default:
	}
	for w.running {
		w.idle.Wait()
	}
	w.flushing = false
	w.mu.Unlock()
}
