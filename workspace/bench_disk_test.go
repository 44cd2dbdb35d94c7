package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
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
