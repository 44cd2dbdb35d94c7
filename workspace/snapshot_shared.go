package workspace

import (
	"context"
	"sync"
	"time"
)

// Callers that ask for a snapshot at the same moment share one: 50
// workers starting at once cost one or two snapshots of the workspace,
// not 50. A caller is given a snapshot that began after it asked (the
// one being taken when it asked may have read a file before the caller
// wrote it), so each gets the workspace as it was at some moment after
// its call, as if it had taken its own: the one after the snapshot being
// taken, which every caller arriving meanwhile joins.

// snapshotTimeout bounds one shared snapshot, whose callers may all
// have given up.
const snapshotTimeout = 10 * time.Minute

// snaps are a Repo's shared snapshots.
type snaps struct {
	mu   sync.Mutex
	cur  *snapCall // being taken
	next *snapCall // taken once cur is, for the callers that came after cur began

	staged  func() // tests: called once a snapshot has read the workspace
	waiting func() // tests: called when a snapshot waits for a land to end
}

// snapCall is one shared snapshot.
type snapCall struct {
	done chan struct{}
	snap Snapshot
	err  error
}

// Snapshot records the workspace as it is now. The user's index and
// refs are not changed; the snapshot's objects are written to the
// repository's object store.
func (r *Repo) Snapshot(ctx context.Context) (Snapshot, error) {
	s := &r.snaps
	s.mu.Lock()
	c := s.next
	if c == nil {
		c = &snapCall{done: make(chan struct{})}
		after := s.cur
		if after == nil {
			s.cur = c
		} else {
			s.next = c
		}
		go r.takeSnapshot(context.WithoutCancel(ctx), c, after)
	}
	s.mu.Unlock()
	select {
	case <-c.done:
		return c.snap, c.err
	case <-ctx.Done():
		return Snapshot{}, ctx.Err()
	}
}

// takeSnapshot takes the shared snapshot c once after (when not nil) is
// taken.
func (r *Repo) takeSnapshot(ctx context.Context, c, after *snapCall) {
	s := &r.snaps
	if after != nil {
		<-after.done
		s.mu.Lock()
		s.cur, s.next = c, nil
		s.mu.Unlock()
	}
	ctx, cancel := context.WithTimeout(ctx, snapshotTimeout)
	c.snap, c.err = r.snapshot(ctx)
	cancel()
	s.mu.Lock()
	s.cur = nil
	s.mu.Unlock()
	close(c.done)
}

// readingTree holds off lands while a snapshot reads the work tree, and
// waits for one under way to end (a land writes its changeset under
// temporary names, then renames them one by one: read meanwhile, the
// tree would hold part of the changeset, and files that vanish under
// git add). It returns the release.
func (r *Repo) readingTree() func() {
	if !r.landing.TryRLock() {
		if r.snaps.waiting != nil {
			r.snaps.waiting()
		}
		r.landing.RLock()
	}
	return r.landing.RUnlock
}
