package console

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/cluster"
	"github.com/troupe-ai/troupe/messages"
)

// TypeRunLost is the type of the line watch --json prints for a run it
// found lost: not a stored event (no id, no seq) but watch's own finding,
// marked "source": "watch".
const TypeRunLost = "run.lost"

// LostRun is the line watch --json prints when a run's lease lapsed
// before the run finished (docs/events.md, "Watching").
type LostRun struct {
	V      int          `json:"v"`
	Time   time.Time    `json:"time"`
	Run    string       `json:"run"`
	Agent  string       `json:"agent"`
	Type   string       `json:"type"`
	Source string       `json:"source"`
	Data   LostRunFacts `json:"data"`
}

// LostRunFacts are what watch knows of a lost run.
type LostRunFacts struct {
	LeaseMS   int64     `json:"lease_ms"`
	LastEvent time.Time `json:"last_event"`
	Workspace string    `json:"workspace"`
	Resume    string    `json:"resume"`
}

// maxRunsSeen bounds the unfinished runs a watch remembers.
const maxRunsSeen = 4096

// runSeen is what the events said of an unfinished run that resuming it
// needs: its workspace and the kinds it placed on nodes.
type runSeen struct {
	workspace string
	placement map[string]string
}

// see notes a run's workspace and remote kinds from its events, and
// forgets a run once it finished.
func (w *Watcher) see(ev messages.Event) {
	switch ev.Type {
	case messages.EvtRunStarted:
		if d, err := messages.DecodeAs[messages.RunStarted](ev); err == nil {
			w.seen(ev.Run).workspace = d.Workspace
		}
	case messages.EvtAgentSpawned:
		if d, err := messages.DecodeAs[messages.AgentSpawned](ev); err == nil && d.Placement == cluster.PlaceRemote && d.Kind != "" {
			w.seen(ev.Run).placement[d.Kind] = cluster.PlaceRemote
		}
	case messages.EvtRunFinished:
		delete(w.runs, ev.Run)
	}
}

func (w *Watcher) seen(run string) *runSeen {
	if w.runs == nil {
		w.runs = map[string]*runSeen{}
	}
	r := w.runs[run]
	if r == nil {
		if len(w.runs) >= maxRunsSeen { // runs whose end this watch never saw: forget one
			for id := range w.runs {
				delete(w.runs, id)
				break
			}
		}
		r = &runSeen{placement: map[string]string{}}
		w.runs[run] = r
	}
	return r
}

// markLost ends the runs whose lease lapsed (their orchestrator is gone)
// as lost, once the backlog is shown: a sentence on Stderr and, with
// JSON, a run.lost line, each with the command that resumes the run.
func (w *Watcher) markLost(now time.Time) {
	if w.Leases == nil || !w.caughtUp {
		return
	}
	for _, r := range w.tree.Leased() {
		if !w.Leases.Lost(r.ID, r.Lease, r.Last, now) || !w.tree.MarkLost(r.ID) {
			continue
		}
		w.dirty = true
		seen := w.seen(r.ID)
		resume := "orchestrator resume " + r.ID
		if w.Resume != nil {
			resume = w.Resume(r.ID, seen.workspace, seen.placement)
		}
		delete(w.runs, r.ID)
		fmt.Fprintf(w.Stderr, "run %s lost: its orchestrator stopped heartbeating its lease (%s) before the run finished; resume it with %s\n",
			r.ID, r.Lease, resume)
		if w.JSON {
			_ = w.enc.Encode(LostRun{V: messages.EventVersion, Time: now.UTC(), Run: r.ID, Agent: "run", Type: TypeRunLost, Source: "watch",
				Data: LostRunFacts{LeaseMS: r.Lease.Milliseconds(), LastEvent: r.Last.UTC(), Workspace: seen.workspace, Resume: resume}})
		}
	}
}

// ShowEnded turns a watch of one run without --from-start into a replay
// when the run has ended, or is lost (its lease lapsed, judged by
// leases; nil: not judged): new events would never come, and the watch
// would wait for ever. It says so on stderr. A lost run's replay ends
// with it shown lost (markLost), as with --from-start.
func ShowEnded(ctx context.Context, conn *bus.Conn, leases *cluster.RunLeases, run string, flags map[string]bool, stderr io.Writer) {
	if run == "" || flags["from-start"] {
		return
	}
	ended, err := conn.RunEnded(ctx, run)
	if err != nil {
		fmt.Fprintf(stderr, "watch: %v (a finished run shows nothing without --from-start)\n", err)
		return
	}
	if ended {
		fmt.Fprintf(stderr, "run %s has finished: showing it from its start\n", run)
		flags["from-start"] = true
		return
	}
	if leases == nil {
		return
	}
	open, ok, err := conn.RunOpen(ctx, run)
	if err != nil {
		fmt.Fprintf(stderr, "watch: %v (a lost run shows nothing without --from-start)\n", err)
		return
	}
	if ok && open.Lease > 0 && leases.Lost(run, open.Lease, open.Last, time.Now()) {
		fmt.Fprintf(stderr, "run %s is lost (its lease lapsed before it finished): showing it from its start\n", run)
		flags["from-start"] = true
	}
}
