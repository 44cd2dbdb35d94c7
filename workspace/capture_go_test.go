package workspace

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// gitTree is the tree `git add -A && git write-tree` makes of w's files,
// in a copy of w's index.
func gitTree(t *testing.T, w *Worktree) string {
	t.Helper()
	gitDir, err := gitDirOf(w.Dir())
	must(t, err)
	idx := filepath.Join(t.TempDir(), "index")
	must(t, copyFile(filepath.Join(gitDir, "index"), idx))
	g := w.g.withIndex(idx)
	if _, err := g.run(t.Context(), nil, "add", "-A", "--ignore-errors", "--", "."); err != nil {
		t.Fatal(err)
	}
	tree, err := g.line(t.Context(), "write-tree")
	must(t, err)
	return tree
}

// diffRepo is the repository the differential tests start from: names
// that test git's entry order, modes, a symlink, ignore rules.
func diffRepo(t *testing.T) string {
	t.Helper()
	root := newRepo(t, map[string]string{
		"a.txt": "a\n", "a/x": "x\n", "a/b/y": "y\n", "a-b": "-\n", "a0": "0\n", "c/d/e/f.go": "f\n",
		"run.sh": "#!/bin/sh\n", "empty": "", "bin.dat": "\x00\x01\x02", ".gitignore": "*.log\nbuild/\n",
		"z/one": "1\n", "z/two": "2\n",
	})
	must(t, os.Chmod(filepath.Join(root, "run.sh"), 0o755))
	must(t, os.Symlink("a.txt", filepath.Join(root, "link")))
	sh(t, root, "add", "-A")
	sh(t, root, "commit", "-q", "-m", "modes")
	return root
}

// randomEdit makes one random change of the kinds an agent makes.
func randomEdit(t *testing.T, rng *rand.Rand, dir string, n int) {
	t.Helper()
	files := trackedAndNew(t, dir)
	pick := func() string { return files[rng.IntN(len(files))] }
	abs := func(p string) string { return filepath.Join(dir, filepath.FromSlash(p)) }
	write := func(_ *testing.T, _ string, files map[string]string) { // where a file is in the way, nothing
		for p, c := range files {
			if os.MkdirAll(filepath.Dir(abs(p)), 0o755) == nil {
				os.WriteFile(abs(p), []byte(c), 0o644)
			}
		}
	}
	switch rng.IntN(14) {
	case 0, 1:
		write(t, dir, map[string]string{pick(): fmt.Sprintf("edit %d\n", n)})
	case 2:
		os.RemoveAll(abs(pick()))
	case 3:
		write(t, dir, map[string]string{fmt.Sprintf("new%d.txt", n): "new\n"})
	case 4:
		write(t, dir, map[string]string{fmt.Sprintf("n%d/deep/er/f.txt", n): "nested\n", fmt.Sprintf("n%d/x.log", n): "ignored\n"})
	case 5:
		p := abs(pick())
		if info, err := os.Lstat(p); err == nil && info.Mode().IsRegular() {
			os.Chmod(p, info.Mode()^0o111)
		}
	case 6:
		p := abs(pick())
		os.RemoveAll(p)
		os.Symlink(fmt.Sprintf("target%d", n), p)
	case 7:
		write(t, dir, map[string]string{fmt.Sprintf("debug%d.log", n): "ignored\n", fmt.Sprintf("build/out%d", n): "ignored\n"})
	case 8: // a file replaced by a directory
		p := pick()
		os.RemoveAll(abs(p))
		write(t, dir, map[string]string{p + "/inside": "was a file\n"})
	case 9: // a directory replaced by a file
		d := filepath.Dir(abs(pick()))
		if d != dir {
			os.RemoveAll(d)
			os.WriteFile(d, []byte("was a directory\n"), 0o644)
		}
	case 10:
		write(t, dir, map[string]string{pick(): ""})
	case 11:
		write(t, dir, map[string]string{fmt.Sprintf("a/b/bin%d", n): "\x00\xff\x00binary"})
	case 12: // same contents written again: new stat data, no change
		p := pick()
		if data, err := os.ReadFile(abs(p)); err == nil {
			write(t, dir, map[string]string{p: string(data)})
		}
	case 13:
		os.MkdirAll(abs(fmt.Sprintf("a/emptydir%d", n)), 0o755)
	}
}

// trackedAndNew lists the files under dir (.git aside).
func trackedAndNew(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	must(t, err)
	if len(files) == 0 {
		files = []string{"a.txt"}
	}
	slices.Sort(files)
	return files
}

// The tree a capture writes in Go is the tree git add -A and write-tree
// make of the same files, over many rounds of random edits of every
// kind, and the repository stays sound (git fsck --strict).
func TestCaptureInGoMatchesGit(t *testing.T) {
	root := diffRepo(t)
	r, snap := openSnap(t, root)
	for seed := range uint64(12) {
		w, err := r.NewWorktree(t.Context(), snap, fmt.Sprintf("w%d", seed))
		must(t, err)
		if w.hand == nil {
			t.Fatalf("no manifest: %v", w.handErr)
		}
		rng := rand.New(rand.NewPCG(seed, 7))
		for round := range 5 {
			for n := range 1 + rng.IntN(6) {
				randomEdit(t, rng, w.Dir(), round*10+n)
			}
			cs, err := w.Capture(t.Context())
			must(t, err)
			if w.captured != "go" {
				t.Fatalf("seed %d round %d: captured by %s: %v", seed, round, w.captured, w.handErr)
			}
			if want := gitTree(t, w); cs.Tree != want {
				t.Fatalf("seed %d round %d: Go tree %s, git's %s\n%s", seed, round, cs.Tree, want,
					sh(t, root, "diff-tree", "-r", "--raw", cs.Tree, want))
			}
		}
		must(t, w.Remove(t.Context()))
	}
	sh(t, root, "fsck", "--strict", "--no-dangling")
}

// The Go capture leaves the worktree's index alone, and what the agent
// staged or committed does not change what it captures.
func TestCaptureInGoIgnoresTheAgentsIndex(t *testing.T) {
	root := diffRepo(t)
	r, snap := openSnap(t, root)
	w, err := r.NewWorktree(t.Context(), snap, "w")
	must(t, err)
	write(t, w.Dir(), map[string]string{"a.txt": "agent\n", "staged.txt": "s\n", "later.txt": "l\n"})
	sh(t, w.Dir(), "add", "staged.txt", "a.txt")
	sh(t, w.Dir(), "commit", "-q", "-m", "agent's commit")
	sh(t, w.Dir(), "rm", "-q", "--cached", "z/one") // untracked now in the agent's index, still a file
	gitDir, err := gitDirOf(w.Dir())
	must(t, err)
	before, err := os.ReadFile(filepath.Join(gitDir, "index"))
	must(t, err)
	cs, err := w.Capture(t.Context())
	must(t, err)
	if w.captured != "go" {
		t.Fatalf("captured by %s: %v", w.captured, w.handErr)
	}
	var got []string
	for _, f := range cs.Files {
		got = append(got, f.Path+":"+f.Status)
	}
	if want := []string{"a.txt:modified", "later.txt:added", "staged.txt:added"}; !slices.Equal(got, want) {
		t.Errorf("changeset %v, want %v", got, want)
	}
	after, err := os.ReadFile(filepath.Join(gitDir, "index"))
	must(t, err)
	if string(before) != string(after) {
		t.Error("the capture changed the worktree's index")
	}
}

// Whatever the Go path does not model goes to git, which captures right.
func TestCaptureFallsBackToGit(t *testing.T) {
	for name, setup := range map[string]func(t *testing.T, r *Repo, root, wdir string){
		"attributes in the worktree": func(t *testing.T, _ *Repo, _, wdir string) {
			write(t, wdir, map[string]string{"sub/.gitattributes": "*.txt text\n"})
		},
		"ignored attributes in a new directory": func(t *testing.T, _ *Repo, _, wdir string) {
			write(t, wdir, map[string]string{"n/.gitattributes": "*.txt text\n", "n/.gitignore": ".gitattributes\n"})
		},
		"info/attributes": func(t *testing.T, r *Repo, root, _ string) {
			// Read at the next snapshot (copied into troupe's git directory).
			write(t, root, map[string]string{".git/info/attributes": "*.txt text\n"})
			_, err := r.Snapshot(t.Context())
			must(t, err)
		},
		"a nested repository": func(t *testing.T, _ *Repo, _, wdir string) {
			inner := filepath.Join(wdir, "inner")
			sh(t, wdir, "init", "-q", inner)
			write(t, inner, map[string]string{"f": "f\n"})
			sh(t, inner, "add", "f")
			sh(t, inner, "commit", "-q", "-m", "inner")
		},
	} {
		t.Run(name, func(t *testing.T) {
			root := diffRepo(t)
			r, snap := openSnap(t, root)
			w, err := r.NewWorktree(t.Context(), snap, "w")
			must(t, err)
			write(t, w.Dir(), map[string]string{"a.txt": "agent\n", "new.txt": "n\n"})
			setup(t, r, root, w.Dir())
			want := gitTree(t, w)
			cs, err := w.Capture(t.Context())
			must(t, err)
			if w.captured != "git" {
				t.Errorf("captured by %s", w.captured)
			}
			if cs.Tree != want {
				t.Errorf("tree %s, want %s", cs.Tree, want)
			}
		})
	}
}

// A repository whose configuration changes how git adds files, or whose
// snapshot holds attributes, is captured by git from the start.
func TestNoManifestWhenGitAddsDifferently(t *testing.T) {
	for name, setup := range map[string]func(t *testing.T, root string){
		"core.filemode=false": func(t *testing.T, root string) { sh(t, root, "config", "core.filemode", "false") },
		"core.ignorecase":     func(t *testing.T, root string) { sh(t, root, "config", "core.ignorecase", "true") },
		"attributes in the snapshot": func(t *testing.T, root string) {
			write(t, root, map[string]string{"d/.gitattributes": "*.go diff=golang\n"})
		},
	} {
		t.Run(name, func(t *testing.T) {
			root := diffRepo(t)
			setup(t, root)
			r, snap := openSnap(t, root)
			w, err := r.NewWorktree(t.Context(), snap, "w")
			must(t, err)
			if w.hand != nil {
				t.Fatal("a manifest was taken")
			}
			write(t, w.Dir(), map[string]string{"a.txt": "agent\n"})
			cs, err := w.Capture(t.Context())
			must(t, err)
			if w.captured != "git" || len(cs.Files) != 1 || !strings.HasSuffix(cs.Files[0].Path, "a.txt") {
				t.Errorf("captured by %s: %+v", w.captured, cs.Files)
			}
		})
	}
}

// A file changed in the clock tick its entry was recorded in, keeping
// its size, has the stat data the index holds: git's racy rule (trust an
// entry only when it is older than the index) makes the capture hash it.
func TestCaptureSeesARacyEdit(t *testing.T) {
	root := diffRepo(t)
	r, snap := openSnap(t, root)
	changed := func(w *Worktree) bool {
		cs, err := w.Capture(t.Context())
		must(t, err)
		if w.captured != "go" {
			t.Fatalf("captured by %s: %v", w.captured, w.handErr)
		}
		return len(cs.Files) == 1 && cs.Files[0].Path == "a.txt"
	}
	same := 0
	for i := range 10 { // as it happens: an edit at once after the handover
		w, err := r.NewWorktree(t.Context(), snap, fmt.Sprintf("w%d", i))
		must(t, err)
		must(t, os.WriteFile(filepath.Join(w.Dir(), "a.txt"), []byte("b\n"), 0o644))
		st, err := lstatFile(filepath.Join(w.Dir(), "a.txt"))
		must(t, err)
		if e := w.hand.root.ents[w.hand.root.byName["a.txt"]]; st.st == e.stat {
			same++
		}
		if !changed(w) {
			t.Fatalf("worktree %d: the edit was not captured", i)
		}
		must(t, w.Remove(t.Context()))
	}
	t.Logf("%d of 10 edits kept the stat data the index recorded", same)

	// Made so: the entry recorded with the edited file's stat data, in
	// the tick the index was written.
	w, err := r.NewWorktree(t.Context(), snap, "forced")
	must(t, err)
	must(t, os.WriteFile(filepath.Join(w.Dir(), "a.txt"), []byte("c\n"), 0o644))
	st, err := lstatFile(filepath.Join(w.Dir(), "a.txt"))
	must(t, err)
	w.hand.root.ents[w.hand.root.byName["a.txt"]].stat = st.st
	w.hand.idxS, w.hand.idxNS = int64(st.st.mtimeSec), int64(st.st.mtimeNsec)
	if !changed(w) {
		t.Fatal("the racy edit was not captured")
	}
	w.hand.idxS++ // an index a second younger: the entry is trusted, the edit unseen
	res, err := w.hand.scan(w.Dir(), false)
	must(t, err)
	if len(res.deltas) != 0 {
		t.Errorf("a trusted entry was hashed: %+v", res.deltas)
	}
}

// A workspace that is not a git checkout (its snapshots in a private
// repository) is captured in Go too, to git's tree.
func TestCaptureInGoOfAPlainDirectory(t *testing.T) {
	needGit(t)
	root := t.TempDir()
	write(t, root, map[string]string{"a.txt": "a\n", ".gitignore": "skip/\n", "src/b.txt": "b\n"})
	r, snap := openSnap(t, root)
	w, err := r.NewWorktree(t.Context(), snap, "a")
	must(t, err)
	write(t, w.Root(), map[string]string{"src/b.txt": "b2\n", "c/d.txt": "c\n", "skip/x": "ignored\n"})
	cs, err := w.Capture(t.Context())
	must(t, err)
	if w.captured != "go" {
		t.Errorf("captured by %s: %v", w.captured, w.handErr)
	}
	if want := gitTree(t, w); cs.Tree != want || len(cs.Files) != 2 {
		t.Errorf("tree %s with %+v, want %s with 2 files", cs.Tree, cs.Files, want)
	}
}

// Edge cases of the tree a Go capture writes: every file deleted (the
// empty tree), and more new entries than one git ls-files is given.
func TestCaptureInGoEdgeCases(t *testing.T) {
	root := diffRepo(t)
	r, snap := openSnap(t, root)
	for name, edit := range map[string]func(dir string){
		"everything deleted": func(dir string) {
			entries, err := os.ReadDir(dir)
			must(t, err)
			for _, e := range entries {
				if e.Name() != ".git" {
					must(t, os.RemoveAll(filepath.Join(dir, e.Name())))
				}
			}
		},
		"1,200 new entries": func(dir string) {
			files := map[string]string{}
			for i := range 1200 {
				files[fmt.Sprintf("new%04d.txt", i)] = fmt.Sprint(i)
				if i%3 == 0 {
					files[fmt.Sprintf("a/new%04d.log", i)] = "ignored"
				}
			}
			write(t, dir, files)
		},
	} {
		w, err := r.NewWorktree(t.Context(), snap, strings.Fields(name)[0])
		must(t, err)
		edit(w.Dir())
		cs, err := w.Capture(t.Context())
		must(t, err)
		if want := gitTree(t, w); cs.Tree != want || w.captured != "go" {
			t.Errorf("%s: tree %s by %s, want %s", name, cs.Tree, w.captured, want)
		}
	}
}
