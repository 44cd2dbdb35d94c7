package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// BenchmarkDiskFloor50x5000 is the floor BenchmarkWorkers50Parallel5000's
// first round cannot go below on the machine's disk: 50 trees of the
// same 5,000 files in 50 directories, written at once by plain Go code
// (create, write, close; no git, no index, no stat), then deleted
// (untimed), as a run's 50 new worktrees are. It reports the wall and
// CPU time per tree.
func BenchmarkDiskFloor50x5000(b *testing.B) {
	base := b.TempDir()
	round := 0
	var spent float64
	for b.Loop() {
		round++
		cpu := cpuTime()
		var wg sync.WaitGroup
		for t := range 50 {
			wg.Go(func() {
				if err := writeTree(filepath.Join(base, fmt.Sprintf("r%d-t%d", round, t))); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
		spent += float64(cpuTime() - cpu)
		b.StopTimer()
		entries, _ := os.ReadDir(base)
		for _, e := range entries {
			if err := os.RemoveAll(filepath.Join(base, e.Name())); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*50)/1e6, "ms/tree")
	b.ReportMetric(spent/float64(b.N*50)/1e6, "cpu-ms/tree")
}

// writeTree writes benchRepo's 5,000 files under dir.
func writeTree(dir string) error {
	for d := range 50 {
		if err := os.MkdirAll(filepath.Join(dir, fmt.Sprintf("pkg%02d", d)), 0o755); err != nil {
			return err
		}
	}
	for i := range 5000 {
		data := fmt.Sprintf("package pkg\n\n// File %d.\nfunc F%d() int { return %d }\n", i, i, i)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("pkg%02d/file%04d.go", i%50, i)), []byte(data), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// TROUPE_CHECKOUT_WRITERS sets how many goroutines write a Go
// checkout's files, to measure the benchmarks with other counts.
func init() {
	if n, err := strconv.Atoi(os.Getenv("TROUPE_CHECKOUT_WRITERS")); err == nil && n > 0 {
		checkoutWriters = n
	}
}

// BenchmarkCreate5000 measures the creation of a new worktree of a
// 5,000-file checkout alone, in Go and by git reset --hard in turns (so
// both meet the same machine load), the snapshot's objects read before:
// wall and CPU time (git's processes included) per worktree of each.
// Removals are not counted.
func BenchmarkCreate5000(b *testing.B) {
	r, _ := benchRepo(b, 5000, Options{})
	ctx := context.Background()
	snap, err := r.Snapshot(ctx)
	must(b, err)
	r.checkoutConfWhy(ctx)
	for _, why := range []string{"", "benchmark: git checkouts"} {
		// The first of each reads the snapshot's objects (Go: into the
		// memory the next creations share; git: into the page cache).
		r.checkout.confWhy = why
		w, err := r.NewWorktree(ctx, snap, "warm")
		must(b, err)
		must(b, w.Remove(ctx))
	}
	var wall, cpu [2]time.Duration
	i := 0
	for b.Loop() {
		for k, why := range []string{"", "benchmark: git checkouts"} {
			b.StopTimer()
			r.checkout.confWhy = why
			b.StartTimer()
			t0, c0 := time.Now(), cpuTime()
			i++
			w, err := r.NewWorktree(ctx, snap, "c"+strconv.Itoa(i))
			wall[k] += time.Since(t0)
			cpu[k] += cpuTime() - c0
			must(b, err)
			b.StopTimer()
			must(b, w.Remove(ctx))
			b.StartTimer()
		}
	}
	if inGo, byGit := checkoutCounts(r); inGo != b.N+1 || byGit != b.N+1 {
		b.Fatalf("checkouts in Go %d, by git %d; want %d each", inGo, byGit, b.N+1)
	}
	for k, name := range []string{"go", "git"} {
		b.ReportMetric(float64(wall[k].Milliseconds())/float64(b.N), name+"-ms/op")
		b.ReportMetric(float64(cpu[k].Milliseconds())/float64(b.N), name+"-cpu-ms/op")
	}
}
