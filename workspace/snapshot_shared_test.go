package workspace

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
)

// TestConcurrentSnapshotsHoldEachCallersWrites: callers that each write
// a file and then ask for a snapshot at the same moment share
// snapshots, yet each one's snapshot holds its own file: a caller never
// gets a snapshot that began before it asked.
func TestConcurrentSnapshotsHoldEachCallersWrites(t *testing.T) {
	root := newRepo(t, map[string]string{"a.txt": "a\n"})
	r := open(t, root)
	const callers = 24
	snaps := make([]Snapshot, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			write(t, root, map[string]string{fmt.Sprintf("w%02d.txt", i): "x\n"})
			snaps[i], errs[i] = r.Snapshot(t.Context())
		})
	}
	wg.Wait()
	for i, s := range snaps {
		must(t, errs[i])
		if out := sh(t, root, "cat-file", "-t", s.Tree+":"+fmt.Sprintf("w%02d.txt", i)); out != "blob" {
			t.Errorf("caller %d's snapshot lacks its file: %q", i, out)
		}
	}
}

// TestSnapshotAskedMidwayIsTakenAfter: a caller asking while a snapshot
// that has already read the workspace is still being written gets the
// next one, which holds the file it wrote before asking.
func TestSnapshotAskedMidwayIsTakenAfter(t *testing.T) {
	root := newRepo(t, map[string]string{"a.txt": "a\n"})
	r := open(t, root)
	read, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	r.snaps.staged = func() { once.Do(func() { close(read); <-resume }) }
	first := make(chan error, 1)
	go func() { _, err := r.Snapshot(t.Context()); first <- err }()
	<-read
	write(t, root, map[string]string{"late.txt": "late\n"})
	second := make(chan Snapshot, 1)
	go func() {
		s, err := r.Snapshot(t.Context())
		if err != nil {
			t.Error(err)
		}
		second <- s
	}()
	for { // the second caller has joined (next) before the first resumes
		r.snaps.mu.Lock()
		joined := r.snaps.next != nil
		r.snaps.mu.Unlock()
		if joined {
			break
		}
		runtime.Gosched()
	}
	close(resume)
	must(t, <-first)
	s := <-second
	if out := sh(t, root, "cat-file", "-t", s.Tree+":late.txt"); out != "blob" {
		t.Fatalf("the later caller's snapshot lacks late.txt: %q", out)
	}
}
