package testfiles

import (
	"testing"
	"time"
)

// Poll calls fn until it returns nil, failing t with fn's last error
// once total has passed: a wait with a deadline for a state another
// goroutine or process reaches in its own time, never a sleep standing
// in for synchronisation. It polls every 2 ms.
func Poll(t testing.TB, total time.Duration, fn func() error) {
	t.Helper()
	PollEvery(t, total, 2*time.Millisecond, fn)
}

// PollEvery is Poll calling fn every interval.
func PollEvery(t testing.TB, total, every time.Duration, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(total)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s: %v", total, err)
		}
		<-time.After(every)
	}
}
