package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkOverlayCycle5000 is BenchmarkWorkerCycle5000 with overlay
// worktrees (create, one edit, capture, apply, removal; the lower tree
// checked out once, before the timer), next to git-worktree, what the
// same worker costs with git alone: git worktree add, the edit, git add
// -A, git diff --cached, git worktree remove. Wall and CPU time per
// worker; the goal is overlay ≤ 0.1 × git-worktree.
func BenchmarkOverlayCycle5000(b *testing.B) {
	for name, keep := range map[string]int{"overlay": 0, "overlay-kept": 1} {
		b.Run(name, func(b *testing.B) { overlayCycles(b, keep) })
	}
	b.Run("git-worktree", func(b *testing.B) {
		_, root := benchRepo(b, 5000, Options{})
		base := b.TempDir()
		i := 0
		cpu := cpuTime()
		for b.Loop() {
			i++
			gitWorktreeCycle(b, root, filepath.Join(base, fmt.Sprintf("w%d", i)), i)
		}
		reportCPU(b, cpu, b.N, "cpu-ms/op")
	})
}

// gitWorktreeCycle is one worker's life with git alone.
func gitWorktreeCycle(b *testing.B, root, dir string, i int) {
	sh(b, root, "worktree", "add", "-q", "--detach", dir)
	path := fmt.Sprintf("pkg%02d/file%04d.go", i%50, 1000+i%4000)
	if err := os.WriteFile(filepath.Join(dir, path), []byte("// worker\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	sh(b, dir, "add", "-A")
	sh(b, dir, "diff", "--cached", "--binary")
	sh(b, root, "worktree", "remove", "--force", dir)
}

// BenchmarkOverlayWorkers50First5000 is BenchmarkWorkers50Parallel5000's
// first round with overlay worktrees: 50 workers started at once on a
// snapshot no Repo of this process has used. "cold": its lower tree is
// in no cache and is checked out in the round (by the first worker, the
// others waiting for it); "cached": a run before this one left it in the
// home (lower_cache.go), so the round only mounts. Wall and CPU time per
// worker.
func BenchmarkOverlayWorkers50First5000(b *testing.B) {
	for _, cold := range []bool{true, false} {
		name := map[bool]string{true: "cold", false: "cached"}[cold]
		b.Run(name, func(b *testing.B) { overlayFirstRounds(b, cold) })
	}
}

// overlayFirstRounds is BenchmarkOverlayWorkers50First5000's rounds.
func overlayFirstRounds(b *testing.B, cold bool) {
	r, _ := benchRepo(b, 5000, Options{Worktrees: WorktreesOverlay})
	ctx := context.Background()
	snap, err := r.Snapshot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if w, err := r.NewWorktree(ctx, snap, "probe"); err != nil {
		b.Skip(err)
	} else if err := w.Remove(ctx); err != nil {
		b.Fatal(err)
	}
	settle := func() { // every round starts as a new run's first
		if err := r.Close(ctx); err != nil {
			b.Fatal(err)
		}
		if cold {
			lowers, _ := os.ReadDir(r.lowersDir())
			for _, l := range lowers {
				if err := os.RemoveAll(filepath.Join(r.lowersDir(), l.Name())); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	settle()
	var spent time.Duration
	round := 0
	for b.Loop() {
		round++
		cpu := cpuTime()
		var wg sync.WaitGroup
		for i := range 50 {
			wg.Go(func() { cycle(b, r, snap, round*100+i) })
		}
		wg.Wait()
		spent += cpuTime() - cpu
		b.StopTimer()
		settle()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*50)/1e6, "ms/worker")
	b.ReportMetric(float64(spent)/float64(b.N*50)/1e6, "cpu-ms/worker")
	b.ReportMetric(loadAvg(), "load1")
}

// overlayCycles is BenchmarkOverlayCycle5000's overlay worker: a fresh
// overlay each time, or (keep 1) the one overlay kept and remounted.
func overlayCycles(b *testing.B, keep int) {
	r, _ := benchRepo(b, 5000, Options{Worktrees: WorktreesOverlay, KeepIdle: keep})
	snap, err := r.Snapshot(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	hold, err := r.NewWorktree(context.Background(), snap, "hold") // keeps the lower tree
	if err != nil {
		b.Skip(err)
	}
	defer hold.Remove(context.Background())
	i := 0
	cpu := cpuTime()
	for b.Loop() {
		i++
		cycle(b, r, snap, i)
	}
	reportCPU(b, cpu, b.N, "cpu-ms/op")
}

// loadAvg is the one-minute load average: the machine may be shared.
func loadAvg() float64 {
	raw, _ := os.ReadFile("/proc/loadavg")
	var l float64
	_, _ = fmt.Sscan(strings.Fields(string(raw) + " 0")[0], &l)
	return l
}
