package watch

import "time"

// StatusLost is the state of a run whose orchestrator stopped
// heartbeating its lease (killed, or cut off) before the run finished.
const StatusLost = "lost"

// LeasedRun is an unfinished run that has a lease.
type LeasedRun struct {
	ID    string
	Lease time.Duration
	Last  time.Time // its latest event
}

// Leased lists the unfinished runs that have a lease.
func (t *Tree) Leased() []LeasedRun {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []LeasedRun
	for _, id := range t.order {
		if r := t.runs[id]; r != nil && !r.Finished && r.LeaseMS > 0 {
			out = append(out, LeasedRun{ID: id, Lease: time.Duration(r.LeaseMS) * time.Millisecond, Last: r.Last})
		}
	}
	return out
}

// MarkLost ends run as lost, unless it finished meanwhile; it reports
// whether it did. A later run.started (the run resumed) revives it.
func (t *Tree) MarkLost(run string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.runs[run]
	if r == nil || r.Finished {
		return false
	}
	r.Finished, r.Status, r.Reason = true, StatusLost, ""
	t.unfinished-- // ended, as far as AllFinished goes: its run.finished, should it come late, counts no more
	return true
}
