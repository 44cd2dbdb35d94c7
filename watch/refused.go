package watch

// SetRefused sets how many messages the event stream refused; the frame
// shows the count (the messages themselves are not shown).
func (t *Tree) SetRefused(n uint64) {
	t.mu.Lock()
	t.refused = n
	t.mu.Unlock()
}

// Refused is the count SetRefused set.
func (t *Tree) Refused() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.refused
}
