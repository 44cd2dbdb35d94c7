package workspace

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/messages"
)

// mergeBenchCases are n text files of 40 lines that both sides changed,
// the user at the top, the agent at the bottom: each needs a content
// merge.
func mergeBenchCases(n int) []mergeCase {
	var cases []mergeCase
	for i := range n {
		var b strings.Builder
		for l := range 40 {
			fmt.Fprintf(&b, "file %d line %d\n", i, l)
		}
		base := b.String()
		cases = append(cases, mergeCase{path: fmt.Sprintf("d/f%02d.txt", i),
			base:   version{mode: "100644", data: []byte(base)},
			ours:   version{mode: "100644", data: []byte(strings.Replace(base, "line 1\n", "line 1 ours\n", 1))},
			theirs: version{mode: "100644", data: []byte(strings.Replace(base, "line 38\n", "line 38 theirs\n", 1))}})
	}
	return cases
}

// BenchmarkMergeVsGitMergeTree: 20 files both sides changed, merged
// cleanly: by the Go merge's decisions alone (one git merge-file per
// file), by a whole Apply (decisions, the land and its fsyncs), and by
// one git merge-tree --write-tree of the three commits (objects only,
// nothing checked out).
func BenchmarkMergeVsGitMergeTree(b *testing.B) {
	cases := mergeBenchCases(20)
	b.Run("go-decide", func(b *testing.B) {
		root := newRepo(b, map[string]string{"keep": "k\n"})
		r := open(b, root)
		defer r.Close(context.Background())
		for b.Loop() {
			for _, c := range cases {
				ch, reason, err := r.mergeClean(context.Background(), c.path, c.ours, c.base, c.theirs, nil)
				if err != nil || reason != "" || ch == nil {
					b.Fatal(c.path, reason, err)
				}
			}
		}
	})
	b.Run("go-apply", func(b *testing.B) {
		root := newRepo(b, map[string]string{".troupe/.gitignore": "*\n", "keep": "k\n"})
		files := map[string]string{}
		for _, c := range cases {
			files[c.path] = string(c.base.data)
		}
		write(b, root, files)
		sh(b, root, "add", "-A")
		sh(b, root, "commit", "-q", "-m", "base")
		r := open(b, root)
		defer r.Close(context.Background())
		snap, err := r.Snapshot(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		w, err := r.NewWorktree(context.Background(), snap, "w")
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range cases {
			files[c.path] = string(c.theirs.data)
		}
		write(b, w.Root(), files)
		cs, err := w.Capture(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		_ = w.Remove(context.Background())
		for _, c := range cases {
			files[c.path] = string(c.ours.data)
		}
		write(b, root, files)
		for b.Loop() {
			out, err := r.Apply(context.Background(), snap, cs, ModeApply, "run1", "w")
			if err != nil || out.Status != messages.ChangeStatusApplied {
				b.Fatalf("%+v %v", out, err)
			}
		}
	})
	b.Run("git-merge-tree", func(b *testing.B) {
		dir := b.TempDir()
		ref := gitMergeTree(b, dir, cases) // the scratch repository and its commits
		for b.Loop() {
			if _, code := gitIn(b, dir, nil, nil, "merge-tree", "--write-tree", ref.ours, ref.theirs); code != 0 {
				b.Fatal("conflict")
			}
		}
	})
}
