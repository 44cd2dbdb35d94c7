package cluster

import (
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/bus"
)

// A watcher judges a run by its lease: alive while it beats, and, once
// its orchestrator ended it (the entry deleted), never lost, however long
// its last events take to arrive (a lost server may hold them back past
// the lease). A run that stops beating without ending is lost.
func TestRunLeasesEndedNotLost(t *testing.T) {
	s := natsServer(t)
	conn := wrap(t, connect(t, s))
	if err := conn.EnsureStreams(t.Context(), bus.StreamLimits{}); err != nil {
		t.Fatal(err)
	}
	leases, err := WatchRunLeases(t.Context(), wrap(t, connect(t, s)))
	if err != nil {
		t.Fatal(err)
	}
	const lease = time.Second
	ended, err := StartRunLease(t.Context(), conn, "ended", lease, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	died, err := StartRunLease(t.Context(), conn, "died", lease, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	last := time.Now() // the runs' latest events, as the watcher saw them
	checkFor(t, 10*time.Second, func() error {
		if leases.g.hasEnded("ended") || leases.Lost("ended", lease, last, time.Now()) || leases.Lost("died", lease, last, time.Now()) {
			return errorf("the runs beat and are not lost yet")
		}
		if _, known := leases.g.lapsed("died", time.Now()); !known {
			return errorf("no lease heard of yet")
		}
		return nil
	})
	ended.Stop()  // the run ended: its entry deleted
	died.cancel() // killed: no more beats, the entry stays
	<-died.done
	checkFor(t, 10*time.Second, func() error {
		if !leases.Lost("died", lease, last, time.Now()) {
			return errorf("the run that stopped beating is not lost yet")
		}
		return nil
	})
	if leases.Lost("ended", lease, last, time.Now()) {
		t.Error("a run whose orchestrator ended it counts lost: its late run.finished would find it over")
	}
}
