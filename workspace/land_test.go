package workspace

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/messages"
)

// landCase is a workspace, its snapshot, and a worker's changeset that
// modifies two files, deletes one and adds one in new directories.
type landCase struct {
	root          string
	r             *Repo
	snap          Snapshot
	cs            messages.Changeset
	before, after map[string]string
	patchSum      string // a big case's: its patch's SHA-256 (git's diff of its trees)
}

// newLandCase makes a landCase.
func newLandCase(t *testing.T) landCase {
	t.Helper()
	c := landCase{root: newRepo(t, map[string]string{"a.txt": "a\n", "d/b.txt": "b\n", "gone.txt": "gone\n", "keep.txt": "keep\n"})}
	// As a run makes it (statedir.PrepareData): git status ignores it.
	write(t, c.root, map[string]string{".troupe/.gitignore": "*\n"})
	c.r, c.snap = openSnap(t, c.root)
	w, err := c.r.NewWorktree(t.Context(), c.snap, "w")
	must(t, err)
	write(t, w.Root(), map[string]string{"a.txt": "a2\n", "d/b.txt": "b2\n", "n/m/new.txt": "new\n"})
	must(t, os.Remove(filepath.Join(w.Root(), "gone.txt")))
	c.cs, err = w.Capture(t.Context())
	must(t, err)
	must(t, w.Remove(t.Context()))
	if len(c.cs.Files) != 4 {
		t.Fatalf("changeset files %+v", c.cs.Files)
	}
	c.before = diskFiles(t, c.root)
	c.after = map[string]string{"a.txt": "a2\n", "d/b.txt": "b2\n", "keep.txt": "keep\n", "n/m/new.txt": "new\n"}
	return c
}

// diskFiles is every file and directory of the tree at root but .git
// and .troupe: path → contents ("<dir>" for a directory).
func diskFiles(t *testing.T, root string) map[string]string {
	t.Helper()
	files := map[string]string{}
	must(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case rel == ".":
		case rel == ".git" || rel == ".troupe":
			return filepath.SkipDir
		case d.IsDir():
			files[filepath.ToSlash(rel)] = "<dir>"
		default:
			files[filepath.ToSlash(rel)] = read(t, root, rel)
		}
		return nil
	}))
	return files
}

// sameFiles checks that the tree holds exactly want (directories aside).
func sameFiles(t *testing.T, when string, got, want map[string]string) {
	t.Helper()
	got = maps.Clone(got)
	maps.DeleteFunc(got, func(_, v string) bool { return v == "<dir>" })
	if !maps.Equal(got, want) {
		t.Errorf("%s: the workspace holds %v, want %v", when, got, want)
	}
}

// checkPatchKept checks that path holds a patch that applies to the
// snapshot with git apply --check.
func (c landCase) checkPatchKept(t *testing.T, path string) {
	t.Helper()
	if path == "" {
		t.Fatal("no patch kept")
	}
	w, err := c.r.NewWorktree(t.Context(), c.snap, "check")
	must(t, err)
	defer w.Remove(t.Context())
	sh(t, w.Dir(), "apply", "--check", path)
}

// An I/O error in the middle of a land leaves the workspace as it was
// (directories included) and keeps the patch, the outcome naming it:
// a file where the land must make a directory (made by the user after
// the merge was planned), and a file that cannot be renamed into place
// after the first was.
func TestLandIOErrorRollsBack(t *testing.T) {
	for _, tc := range []struct {
		name string
		step string
		n    int
		harm func(t *testing.T, root string)
	}{
		{"a file where a directory must be made", landPlanned, 0, func(t *testing.T, root string) {
			write(t, root, map[string]string{"n": "the user's file\n"})
		}},
		{"a rename fails after the first", "renamed", 1, func(t *testing.T, root string) {
			news, _ := filepath.Glob(filepath.Join(root, "n", "m", ".troupe-land-*.new"))
			if len(news) != 1 {
				t.Fatalf("new file's temporary name: %v", news)
			}
			must(t, os.Remove(news[0]))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newLandCase(t)
			landHook = func(step string, n int) error {
				if step == tc.step && n == tc.n {
					tc.harm(t, c.root)
				}
				return nil
			}
			defer func() { landHook = nil }()
			want := diskFiles(t, c.root)
			if tc.step == landPlanned {
				want["n"] = "the user's file\n"
			}
			out, err := c.r.Apply(t.Context(), c.snap, c.cs, ModeApply, "run1", "w")
			if err == nil || out.Status != messages.ChangeStatusError || !strings.Contains(out.Error, "rolled back") {
				t.Fatalf("outcome %+v, %v", out, err)
			}
			if got := diskFiles(t, c.root); !maps.Equal(got, want) {
				t.Errorf("after the failed land the workspace holds %v, want %v", got, want)
			}
			c.checkPatchKept(t, out.Patch)
			if st := sh(t, c.root, "status", "--porcelain"); tc.step != landPlanned && st != "" {
				t.Errorf("git status after the failed land:\n%s", st)
			}
		})
	}
}

// A directory the land cannot write (a user without root's rights):
// nothing is written, the patch kept.
func TestLandUnwritableDirectoryRollsBack(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes a read-only directory: TestLandIOErrorRollsBack covers the rollback")
	}
	c := newLandCase(t)
	must(t, os.Chmod(filepath.Join(c.root, "d"), 0o555))
	defer os.Chmod(filepath.Join(c.root, "d"), 0o755)
	out, err := c.r.Apply(t.Context(), c.snap, c.cs, ModeApply, "run1", "w")
	if err == nil || out.Status != messages.ChangeStatusError {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	if got := diskFiles(t, c.root); !maps.Equal(got, c.before) {
		t.Errorf("the workspace holds %v, want %v", got, c.before)
	}
	c.checkPatchKept(t, out.Patch)
}

// A land that succeeds leaves no temporary file, pre-image or journal.
func TestLandLeavesNothingBehind(t *testing.T) {
	c := newLandCase(t)
	out, err := c.r.Apply(t.Context(), c.snap, c.cs, ModeApply, "run1", "w")
	if err != nil || out.Status != messages.ChangeStatusApplied {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	sameFiles(t, "after the land", diskFiles(t, c.root), c.after)
	if _, err := os.Stat(filepath.Join(c.root, ".troupe", "runs", "run1", "changes", "w.patch")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("an applied changeset's patch was kept: %v", err)
	}
	if names, _ := os.ReadDir(filepath.Join(c.r.home.dir, "land")); len(names) != 0 {
		t.Errorf("journal left: %v", names)
	}
}
