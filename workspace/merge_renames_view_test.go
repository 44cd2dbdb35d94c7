package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/messages"
)

// The rename route's view of the user's side is kept from one land to
// the next and brought up to date, not taken afresh: a land after
// another sees what the user did in between (here a rename of the file
// the second agent edited, unstaged, so the view is refreshed, not
// seeded again), and the edit lands in the renamed file.
func TestRenameViewFollowsTheUserBetweenLands(t *testing.T) {
	body := func(name string) string {
		var b strings.Builder
		for i := range 12 {
			b.WriteString(name + " line " + strconvItoa(i) + "\n")
		}
		return b.String()
	}
	root := newRepo(t, map[string]string{".troupe/.gitignore": "*\n", "a.txt": body("a"), "b.txt": body("b"), "k": "k\n"})
	r := open(t, root)
	defer r.Close(context.Background())
	ctx := context.Background()
	snap, err := r.Snapshot(ctx)
	must(t, err)
	capture := func(name string, change func(dir string)) messages.Changeset {
		w, err := r.NewWorktree(ctx, snap, name)
		must(t, err)
		change(w.Root())
		cs, err := w.Capture(ctx)
		must(t, err)
		must(t, w.Remove(ctx))
		return cs
	}
	renamed := capture("w1", func(dir string) {
		must(t, os.Rename(filepath.Join(dir, "a.txt"), filepath.Join(dir, "a2.txt")))
	})
	edited := capture("w2", func(dir string) {
		write(t, dir, map[string]string{"b.txt": strings.Replace(body("b"), "b line 11\n", "b line 11 edited\n", 1)})
	})
	if out, err := r.Apply(ctx, snap, renamed, ModeApply, "run1", "w1"); err != nil || out.Status != messages.ChangeStatusApplied {
		t.Fatalf("the rename: %+v %v", out, err)
	}
	view := r.view.index
	if view == "" {
		t.Fatal("the rename was not merged through the view")
	}
	must(t, os.Rename(filepath.Join(root, "b.txt"), filepath.Join(root, "c.txt")))
	if out, err := r.Apply(ctx, snap, edited, ModeApply, "run1", "w2"); err != nil || out.Status != messages.ChangeStatusApplied {
		t.Fatalf("the edit of a file the user renamed: %+v %v", out, err)
	}
	if r.view.index != view {
		t.Errorf("the view was seeded again (%s, was %s), not brought up to date", r.view.index, view)
	}
	if got := read(t, root, "c.txt"); !strings.Contains(got, "b line 11 edited") {
		t.Errorf("c.txt: %q", got)
	}
	for _, gone := range []string{"b.txt", "a.txt"} {
		if got := read(t, root, gone); got != "<absent>" {
			t.Errorf("%s: %q", gone, got)
		}
	}
	if got := read(t, root, "a2.txt"); got != body("a") {
		t.Errorf("a2.txt: %q", got)
	}
	must(t, r.Close(ctx))
	if _, err := os.Stat(view); !os.IsNotExist(err) {
		t.Errorf("the view's index outlived the Repo: %v", err)
	}
}
