package workspace

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// benchRepo makes a repository of n files in 50 directories, with one
// uncommitted edit and one untracked file.
func benchRepo(b testing.TB, n int, opts Options) (*Repo, string) {
	b.Helper()
	files := make(map[string]string, n)
	for i := range n {
		files[fmt.Sprintf("pkg%02d/file%04d.go", i%50, i)] = fmt.Sprintf("package pkg\n\n// File %d.\nfunc F%d() int { return %d }\n", i, i, i)
	}
	root := newRepo(b, files)
	write(b, root, map[string]string{"pkg00/file0000.go": "package pkg\n// edited\n", "untracked.go": "package main\n"})
	r, err := Open(context.Background(), root, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = r.Close(context.Background()) })
	return r, root
}

// BenchmarkSnapshot5000 measures a snapshot of a 5,000-file checkout.
func BenchmarkSnapshot5000(b *testing.B) {
	r, _ := benchRepo(b, 5000, Options{})
	ctx := context.Background()
	b.ResetTimer()
	cpu := cpuTime()
	for b.Loop() {
		if _, err := r.Snapshot(ctx); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu, b.N, "cpu-ms/op")
}

// BenchmarkWorkerCycle5000 measures one worker's worktree create, one
// edit, capture, apply and removal on a 5,000-file checkout: cold, a new
// worktree each time (every file written), and pooled, the steady state
// of a run whose Repo keeps two idle worktrees (Options.KeepIdle): the
// worker takes one already prepared for the snapshot while the one it
// parks is prepared in the background, as while an agent works. cpu-ms
// counts git's processes and the background preparation too.
func BenchmarkWorkerCycle5000(b *testing.B) {
	b.Run("cold", func(b *testing.B) { benchCycle(b, Options{}) })
	b.Run("pooled", func(b *testing.B) { benchCycle(b, Options{KeepIdle: 2}) })
}

func benchCycle(b *testing.B, opts Options) {
	r, _ := benchRepo(b, 5000, opts)
	ctx := context.Background()
	snap, err := r.Snapshot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	r.Prewarm(snap, opts.KeepIdle)
	waitIdle(b, r)
	i := 0
	cpu := cpuTime()
	for b.Loop() {
		i++
		cycle(b, r, snap, i)
	}
	reportCPU(b, cpu, b.N, "cpu-ms/op")
}

// BenchmarkWorkers50Parallel5000 starts 50 workers at once on a
// 5,000-file checkout, each through create, edit, capture, apply and
// removal, and reports the wall and CPU time per worker: first-round,
// the run's first 50 workers, every worktree new; steady, later rounds,
// every worker taking one of the 50 worktrees the earlier rounds kept
// (Options.KeepIdle), rounds back to back.
func BenchmarkWorkers50Parallel5000(b *testing.B) {
	r, _ := benchRepo(b, 5000, Options{KeepIdle: 50})
	ctx := context.Background()
	snap, err := r.Snapshot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	round := 0
	workers := func() {
		round++
		var wg sync.WaitGroup
		for i := range 50 {
			wg.Go(func() { cycle(b, r, snap, round*100+i) })
		}
		wg.Wait()
	}
	b.Run("first-round", func(b *testing.B) {
		var spent time.Duration
		for b.Loop() {
			cpu := cpuTime()
			workers()
			spent += cpuTime() - cpu
			b.StopTimer()
			if err := r.Close(ctx); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*50)/1e6, "ms/worker")
		b.ReportMetric(float64(spent)/float64(b.N*50)/1e6, "cpu-ms/worker")
	})
	b.Run("steady", func(b *testing.B) {
		workers() // the first round fills the pool
		waitIdle(b, r)
		cpu := cpuTime()
		for b.Loop() {
			workers()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*50)/1e6, "ms/worker")
		reportCPU(b, cpu, b.N*50, "cpu-ms/worker")
	})
}

// waitIdle waits until the worktrees r keeps are prepared.
func waitIdle(tb testing.TB, r *Repo) {
	tb.Helper()
	r.idleMu.Lock()
	idle := slices.Clone(r.idle)
	r.idleMu.Unlock()
	for _, w := range idle {
		<-w.ready
		if w.err != nil {
			tb.Fatal(w.err)
		}
	}
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

// cpuTime is the CPU time (user and system) this process and the git
// processes it waited for have used so far. The machine may be shared,
// so the benchmarks report it next to the wall time.
func cpuTime() time.Duration {
	var self, kids syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	var total time.Duration
	for _, t := range []syscall.Timeval{self.Utime, self.Stime, kids.Utime, kids.Stime} {
		total += time.Duration(t.Nano())
	}
	return total
}

// reportCPU reports the CPU time used since start per unit (op or worker).
func reportCPU(b *testing.B, start time.Duration, units int, name string) {
	b.ReportMetric(float64(cpuTime()-start)/float64(units)/1e6, name)
}
