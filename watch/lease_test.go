package watch

import (
	"testing"

	"github.com/troupe-ai/troupe/messages"
)

// A run shown lost whose run.finished comes after all (the watcher's
// events were held back by a lost server longer than the run's lease)
// ends the watch: it counts finished once, whether lost or finished.
// A lost run that resumes (run.started) is unfinished again.
func TestLostRunFinishesLate(t *testing.T) {
	tr := NewTree(0)
	started := mkEvent(t, "r1", "run", "", "run", messages.EvtRunStarted, 1, messages.RunStarted{Task: "t", LeaseMS: 10_000})
	tr.Apply(started)
	if !tr.MarkLost("r1") || !tr.AllFinished() {
		t.Fatal("a run marked lost is over for the watch")
	}
	tr.Apply(mkEvent(t, "r1", "run", "", "run", messages.EvtRunFinished, 2, messages.RunFinished{Status: "completed"}))
	if !tr.AllFinished() || tr.Runs()[0].Status != "completed" {
		t.Fatalf("run.finished after lost: all finished %v, status %q", tr.AllFinished(), tr.Runs()[0].Status)
	}

	tr.Apply(mkEvent(t, "r2", "run", "", "run", messages.EvtRunStarted, 1, messages.RunStarted{Task: "t", LeaseMS: 10_000}))
	if !tr.MarkLost("r2") || !tr.AllFinished() {
		t.Fatal("r2 lost")
	}
	tr.Apply(mkEvent(t, "r2", "run", "", "run", messages.EvtRunStarted, 3, messages.RunStarted{Task: "t", LeaseMS: 10_000}))
	if tr.AllFinished() {
		t.Fatal("a lost run that resumed is running again")
	}
	tr.Apply(mkEvent(t, "r2", "run", "", "run", messages.EvtRunFinished, 4, messages.RunFinished{Status: "completed"}))
	if !tr.AllFinished() {
		t.Fatal("the resumed run finished")
	}
}
