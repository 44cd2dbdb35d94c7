package workspace

import (
	"path/filepath"
	"testing"

	"github.com/troupe-ai/troupe/messages"
)

// A snapshot travels as bundles to a store that borrows another
// checkout's objects: thin when that checkout has the base, whole when it
// is behind; the agent's changes come back and land; the other checkout
// is not touched.
func TestSnapshotTravelsAsBundles(t *testing.T) {
	requester := newRepo(t, map[string]string{"a.go": "package a\n", ".gitignore": ".troupe/\n"})
	behind := t.TempDir()
	sh(t, behind, "clone", "-q", requester, ".")
	write(t, requester, map[string]string{"b.go": "package a // second commit\n"})
	sh(t, requester, "add", "-A")
	sh(t, requester, "commit", "-q", "-m", "second")
	current := t.TempDir()
	sh(t, current, "clone", "-q", requester, ".")
	write(t, requester, map[string]string{"a.go": "package a // uncommitted edit\n", "new.go": "package a // untracked\n"})
	r := open(t, requester)
	snap, err := r.Snapshot(t.Context())
	must(t, err)
	thin, err := r.Bundle(t.Context(), snap, true)
	must(t, err)
	defer thin.Remove()
	full, err := r.Bundle(t.Context(), snap, false)
	must(t, err)
	defer full.Remove()
	if thin.Size >= full.Size {
		t.Errorf("thin bundle %d bytes, whole %d", thin.Size, full.Size)
	}
	for name, node := range map[string]string{"current": current, "behind": behind} {
		head := sh(t, node, "rev-parse", "HEAD")
		store, err := OpenStore(t.Context(), filepath.Join(t.TempDir(), "data"), node, 0)
		must(t, err)
		if has := store.Has(t.Context(), snap.Base); has != (name == "current") {
			t.Fatalf("%s: has base %v", name, has)
		}
		err = store.Unbundle(t.Context(), thin)
		if name == "behind" {
			if err == nil {
				t.Fatal("behind: a thin bundle without its base was taken")
			}
			f, err := full.Open()
			must(t, err)
			must(t, store.UnbundleFrom(t.Context(), "the whole bundle", f, full.SHA256))
			must(t, f.Close())
		} else {
			must(t, err)
		}
		w, err := store.NewWorktree(t.Context(), snap, "worker-1")
		must(t, err)
		if got := read(t, w.Root(), "a.go"); got != "package a // uncommitted edit\n" {
			t.Errorf("%s: worktree a.go = %q", name, got)
		}
		if got := read(t, w.Root(), "new.go"); got != "package a // untracked\n" {
			t.Errorf("%s: worktree new.go = %q", name, got)
		}
		write(t, w.Root(), map[string]string{name + ".go": "package a // from " + name + "\n"})
		cs, err := w.Capture(t.Context())
		must(t, err)
		must(t, w.Remove(t.Context()))
		cs.Tree = "" // the requester does not hold the node's objects: the patch must do
		out, err := r.Apply(t.Context(), snap, cs, ModeApply, "run1", "worker-"+name)
		if err != nil || out.Status != messages.ChangeStatusApplied {
			t.Fatalf("%s: apply %+v, %v", name, out, err)
		}
		if got := read(t, requester, name+".go"); got != "package a // from "+name+"\n" {
			t.Errorf("%s: requester's file = %q", name, got)
		}
		if st := sh(t, node, "status", "--porcelain"); st != "" || sh(t, node, "rev-parse", "HEAD") != head {
			t.Errorf("%s: the node's checkout changed:\n%s", name, st)
		}
		must(t, store.Prune(t.Context()))
	}
}
