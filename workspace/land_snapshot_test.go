package workspace

import (
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/messages"
)

// A snapshot asked for while a changeset lands (as a worker starting
// while another's changes come back) waits for the land to end: it holds
// the whole changeset, and none of the land's temporary files (read
// mid-land, git add listed them, and died when they were renamed away:
// a worker of CI's stress run did not start).
func TestSnapshotWaitsForALandUnderWay(t *testing.T) {
	c := newLandCase(t)
	type taken struct {
		snap Snapshot
		err  error
	}
	got := make(chan taken, 1)
	readMidLand := false
	landHook = func(step string, _ int) error {
		if step != "prepared" {
			return nil
		}
		read, waiting := make(chan struct{}), make(chan struct{})
		c.r.snaps.staged = func() { close(read) }
		c.r.snaps.waiting = func() { close(waiting) }
		go func() {
			s, err := c.r.Snapshot(t.Context())
			got <- taken{s, err}
		}()
		select { // the land stays here until the snapshot has read the tree, or waits for the land
		case <-read:
			readMidLand = true
		case <-waiting:
		}
		return nil
	}
	t.Cleanup(func() { landHook = nil })
	out, err := c.r.Apply(t.Context(), c.snap, c.cs, ModeApply, "run1", "w")
	if err != nil || out.Status != messages.ChangeStatusApplied {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	tk := <-got
	if tk.err != nil {
		t.Fatalf("the snapshot taken during the land: %v", tk.err)
	}
	if readMidLand {
		t.Errorf("the snapshot read the work tree while the land was under way")
	}
	files := strings.Fields(sh(t, c.root, "--git-dir="+c.r.home.dir, "ls-tree", "-r", "--name-only", tk.snap.Tree))
	for _, f := range files {
		if strings.HasPrefix(f, ".troupe-land-") || strings.Contains(f, "/.troupe-land-") {
			t.Errorf("the snapshot holds the land's temporary file %s", f)
		}
	}
	for path, want := range c.after {
		if got := sh(t, c.root, "--git-dir="+c.r.home.dir, "cat-file", "blob", tk.snap.Tree+":"+path); got != strings.TrimSpace(want) {
			t.Errorf("the snapshot's %s: %q, want %q (the whole changeset)", path, got, want)
		}
	}
}
