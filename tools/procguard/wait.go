package procguard

import "time"

// WaitClosed waits for ch to close (a process exited, its pipes drained),
// at most d; it reports whether it did.
func WaitClosed(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	default:
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}
