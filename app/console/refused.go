package console

import (
	"fmt"
	"io"

	"github.com/troupe-ai/troupe/cluster"
)

// RefusedCounts are the messages a run refused from the wire.
type RefusedCounts struct {
	// Results without the proof of the node that pulled the task.
	Results uint64 `json:"results"`
	// Duplicates are second results of a task (a redelivery's), dropped.
	Duplicates uint64 `json:"duplicates"`
	// Notices and Budget are start notices and budget requests that did
	// not prove the current delivery of a task of the run.
	Notices uint64 `json:"notices"`
	Budget  uint64 `json:"budget"`
	// Events from nodes that no delivery of the run's tasks vouched for:
	// never published.
	Events uint64 `json:"events"`
	// Changes are results whose changes were refused (a patch or
	// snapshot that does not match what the result proves or the run
	// sent): their tasks failed, nothing of them applied.
	Changes uint64 `json:"changes"`
}

// RefusedOf is what a run refused (nil without remote agents).
func RefusedOf(st *cluster.RemoteStats) *RefusedCounts {
	if st == nil {
		return nil
	}
	return &RefusedCounts{Results: st.Forged, Duplicates: st.Duplicates, Notices: st.Notices, Budget: st.Budget, Events: st.Events,
		Changes: st.Changes}
}

// PrintRefused says what the run refused, when it refused anything.
func PrintRefused(w io.Writer, r *RefusedCounts) {
	if r == nil || r.Results+r.Notices+r.Budget+r.Events+r.Changes == 0 {
		return
	}
	fmt.Fprintf(w, "refused: %d result(s), %d start notice(s), %d budget request(s) and %d event(s) not from the node that holds the task's current delivery, and the changes of %d result(s) (see the warnings for why)\n",
		r.Results, r.Notices, r.Budget, r.Events, r.Changes)
}
