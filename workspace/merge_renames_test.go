package workspace

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/messages"
)

// genRenameCases draws n cases with seed for renames: each path a text
// file of 12 lines, each side changing it as genSide does, and moving
// it (when it keeps it) half the time, to one of two names (both sides
// may move it to the same one, or to different ones).
func genRenameCases(seed uint64, n int) []mergeCase {
	rnd := rand.New(rand.NewPCG(seed, seed^0x51ed2701a3c3b2d5))
	var cases []mergeCase
	for i := range n {
		c := mergeCase{path: fmt.Sprintf("r%02d.txt", i), base: version{mode: "100644", data: genText(rnd, 12, "\n")}}
		c.ours, c.theirs = genSide(rnd, c.base), genSide(rnd, c.base)
		if c.ours.exists() && rnd.IntN(2) == 0 {
			c.oursPath = fmt.Sprintf("moved/r%02d-%d.txt", i, rnd.IntN(2))
		}
		if c.theirs.exists() && rnd.IntN(2) == 0 {
			c.theirsPath = fmt.Sprintf("moved/r%02d-%d.txt", i, rnd.IntN(2))
		}
		cases = append(cases, c)
	}
	return cases
}

// treeOnDisk is every file below root but .git and .troupe, as onDisk
// reads it.
func treeOnDisk(t *testing.T, root string) map[string][2]string {
	t.Helper()
	got := map[string][2]string{}
	must(t, filepath.WalkDir(root, func(abs string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, abs)
		if d.IsDir() {
			if rel == ".git" || rel == ".troupe" {
				return filepath.SkipDir
			}
			return nil
		}
		rel = filepath.ToSlash(rel)
		got[rel], _ = onDisk(t, root, rel)
		return nil
	}))
	return got
}

// The user renaming a file the agent edited, the agent renaming one the
// user edited, both renaming it (to one name or two), with or without
// edits: the merge agrees with git merge-tree --write-tree with rename
// detection, case set by case set: it conflicts where git does, and
// where git merges cleanly the workspace holds exactly git's tree (the
// edit carried to the renamed file, nothing left at the old name).
// Without the rename route (mergeRenames) a rename against an edit
// conflicts here and merges in git.
func TestMergeAgreesWithGitOnRenames(t *testing.T) {
	needGit(t)
	renamed := 0
	for seed := range uint64(24) {
		cases := genRenameCases(seed, 2)
		t.Run("seed"+strconv.FormatUint(seed, 10), func(t *testing.T) {
			ref := gitMergeTreeOpts(t, t.TempDir(), cases, true)
			out, root := goMerge(t, cases)
			describe := func() string {
				var b strings.Builder
				for _, c := range cases {
					fmt.Fprintf(&b, "\n  %s: base %s\n    ours   %q %s\n    theirs %q %s", c.path, c.base.describe(), c.oursPath, c.ours.describe(), c.theirsPath, c.theirs.describe())
				}
				return b.String()
			}
			if gitConflicts, goConflicts := len(ref.conflicts) > 0, out.Status == messages.ChangeStatusConflict; gitConflicts != goConflicts {
				t.Fatalf("Go conflicts %v (%+v), git %v (%v)%s", goConflicts, out, gitConflicts, ref.conflicts, describe())
			}
			if len(ref.conflicts) > 0 {
				return
			}
			want := ref.result
			want["keep"] = [2]string{"100644", blobID([]byte("k\n"))}
			if got := treeOnDisk(t, root); !mapsEqual(got, want) {
				t.Errorf("the workspace holds\n  %v\ngit merged\n  %v%s", got, want, describe())
			}
			for _, c := range cases {
				if (c.oursPath != "") != (c.theirsPath != "") {
					renamed++
				}
			}
		})
	}
	if renamed == 0 {
		t.Error("no case set with a rename on one side merged cleanly: the generator tests nothing")
	}
}

// mapsEqual reports whether a and b hold the same entries.
func mapsEqual(a, b map[string][2]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// A user who renamed the file an agent edited keeps the rename, and the
// agent's edit lands in the renamed file; an agent that renamed a file
// the user edited lands its rename with the user's edit in it.
func TestRenameAgainstAnEditKeepsBoth(t *testing.T) {
	needGit(t)
	base := genText(rand.New(rand.NewPCG(1, 2)), 12, "\n")
	edited := []byte(strings.Replace(string(base), "3 ", "3 edited ", 1))
	for _, tc := range []struct {
		name string
		c    mergeCase
	}{
		{"the user renamed", mergeCase{path: "a.txt", base: version{mode: "100644", data: base}, oursPath: "b.txt",
			ours: version{mode: "100644", data: base}, theirs: version{mode: "100644", data: edited}}},
		{"the agent renamed", mergeCase{path: "a.txt", base: version{mode: "100644", data: base}, theirsPath: "b.txt",
			ours: version{mode: "100644", data: edited}, theirs: version{mode: "100644", data: base}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, root := goMerge(t, []mergeCase{tc.c})
			if out.Status != messages.ChangeStatusApplied {
				t.Fatalf("outcome %+v, want applied", out)
			}
			want := map[string][2]string{"keep": {"100644", blobID([]byte("k\n"))}, "b.txt": {"100644", blobID(edited)}}
			if got := treeOnDisk(t, root); !mapsEqual(got, want) {
				t.Errorf("the workspace holds %v, want b.txt with the edit and no a.txt", got)
			}
		})
	}
}
