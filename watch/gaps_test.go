package watch

import (
	"testing"

	"github.com/troupe-ai/troupe/messages"
)

// An event stored after later ones (sent again after its server was lost)
// is no longer missed once it comes: in a gap, in the tail run.finished
// counted, or splitting a gap in two. One that comes twice, or that was
// never missed, changes nothing.
func TestLateEventsNotMissed(t *testing.T) {
	tr := NewTree(0)
	round := func(agent string, seq uint64) {
		tr.Apply(mkEvent(t, "r1", agent, "root", "explore", messages.EvtRoundStarted, seq, messages.RoundStarted{Round: int(seq)}))
	}
	missed := func(want uint64) {
		t.Helper()
		if got := tr.Runs()[0].Missed; got != want {
			t.Errorf("missed %d, want %d", got, want)
		}
	}
	tr.Apply(mkEvent(t, "r1", "run", "", "run", messages.EvtRunStarted, 1, messages.RunStarted{Task: "t"}))
	round("a", 1)
	round("a", 5) // 2, 3, 4 missed
	missed(3)
	round("a", 3) // late: 2 and 4 still missed
	missed(2)
	round("a", 3) // twice: nothing changes
	round("a", 5)
	round("a", 1)
	missed(2)
	round("a", 2)
	round("a", 4)
	missed(0)
	round("b", 1)
	tr.Apply(mkEvent(t, "r1", "run", "", "run", messages.EvtRunFinished, 2,
		messages.RunFinished{Status: "completed", LastSeq: map[string]uint64{"run": 2, "a": 5, "b": 3}}))
	missed(2) // b's 2 and 3
	round("b", 3)
	missed(1)
	round("b", 2)
	missed(0)
	round("b", 4) // past the end run.finished named: a new gap of none
	missed(0)
}

// The spans kept per agent are bounded: an agent with many gaps keeps
// the latest maxSpans, and a late event of a forgotten one stays missed.
func TestLateEventSpansBounded(t *testing.T) {
	tr := NewTree(0)
	for i := uint64(0); i <= maxSpans+5; i++ {
		tr.Apply(mkEvent(t, "r1", "a", "", "explore", messages.EvtRoundStarted, 1+2*i, messages.RoundStarted{}))
	}
	r := tr.runs["r1"]
	if len(r.missing[seqKey("a", 0)]) != maxSpans || r.Missed != maxSpans+5 {
		t.Fatalf("%d spans, missed %d", len(r.missing[seqKey("a", 0)]), r.Missed)
	}
	tr.Apply(mkEvent(t, "r1", "a", "", "explore", messages.EvtRoundStarted, 2, messages.RoundStarted{})) // forgotten
	tr.Apply(mkEvent(t, "r1", "a", "", "explore", messages.EvtRoundStarted, 2*maxSpans+10, messages.RoundStarted{}))
	if r.Missed != maxSpans+4 {
		t.Errorf("missed %d, want %d", r.Missed, maxSpans+4)
	}
}
