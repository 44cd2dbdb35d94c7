package actors

import "sync"

// toolNow is the tool an agent is running now, for Status. The tool
// step's goroutines write it as calls start and finish; a lock rather
// than a message to the actor keeps two mailbox wake-ups per call off
// the round.
type toolNow struct {
	mu   sync.Mutex
	name string
}

// set notes that name started.
func (t *toolNow) set(name string) {
	t.mu.Lock()
	t.name = name
	t.mu.Unlock()
}

// clear notes that name finished: it is no longer current unless another
// call started since.
func (t *toolNow) clear(name string) {
	t.mu.Lock()
	if t.name == name {
		t.name = ""
	}
	t.mu.Unlock()
}

// get is the current tool ("" between calls).
func (t *toolNow) get() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.name
}
