package llm_test

import (
	"testing"
	"time"

	"github.com/rs/zerolog"
)

var noLog = zerolog.Nop()

// waitFor polls cond every few milliseconds for up to 10 seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		<-time.After(2 * time.Millisecond)
	}
}
