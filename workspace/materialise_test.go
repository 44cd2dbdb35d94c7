package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// checkoutFiles is a tree with every kind of file a Go checkout writes.
var checkoutFiles = map[string]string{
	"a.go":               "package a\n",
	"a/b.go":             "package b\n",
	"a.c":                "int main;\n",
	"a0":                 "sorts after a/\n",
	"empty":              "",
	"crlf.txt":           "one\r\ntwo\r\n",
	"binary.bin":         "\x00\x01\x02\xff",
	"no newline":         "last line",
	"dir/sub/deep/x.txt": "deep\n",
	"ünï cödé/名前.txt":    "unicode\n",
	".gitignore":         "*.log\n",
}

// gitCheckouts makes r check every worktree out by git.
func gitCheckouts(r *Repo) {
	r.checkout.confOnce.Do(func() {})
	r.checkout.confWhy = "test: git checkouts only"
}

// checkoutCounts reports how many checkouts r did in Go and by git.
func checkoutCounts(r *Repo) (inGo, byGit int) {
	r.checkout.mu.Lock()
	defer r.checkout.mu.Unlock()
	return r.checkout.goCount, r.checkout.gitCount
}

// richRepo is a repository holding checkoutFiles, an executable, and
// symlinks (relative, absolute, dangling, to a directory), with an
// uncommitted edit, opened as a Repo.
func richRepo(t *testing.T) (*Repo, Snapshot) {
	t.Helper()
	root := newRepo(t, checkoutFiles)
	must(t, os.WriteFile(filepath.Join(root, "run.sh"), []byte("#!/bin/sh\necho hi\n"), 0o755))
	for link, target := range map[string]string{"link": "a.go", "abs": "/etc/hostname", "dangling": "nowhere", "a/up": "../dir"} {
		must(t, os.Symlink(target, filepath.Join(root, link)))
	}
	write(t, root, map[string]string{"a.go": "package a // edited\n"})
	return openSnap(t, root)
}

func TestGoCheckoutIsWhatGitChecksOut(t *testing.T) {
	r, snap := richRepo(t)
	w, err := r.NewWorktree(t.Context(), snap, "go")
	must(t, err)
	if inGo, byGit := checkoutCounts(r); inGo != 1 || byGit != 0 {
		t.Fatalf("checkouts in Go %d, by git %d; want 1, 0", inGo, byGit)
	}
	assertCleanCheckout(t, w)
	assertNoRacyEntries(t, w.Dir())

	gitCheckouts(r)
	r.opts.Worktrees = WorktreesCheckout // a checkout of its own, even where w is an overlay of one
	ref, err := r.NewWorktree(t.Context(), snap, "git")
	must(t, err)
	if _, byGit := checkoutCounts(r); byGit != 1 {
		t.Fatalf("the reference worktree was not checked out by git")
	}
	if got, want := treeState(t, w.Dir()), treeState(t, ref.Dir()); !slices.Equal(got, want) {
		t.Errorf("Go checkout:\n%s\ngit checkout:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The index git writes for the same files lists the same entries.
	if got, want := sh(t, w.Dir(), "ls-files", "-s"), sh(t, ref.Dir(), "ls-files", "-s"); got != want {
		t.Errorf("index entries differ:\n%s\ngit's:\n%s", got, want)
	}
}

// Our git commands run with core.autocrlf=false, so a repository's own
// autocrlf changes nothing git checks out for us: the Go checkout writes
// the same bytes.
func TestGoCheckoutIgnoresTheRepositorysAutocrlfAsGitDoes(t *testing.T) {
	root := newRepo(t, map[string]string{"lf.txt": "a\nb\n", "crlf.txt": "a\r\nb\r\n"})
	sh(t, root, "config", "core.autocrlf", "true")
	r, snap := openSnap(t, root)
	w, err := r.NewWorktree(t.Context(), snap, "go")
	must(t, err)
	if inGo, _ := checkoutCounts(r); inGo != 1 {
		t.Fatal("not checked out in Go")
	}
	gitCheckouts(r)
	ref, err := r.NewWorktree(t.Context(), snap, "git")
	must(t, err)
	if got, want := treeState(t, w.Dir()), treeState(t, ref.Dir()); !slices.Equal(got, want) {
		t.Errorf("Go checkout:\n%s\ngit checkout:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if out := sh(t, w.Dir(), "status", "--porcelain"); out != "" {
		t.Errorf("git status:\n%s", out)
	}
}

func TestGoCheckoutInSHA256Repository(t *testing.T) {
	needGit(t)
	root := t.TempDir()
	sh(t, root, "init", "-q", "--object-format=sha256", "-b", "main")
	write(t, root, checkoutFiles)
	sh(t, root, "add", "-A")
	sh(t, root, "commit", "-q", "-m", "first")
	r, snap := openSnap(t, root)
	if len(snap.Commit) != 64 {
		t.Fatalf("commit %s is not a SHA-256", snap.Commit)
	}
	w, err := r.NewWorktree(t.Context(), snap, "w")
	must(t, err)
	if inGo, _ := checkoutCounts(r); inGo != 1 {
		t.Fatal("not checked out in Go")
	}
	assertCleanCheckout(t, w)
}

// assertCleanCheckout checks that git finds w's files and index exactly
// its snapshot: nothing to report, every entry's ID and mode that of the
// tree, every entry's stat data the file's, and no ID changed by a
// refresh.
func assertCleanCheckout(t *testing.T, w *Worktree) {
	t.Helper()
	if out := sh(t, w.Dir(), "status", "--porcelain", "--ignored"); out != "" {
		t.Errorf("git status:\n%s", out)
	}
	if out := sh(t, w.Dir(), "diff-files"); out != "" {
		t.Errorf("git diff-files:\n%s", out)
	}
	var tree []string
	for l := range strings.Lines(sh(t, w.Dir(), "ls-tree", "-r", w.snap.Commit)) {
		f := strings.Fields(l) // mode type id\tpath
		tree = append(tree, f[0]+" "+f[2]+" 0\t"+strings.SplitN(l, "\t", 2)[1])
	}
	staged := sh(t, w.Dir(), "ls-files", "-s")
	if want := strings.TrimSpace(strings.Join(tree, "")); staged != want {
		t.Errorf("git ls-files -s:\n%s\nwant (ls-tree -r):\n%s", staged, want)
	}
	assertIndexStat(t, w.Dir(), w.ov != nil)
	sh(t, w.Dir(), "update-index", "-q", "--refresh")
	if again := sh(t, w.Dir(), "ls-files", "-s"); again != staged {
		t.Errorf("a refresh changed the index:\n%s", again)
	}
	sh(t, w.repo.top, "fsck", "--no-progress")
}

// assertIndexStat checks the stat data git reads from the index of the
// worktree dir against lstat of each file; with anyDev (an overlay
// worktree, whose files the overlay's device reports while the index
// copied from the lower tree holds the lower's: git compares no device
// numbers) all but the device.
func assertIndexStat(t *testing.T, dir string, anyDev bool) {
	t.Helper()
	out := sh(t, dir, "ls-files", "--debug")
	var p string
	for l := range strings.Lines(out) {
		l = strings.TrimRight(l, "\n")
		if !strings.HasPrefix(l, " ") {
			p = l
			continue
		}
		fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p)))
		must(t, err)
		st := fi.Sys().(*syscall.Stat_t)
		want := map[string]string{
			"ctime:": fmt.Sprintf("%d:%d", uint32(st.Ctim.Sec), uint32(st.Ctim.Nsec)),
			"mtime:": fmt.Sprintf("%d:%d", uint32(st.Mtim.Sec), uint32(st.Mtim.Nsec)),
			"dev:":   fmt.Sprint(uint32(st.Dev)), "ino:": fmt.Sprint(uint32(st.Ino)),
			"uid:": fmt.Sprint(st.Uid), "gid:": fmt.Sprint(st.Gid),
			"size:": fmt.Sprint(uint32(st.Size)),
		}
		if anyDev {
			delete(want, "dev:")
		}
		f := strings.Fields(l)
		for i := 0; i+1 < len(f); i++ {
			if w, ok := want[f[i]]; ok && f[i+1] != w {
				t.Errorf("%s: index %s %s, file %s", p, f[i], f[i+1], w)
			}
		}
	}
}

// treeState describes every file under dir but .git: path, type,
// permissions, and contents or link target.
func treeState(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == ".git" {
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		desc := rel + " " + fi.Mode().String()
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			desc += " -> " + target
		case fi.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" %q", data)
		}
		out = append(out, desc)
		return nil
	})
	must(t, err)
	return out
}

func TestGitChecksOutWhatGoCannot(t *testing.T) {
	cases := map[string]func(t *testing.T, root string){
		"attributes in the tree": func(t *testing.T, root string) {
			write(t, root, map[string]string{"sub/.gitattributes": "*.txt text eol=crlf\n", "sub/x.txt": "a\nb\n"})
		},
		"info/attributes": func(t *testing.T, root string) {
			write(t, root, map[string]string{".git/info/attributes": "*.go text eol=crlf\n"})
		},
		"core.eol": func(t *testing.T, root string) { sh(t, root, "config", "core.eol", "crlf") },
		"no symlinks": func(t *testing.T, root string) {
			sh(t, root, "config", "core.symlinks", "false")
		},
		"a submodule": func(t *testing.T, root string) {
			mod := filepath.Join(root, "mod")
			must(t, os.Mkdir(mod, 0o755))
			sh(t, mod, "init", "-q")
			write(t, mod, map[string]string{"m": "m\n"})
			sh(t, mod, "add", "m")
			sh(t, mod, "commit", "-q", "-m", "m")
			sh(t, root, "add", "mod")
			sh(t, root, "commit", "-q", "-m", "submodule")
		},
	}
	for name, setup := range cases {
		t.Run(name, func(t *testing.T) {
			root := newRepo(t, map[string]string{"a.go": "a\n", "sub/b.go": "b\n"})
			setup(t, root)
			r, snap := openSnap(t, root)
			w, err := r.NewWorktree(t.Context(), snap, "w")
			must(t, err)
			if inGo, byGit := checkoutCounts(r); inGo != 0 || byGit != 1 {
				t.Fatalf("checkouts in Go %d, by git %d; want 0, 1", inGo, byGit)
			}
			if out := sh(t, w.Dir(), "status", "--porcelain"); out != "" {
				t.Errorf("git status:\n%s", out)
			}
		})
	}
}

func TestTreeTooLargeToHoldIsLeftToGit(t *testing.T) {
	root := newRepo(t, map[string]string{"a": strings.Repeat("a", 600), "b/c": strings.Repeat("c", 600)})
	r, snap := openSnap(t, root)
	r.checkout.maxBlobs = 1000
	w, err := r.NewWorktree(t.Context(), snap, "w")
	must(t, err)
	if inGo, byGit := checkoutCounts(r); inGo != 0 || byGit != 1 {
		t.Fatalf("checkouts in Go %d, by git %d; want 0, 1", inGo, byGit)
	}
	assertCleanCheckout(t, w)
}

func TestFailedGoCheckoutIsLeftToGit(t *testing.T) {
	r, snap := richRepo(t)
	r.checkout.fault = func() error { return errors.New("disk on fire") }
	w, err := r.NewWorktree(t.Context(), snap, "w")
	must(t, err)
	if inGo, byGit := checkoutCounts(r); inGo != 0 || byGit != 1 {
		t.Fatalf("checkouts in Go %d, by git %d; want 0, 1", inGo, byGit)
	}
	assertCleanCheckout(t, w)
	r.checkout.fault = nil
	gitCheckouts(r)
	ref, err := r.NewWorktree(t.Context(), snap, "ref")
	must(t, err)
	if got, want := treeState(t, w.Dir()), treeState(t, ref.Dir()); !slices.Equal(got, want) {
		t.Errorf("after a failed Go checkout:\n%s\ngit checkout:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func FuzzParseListing(f *testing.F) {
	f.Add([]byte("100644 blob 0123456789012345678901234567890123456789\ta/b.go\x00"))
	f.Add([]byte("160000 commit 0123456789012345678901234567890123456789\tmod\x00"))
	f.Add([]byte("120000 blob 0123456789012345678901234567890123456789\t.git/x\x00"))
	f.Fuzz(func(t *testing.T, out []byte) {
		tf := &treeFiles{}
		if err := tf.parseListing(out); err != nil || tf.why != "" {
			return
		}
		for _, file := range tf.files {
			if checkoutPathWhy(file.path, file.mode) != "" || file.blob >= len(tf.ids) {
				t.Fatalf("listed %+v", file)
			}
		}
	})
}

// assertNoRacyEntries checks that no file entry (symlinks aside) of the
// index of the worktree dir was modified in the second the index was
// written or later, which would make git read it again in every command.
func assertNoRacyEntries(t *testing.T, dir string) {
	t.Helper()
	gitDir, err := gitDirOf(dir)
	must(t, err)
	fi, err := os.Stat(filepath.Join(gitDir, "index"))
	must(t, err)
	indexSec := fi.ModTime().Unix()
	var p string
	for l := range strings.Lines(sh(t, dir, "ls-files", "--debug")) {
		l = strings.TrimRight(l, "\n")
		if !strings.HasPrefix(l, " ") {
			p = l
			continue
		}
		var sec, nsec int64
		if _, err := fmt.Sscanf(strings.TrimSpace(l), "mtime: %d:%d", &sec, &nsec); err != nil {
			continue
		}
		if lfi, err := os.Lstat(filepath.Join(dir, p)); err == nil && lfi.Mode()&fs.ModeSymlink == 0 && sec >= indexSec {
			t.Errorf("%s: modified at %d, the index at %d: racily clean", p, sec, indexSec)
		}
	}
}
