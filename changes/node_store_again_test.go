package changes

import (
	"context"
	"testing"
)

// A task that ends while the node's background tidy runs has that tidy
// run once more: the pass under way may have found the store busy (the
// task itself, or another in flight, held it) and done nothing, and the
// store would stay over its bounds until some later task ended.
func TestNodeStoreTidyRunsOnceMoreForATaskEndingMeanwhile(t *testing.T) {
	f := newLFSFleet(t)
	f.n.mu.Lock()
	_, err := f.n.open(context.Background())
	f.n.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	inFlight, err := f.n.keeper.Use() // another task, in flight
	if err != nil {
		t.Fatal(err)
	}
	h := f.start(t, f.tr, f.snapshot(t, 0), 0)
	work(t, h, 0)
	f.end(t, h, 0) // its tidy finds the store busy
	if u, err := f.n.keeper.Usage(); err != nil || u.Packs < 2 && u.Loose == 0 {
		t.Fatalf("the store before: %+v %v (want it over its bounds: loose objects, or more than one pack)", u, err)
	}
	entered, proceed := make(chan struct{}), make(chan struct{})
	passes := 0
	f.n.beforeTidy = func() {
		passes++
		switch passes {
		case 1:
			close(entered)
			<-proceed // this pass finds the store busy
		case 2:
			inFlight() // the task in flight has ended
		}
	}
	f.n.tidyLater() // the in-flight task's end, say: a tidy starts
	<-entered
	f.n.tidyLater() // another task ends while it runs
	close(proceed)
	f.n.tidies.Wait()
	if passes != 2 {
		t.Errorf("%d tidy passes, want 2 (once more for the task that ended meanwhile)", passes)
	}
	u, err := f.n.keeper.Usage()
	if err != nil || u.Packs != 1 || u.Loose != 0 {
		t.Errorf("the store after: %+v %v, want it tidied (one pack, no loose objects)", u, err)
	}
}
