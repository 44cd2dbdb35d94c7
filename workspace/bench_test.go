package workspace

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// benchRepo makes a repository of n files in 50 directories, with one
// uncommitted edit and one untracked file.
func benchRepo(b *testing.B, n int) (*Repo, string) {
	b.Helper()
	files := make(map[string]string, n)
	for i := range n {
		files[fmt.Sprintf("pkg%02d/file%04d.go", i%50, i)] = fmt.Sprintf("package pkg\n\n// File %d.\nfunc F%d() int { return %d }\n", i, i, i)
	}
	root := newRepo(b, files)
	write(b, root, map[string]string{"pkg00/file0000.go": "package pkg\n// edited\n", "untracked.go": "package main\n"})
	return open(b, root), root
}

// BenchmarkSnapshot5000 measures a snapshot of a 5,000-file checkout.
func BenchmarkSnapshot5000(b *testing.B) {
	r, _ := benchRepo(b, 5000)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if _, err := r.Snapshot(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWorkerCycle5000 measures one worker's worktree create, one
// edit, capture, apply and removal on a 5,000-file checkout.
func BenchmarkWorkerCycle5000(b *testing.B) {
	r, _ := benchRepo(b, 5000)
	ctx := context.Background()
	snap, err := r.Snapshot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		i++
		cycle(b, r, snap, i)
	}
}

// BenchmarkWorkers50Parallel5000 starts 50 workers at once on a
// 5,000-file checkout, each through create, edit, capture, apply and
// removal; it reports the wall time per worker.
func BenchmarkWorkers50Parallel5000(b *testing.B) {
	r, _ := benchRepo(b, 5000)
	ctx := context.Background()
	snap, err := r.Snapshot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	round := 0
	for b.Loop() {
		round++
		var wg sync.WaitGroup
		for i := range 50 {
			wg.Go(func() { cycle(b, r, snap, round*100+i) })
		}
		wg.Wait()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*50)/1e6, "ms/worker")
}

// cycle is one worker's life: a worktree, an edit of its own file,
// capture, apply, removal.
func cycle(b *testing.B, r *Repo, snap Snapshot, i int) {
	ctx := context.Background()
	name := fmt.Sprintf("w%d", i)
	w, err := r.NewWorktree(ctx, snap, name)
	if err != nil {
		b.Error(err)
		return
	}
	path := fmt.Sprintf("pkg%02d/file%04d.go", i%50, 1000+i%4000)
	write(b, w.Root(), map[string]string{path: strings.Repeat("// worker "+name+"\n", 2)})
	cs, err := w.Capture(ctx)
	if err == nil {
		_, err = r.Apply(ctx, snap, cs, ModeApply, "bench", name)
	}
	if err == nil {
		err = w.Remove(ctx)
	}
	if err != nil {
		b.Error(err)
	}
}
