package watch

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/messages"
)

// A tree kept to the n most recent runs lets the oldest finished runs go
// first, still counts the runs let go in AllFinished, Finished and the
// frame's line about them, and ignores their other events.
func TestTreeKeepsRecentRuns(t *testing.T) {
	tr := NewTree(0)
	tr.Keep(3)
	id := func(i int) string { return fmt.Sprintf("run-%02d", i) }
	start := func(i int) {
		tr.Apply(mkEvent(t, id(i), "run", "", "", messages.EvtRunStarted, 1, messages.RunStarted{Task: "t"}))
		tr.Apply(mkEvent(t, id(i), "root", "", "root", messages.EvtAgentStarted, 1, messages.AgentStarted{Task: "t"}))
	}
	finish := func(i int) {
		tr.Apply(mkEvent(t, id(i), "run", "", "", messages.EvtRunFinished, 2, messages.RunFinished{Status: "completed", Reason: "finished"}))
	}
	start(0) // stays running
	for i := 1; i <= 5; i++ {
		start(i)
		if i < 5 {
			finish(i)
		}
	}
	var shown []string
	for _, r := range tr.Runs() {
		shown = append(shown, r.ID)
	}
	// run-00 is the oldest but running: finished runs went first.
	if strings.Join(shown, " ") != "run-00 run-04 run-05" {
		t.Fatalf("runs held: %v", shown)
	}
	if runs, running := tr.Hidden(); runs != 3 || running != 0 {
		t.Errorf("hidden %d (%d running), want 3 (0)", runs, running)
	}
	if !tr.Finished(id(1)) || tr.Finished(id(0)) || tr.AllFinished() {
		t.Errorf("finished(run-01) %v, finished(run-00) %v, all %v", tr.Finished(id(1)), tr.Finished(id(0)), tr.AllFinished())
	}
	// A late event of a run let go does not bring it back.
	tr.Apply(mkEvent(t, id(2), "root", "", "root", messages.EvtRoundStarted, 2, messages.RoundStarted{Round: 2}))
	if len(tr.Runs()) != 3 {
		t.Errorf("a hidden run's event came back: %d runs", len(tr.Runs()))
	}
	// Three more running runs push out run-04, then the running run-00
	// and run-05 too; their ends still count.
	for i := 6; i <= 8; i++ {
		start(i)
	}
	if runs, running := tr.Hidden(); runs != 6 || running != 2 {
		t.Errorf("hidden %d (%d running), want 6 (2)", runs, running)
	}
	lines := Frame(tr, time.Now(), Layout{Width: 100})
	if !strings.Contains(lines[0], "6 earlier runs not shown (2 of them running)") {
		t.Errorf("frame starts %q", lines[0])
	}
	finish(0)
	finish(5)
	for i := 6; i <= 8; i++ {
		if tr.AllFinished() {
			t.Fatalf("all finished before run %d", i)
		}
		finish(i)
	}
	if !tr.AllFinished() {
		t.Error("every run finished, AllFinished says no")
	}
}
