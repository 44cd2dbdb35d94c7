package watch

import (
	"strings"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/messages"
)

// A finished run's clock stops: an hour after it ended, its line still
// shows the wall time it ran, while a running run's shows the time so far.
func TestFinishedRunStopsItsClock(t *testing.T) {
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	tr := NewTree(10)
	start := mkEvent(t, "r1", "run", "", "", messages.EvtRunStarted, 1, messages.RunStarted{Task: "t"})
	start.Time = at
	tr.Apply(start)
	running := strings.Join(Frame(tr, at.Add(90*time.Second), Layout{Width: 200}), "\n")
	if !strings.Contains(running, "1m30s") {
		t.Errorf("a running run after 90 s:\n%s", running)
	}
	end := mkEvent(t, "r1", "run", "", "", messages.EvtRunFinished, 2, messages.RunFinished{Status: "completed", Reason: "finished", WallMS: 2500})
	end.Time = at.Add(2500 * time.Millisecond)
	tr.Apply(end)
	later := strings.Join(Frame(tr, at.Add(time.Hour), Layout{Width: 200}), "\n")
	if !strings.Contains(later, "· 2.5s") || strings.Contains(later, "1h00m") {
		t.Errorf("a run that took 2.5 s, an hour later:\n%s", later)
	}
}
