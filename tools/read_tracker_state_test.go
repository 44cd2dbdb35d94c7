package tools

import "testing"

// A snapshot restored into a new tracker lets an edit through on an
// unchanged file; a changed file or a malformed entry counts as unread.
func TestReadTrackerSnapshotRestore(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	a := writeFile(t, s, "a.txt", "alpha\n")
	b := writeFile(t, s, "b.txt", "beta\n")
	old := NewReadTracker()
	old.Record(a, []byte("alpha\n"))
	old.Record(b, []byte("beta\n"))
	snap := old.Snapshot()
	snap["/elsewhere/c.txt"] = "not-hex"
	fresh := NewReadTracker()
	fresh.Restore(snap)
	if _, err := fresh.Check(s.Workspace, a, "a.txt"); err != nil {
		t.Errorf("restored read of a.txt: %v", err)
	}
	writeFile(t, s, "b.txt", "changed\n")
	if _, err := fresh.Check(s.Workspace, b, "b.txt"); err == nil {
		t.Error("a file changed since the snapshot counts as read")
	}
	if fresh.WasRead("/elsewhere/c.txt") {
		t.Error("a malformed entry was restored")
	}
	if NewReadTracker().Snapshot() != nil {
		t.Error("an empty tracker's snapshot is not nil")
	}
}
