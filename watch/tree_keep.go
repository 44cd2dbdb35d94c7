package watch

import (
	"slices"

	"github.com/troupe-ai/troupe/messages"
)

// Keep limits the tree to the n most recent runs (0: every run, the
// default): when a run beyond them appears, the oldest run is let go (the
// oldest finished one when there is one). A run let go keeps counting in
// AllFinished and Hidden, but its events are otherwise ignored, so a
// watcher of a stream with thousands of runs spends only on the ones it
// shows.
func (t *Tree) Keep(n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.keep = n
	t.trim()
}

// Hidden counts the runs let go (Keep), and those of them still running.
func (t *Tree) Hidden() (runs, running int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, finished := range t.hidden {
		if !finished {
			running++
		}
	}
	return len(t.hidden), running
}

// trim lets go of the oldest runs beyond keep.
func (t *Tree) trim() {
	for t.keep > 0 && len(t.order) > t.keep {
		i := slices.IndexFunc(t.order, func(id string) bool { return t.runs[id].Finished })
		if i < 0 {
			i = 0
		}
		id := t.order[i]
		t.hidden[id] = t.runs[id].Finished
		delete(t.runs, id)
		t.order = slices.Delete(t.order, i, i+1)
	}
}

// applyHidden takes an event of a run let go: only its end counts.
func (t *Tree) applyHidden(ev messages.Event) {
	if ev.Agent == "run" && ev.Type == messages.EvtRunFinished && !t.hidden[ev.Run] {
		t.hidden[ev.Run] = true
		t.unfinished--
	}
}
