package procguard

import (
	"testing"
	"time"
)

// A closed channel is seen at once, even with no time to wait; one never
// closed is given up on after d.
func TestWaitClosed(t *testing.T) {
	closed := make(chan struct{})
	close(closed)
	if !WaitClosed(closed, 0) {
		t.Error("a closed channel not seen")
	}
	if WaitClosed(make(chan struct{}), time.Millisecond) {
		t.Error("an open channel reported closed")
	}
}
