package workspace

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkPrune5000 measures what Repo.Prune costs to keep (and then
// remove) one killed process's worktree of a 5,000-file repository: a
// checkout nobody touched, an overlay nobody touched, and a checkout
// with one file edited. Each worktree is made and left dead (asDead)
// with the timer stopped; one Prune per worktree is timed. The load
// average is reported: the machine may be shared.
func BenchmarkPrune5000(b *testing.B) {
	for _, bc := range []struct {
		name    string
		kind    string
		touched bool
	}{
		{"checkout-untouched", WorktreesCheckout, false},
		{"overlay-untouched", WorktreesOverlay, false},
		{"checkout-one-touched", WorktreesCheckout, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r, _ := benchRepo(b, 5000, Options{Worktrees: bc.kind})
			snap, err := r.Snapshot(b.Context())
			must(b, err)
			var spent time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				w, err := r.NewWorktree(b.Context(), snap, "worker")
				if err != nil && bc.kind == WorktreesOverlay && os.Getenv("CI") != "true" {
					b.Skip(err)
				}
				must(b, err)
				if bc.touched {
					write(b, w.Root(), map[string]string{"pkg07/file0007.go": "package pkg\n// the agent's\n"})
				}
				asDead(b, w)
				b.StartTimer()
				start := time.Now()
				kept, err := r.PruneKeep(b.Context())
				spent += time.Since(start)
				must(b, err)
				if len(kept) != map[bool]int{false: 0, true: 1}[bc.touched] {
					b.Fatalf("kept %+v", kept)
				}
				if bc.touched {
					b.StopTimer()
					must(b, os.RemoveAll(filepath.Dir(kept[0].Patch)))
					b.StartTimer()
				}
			}
			b.ReportMetric(float64(spent.Microseconds())/1000/float64(b.N), "prune-ms/op")
			b.ReportMetric(loadAvg(), "load")
		})
	}
}
