package actors_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// BenchmarkIsolation20x5000 is a worker's isolation overhead at the agent
// level: a run whose root starts 20 background workers at once on a
// 5,000-file repository, each writing one file (write_file) through the
// scripted model, then the run waits for them. "shared" runs them in the
// workspace itself (isolation: shared), "overlay" and "checkout" each in
// a worktree of that kind (snapshot, worktree, capture, land); the
// overhead per worker is (isolated - shared) / 20 of ms-wall/run. Next
// to it, "git-worktree" is one worker's life with git alone: git worktree
// add, the edit, git add -A, git diff --cached, git worktree remove. The
// goal is overhead ≤ 0.1 × git-worktree. The -50 pair is 50 workers at
// once; every run opens the workspace anew, so each is a first round
// (the shared lower checkout of an overlay run counted in: each run
// lands new files, so its snapshot's tree is new). "overlay-50-same"
// removes the files the run before landed (untimed), so every run after
// the first snapshots the same tree and mounts the lower tree an earlier
// run left in the home. Each run's outcomes are checked (20 applied).
// Reported, never asserted.
func BenchmarkIsolation20x5000(b *testing.B) {
	for _, mode := range []struct {
		name, isolation, worktrees string
		workers                    int
		reset                      bool
	}{
		{"shared", "shared", "", 20, false}, {"overlay", "worktree", "overlay", 20, false}, {"checkout", "worktree", "checkout", 20, false},
		{"shared-50", "shared", "", 50, false}, {"overlay-50", "worktree", "overlay", 50, false},
		{"overlay-50-same", "worktree", "overlay", 50, true},
	} {
		workers := mode.workers
		b.Run(mode.name, func(b *testing.B) {
			ws := benchRepo5000(b)
			i := 0
			var wall, cpu time.Duration
			for b.Loop() {
				i++
				if mode.reset { // untimed: the workspace as the first run found it
					benchGit(b, ws, "clean", "-qf", "--", "pkg*/run*_w*.go")
				}
				before := cpuTime()
				wall += isolationRun(b, ws, mode.isolation, mode.worktrees, workers, i)
				cpu += cpuTime() - before
			}
			b.ReportMetric(float64(wall.Microseconds())/1000/float64(b.N), "ms-wall/run")
			b.ReportMetric(float64(wall.Microseconds())/1000/float64(b.N*workers), "ms-wall/worker")
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N*workers), "ms-cpu/worker")
			b.ReportMetric(loadAvg(), "load1")
		})
	}
	b.Run("git-worktree", func(b *testing.B) {
		ws := benchRepo5000(b)
		base := b.TempDir()
		i := 0
		before := cpuTime()
		for b.Loop() {
			i++
			dir := filepath.Join(base, fmt.Sprintf("w%d", i))
			benchGit(b, ws, "worktree", "add", "-q", "--detach", dir)
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("pkg%02d/new%d.go", i%50, i)), []byte("package pkg\n"), 0o644); err != nil {
				b.Fatal(err)
			}
			benchGit(b, dir, "add", "-A")
			benchGit(b, dir, "diff", "--cached", "--binary")
			benchGit(b, ws, "worktree", "remove", "--force", dir)
		}
		b.ReportMetric(float64((cpuTime()-before).Microseconds())/1000/float64(b.N), "ms-cpu/worker")
		b.ReportMetric(loadAvg(), "load1")
	})
}

// isolationRun runs one root starting workers background workers, the
// i-th run's, and returns its wall time.
func isolationRun(b *testing.B, ws, isolation, worktrees string, workers, i int) time.Duration {
	fan := make([]llmtest.ToolCall, workers)
	agents := []llmtest.AgentScript{kind("root", calls(fan...), say("started"))}
	for w := range workers {
		task := fmt.Sprintf("task w%02d-", w)
		fan[w] = delegate("worker", task, true)
		args := fmt.Sprintf(`{"path":"pkg%02d/run%d_w%02d.go","content":"package pkg\n"}`, w, i, w)
		agents = append(agents, llmtest.AgentScript{Match: llmtest.Matcher{Kind: "worker", TaskContains: task},
			Turns: []llmtest.Turn{calls(tc("write_file", args)), say("done")}})
	}
	srv := llmtest.New(script(agents...))
	defer srv.Close()
	o, _ := benchOptions(b, srv, nil)
	o.Workspace = ws
	o.Settings.PlanFirst = map[string]bool{"root": false, "worker": false}
	o.Settings.Isolation, o.Settings.Worktrees, o.Settings.OnParentFinish = isolation, worktrees, "wait"
	start := time.Now()
	res, err := actors.Run(context.Background(), o)
	wall := time.Since(start)
	if err != nil {
		b.Fatal(err)
	}
	applied := 0
	for _, c := range res.Changes {
		if c.Status == messages.ChangeStatusApplied {
			applied++
		}
	}
	if isolation != "shared" && applied != workers {
		b.Fatalf("%d of %d changes applied: %+v", applied, workers, res.Changes)
	}
	if _, err := os.Stat(filepath.Join(ws, fmt.Sprintf("pkg%02d/run%d_w%02d.go", workers-1, i, workers-1))); err != nil {
		b.Fatal(err)
	}
	return wall
}

// benchRepo5000 is a committed repository of 5,000 files in 50
// directories.
func benchRepo5000(b *testing.B) string {
	b.Helper()
	ws := b.TempDir()
	for i := range 5000 {
		p := filepath.Join(ws, fmt.Sprintf("pkg%02d/file%04d.go", i%50, i))
		if i < 50 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(p, fmt.Appendf(nil, "package pkg\n\n// File %d.\nfunc F%d() int { return %d }\n", i, i, i), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	benchGit(b, ws, "init", "-q")
	benchGit(b, ws, "add", "-A")
	benchGit(b, ws, "-c", "user.name=b", "-c", "user.email=b@example.com", "commit", "-q", "-m", "base")
	return ws
}

func benchGit(b *testing.B, dir string, args ...string) {
	b.Helper()
	if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
		b.Fatalf("git %v: %v %s", args, err, out)
	}
}

// loadAvg is the one-minute load average.
func loadAvg() float64 {
	raw, _ := os.ReadFile("/proc/loadavg")
	var l float64
	_, _ = fmt.Sscan(strings.Fields(string(raw) + " 0")[0], &l)
	return l
}
