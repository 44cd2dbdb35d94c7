package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/messages"
)

// BenchmarkLandRenames20 lands, one after another, the changesets of 20
// agents that each renamed a file of a 2,000-file repository (and
// edited a line of it), all made from one snapshot: each may hold a
// rename, so each is merged by git merge-tree (merge_renames.go). The
// workspace is put back between rounds, off the clock.
func BenchmarkLandRenames20(b *testing.B) {
	const n, filler = 20, 2000
	files := map[string]string{".troupe/.gitignore": "*\n"}
	for i := range filler {
		files[fmt.Sprintf("src/p%02d/f%04d.go", i%40, i)] = fmt.Sprintf("package p%02d\n\nvar V%d = %d\n", i%40, i, i)
	}
	body := func(i int) string {
		var s strings.Builder
		for l := range 12 {
			fmt.Fprintf(&s, "file %d line %d\n", i, l)
		}
		return s.String()
	}
	for i := range n {
		files[fmt.Sprintf("r/f%02d.txt", i)] = body(i)
	}
	root := newRepo(b, files)
	r := open(b, root)
	defer r.Close(context.Background())
	ctx := context.Background()
	snap, err := r.Snapshot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	css := make([]messages.Changeset, n)
	for i := range n {
		w, err := r.NewWorktree(ctx, snap, fmt.Sprintf("w%d", i))
		if err != nil {
			b.Fatal(err)
		}
		from, to := filepath.Join(w.Root(), "r", fmt.Sprintf("f%02d.txt", i)), filepath.Join(w.Root(), "moved", fmt.Sprintf("f%02d.txt", i))
		must(b, os.MkdirAll(filepath.Dir(to), 0o755))
		must(b, os.Rename(from, to))
		must(b, os.WriteFile(to, []byte(strings.Replace(body(i), "line 11\n", "line 11 edited\n", 1)), 0o644))
		if css[i], err = w.Capture(ctx); err != nil {
			b.Fatal(err)
		}
		must(b, w.Remove(ctx))
	}
	put := func() {
		must(b, os.RemoveAll(filepath.Join(root, "moved")))
		for i := range n {
			write(b, root, map[string]string{fmt.Sprintf("r/f%02d.txt", i): body(i)})
		}
	}
	for b.Loop() {
		for i, cs := range css {
			out, err := r.Apply(ctx, snap, cs, ModeApply, "run1", fmt.Sprintf("w%d", i))
			if err != nil || out.Status != messages.ChangeStatusApplied {
				b.Fatalf("%+v %v", out, err)
			}
		}
		b.StopTimer()
		if got := read(b, root, "moved/f19.txt"); !strings.Contains(got, "line 11 edited") {
			b.Fatalf("moved/f19.txt: %q", got)
		}
		put()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N)/n, "ms/changeset")
}
