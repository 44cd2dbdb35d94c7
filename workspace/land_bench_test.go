package workspace

import (
	"context"
	"strconv"
	"testing"

	"github.com/troupe-ai/troupe/messages"
)

// BenchmarkLand10 lands a changeset of 10 modified files and then its
// reverse, over and over: the merge and the land (journal, temporary
// names, pre-images, renames) per Apply.
func BenchmarkLand10(b *testing.B) {
	files := map[string]string{".troupe/.gitignore": "*\n"}
	for i := range 10 {
		files["d/f"+strconv.Itoa(i)+".txt"] = "v0\n"
	}
	root := newRepo(b, files)
	r := open(b, root)
	defer r.Close(context.Background())
	ctx := context.Background()
	snaps := [2]Snapshot{}
	var css [2]messages.Changeset
	for side := range 2 {
		var err error
		if snaps[side], err = r.Snapshot(ctx); err != nil {
			b.Fatal(err)
		}
		w, err := r.NewWorktree(ctx, snaps[side], "w")
		if err != nil {
			b.Fatal(err)
		}
		next := map[string]string{}
		for p := range files {
			if p != ".troupe/.gitignore" {
				next[p] = "v" + strconv.Itoa(1-side) + "\n"
			}
		}
		write(b, w.Root(), next)
		if css[side], err = w.Capture(ctx); err != nil {
			b.Fatal(err)
		}
		_ = w.Remove(ctx)
		write(b, root, next) // the second snapshot is of the first's end state
	}
	write(b, root, map[string]string{}) // as the first snapshot
	for p := range files {
		if p != ".troupe/.gitignore" {
			write(b, root, map[string]string{p: "v0\n"})
		}
	}
	i := 0
	for b.Loop() {
		side := i % 2
		i++
		out, err := r.Apply(ctx, snaps[side], css[side], ModeApply, "run1", "w")
		if err != nil || out.Status != messages.ChangeStatusApplied {
			b.Fatalf("%+v %v", out, err)
		}
	}
}
