package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/messages"
)

// A tool that ignores its context still times out: the executor stops
// waiting for it and the call is a timeout result; the next call runs.
func TestTimeoutHoldsForToolsThatIgnoreTheirContext(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	stuck := New(Spec{Name: "stuck", ReadOnly: true, Timeout: 50 * time.Millisecond}, func(_ context.Context, _ *Session, _ struct{}) (Result, error) {
		<-release // deaf to its context
		return Text("too late"), nil
	})
	s := newTestSession(t)
	ex := &Executor{Tools: NewRegistry(stuck, Think()), Session: s}
	done := make(chan []Result, 1)
	go func() {
		done <- ex.Run(t.Context(), []messages.ToolCall{{ID: "1", Name: "stuck", Args: json.RawMessage(`{}`)},
			{ID: "2", Name: "think", Args: json.RawMessage(`{"thought":"next"}`)}})
	}()
	select {
	case rs := <-done:
		if !rs[0].IsError || !strings.Contains(rs[0].Text, "timed out") || rs[1].IsError {
			t.Errorf("results %+v", rs)
		}
	case <-time.After(time.Minute):
		t.Fatal("the executor waited on a tool that ignores its context")
	}
}
