package changes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/internal/testfiles"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/workspace"
)

// BenchmarkNodeStoreTidy measures one tidy of a node's store (git's
// repack and prune, the git lfs listing) holding a 5,000-file snapshot
// whole (the node's checkout lacks its base: the worst case, every
// object the store's own) that a worktree kept for reuse holds, and the
// garbage of one more task's capture.
func BenchmarkNodeStoreTidy(b *testing.B) {
	files := map[string]string{}
	for i := range 5000 {
		files[fmt.Sprintf("d%02d/f%04d.go", i%50, i)] = fmt.Sprintf("package d\n\n// file %d\nvar X%d = %d\n", i, i, i)
	}
	req := gitRepoB(b, files)
	writeB(b, req, "u.txt", "uncommitted\n")
	node := b.TempDir()
	testfiles.Git(b, node, "init", "-q")
	ctx := context.Background()
	repo, err := workspace.Open(ctx, req, workspace.Options{DataDir: filepath.Join(req, ".troupe"), StateDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	snap, err := repo.Snapshot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	n := NewNode(Dirs{Root: node, Data: filepath.Join(node, ".troupe", "snapshots"), State: b.TempDir()}, 1, 0, zerolog.Nop())
	n.bounds = workspace.DefaultStoreBounds
	defer n.Close()
	tr := Local{From: repo}
	ts := messages.TaskSnapshot{Commit: snap.Commit, Tree: snap.Tree, Base: snap.Base, Prefix: snap.Prefix}
	h, err := n.Start(ctx, tr, ts, "r1-w0-0")
	if err != nil {
		b.Fatal(err)
	}
	writeB(b, h.Root(), "d00/f0000.go", "package d\n// edited\n")
	if _, err := h.End(ctx, tr, true, "r1", "w0"); err != nil {
		b.Fatal(err)
	}
	n.tidies.Wait()
	before, _ := n.keeper.Usage()
	for _, force := range []bool{true, false} {
		name := "forced"
		if !force {
			name = "within-bounds" // what every task's end costs when nothing is over
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if tidy, err := n.keeper.Tidy(ctx, force); err != nil || tidy.Busy || tidy.Git != force {
					b.Fatal(tidy, err)
				}
			}
			after, _ := n.keeper.Usage()
			b.ReportMetric(float64(before.GitBytes), "store-bytes-before")
			b.ReportMetric(float64(after.GitBytes), "store-bytes-after")
		})
	}
}

// writeB writes body to dir/name.
func writeB(b *testing.B, dir, name, body string) {
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		b.Fatal(err)
	}
}

// gitRepoB is gitRepo for a benchmark.
func gitRepoB(b *testing.B, files map[string]string) string {
	dir := b.TempDir()
	for name, body := range files {
		writeB(b, dir, name, body)
	}
	testfiles.Git(b, dir, "init", "-q")
	testfiles.Git(b, dir, "add", "-A")
	testfiles.Git(b, dir, "commit", "-q", "-m", "first")
	return dir
}
