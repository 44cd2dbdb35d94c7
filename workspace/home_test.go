package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A home's config takes of the repository's only the plain settings it
// lists: no key naming a program, and no value that would write a line
// of its own.
func TestHomeConfigTakesPlainSettingsOnly(t *testing.T) {
	conf := parseConfigList([]byte("filter.x.clean\nevil clean\x00core.filemode\nfalse\x00core.hookspath\n/tmp/hooks\x00" +
		"include.path\n/tmp/inc\x00core.eol\nlf\n[filter \"z\"]\n\tclean = evil\x00core.symlinks\x00core.fsmonitor\nevil\x00"))
	got := string(homeConfig("sha256", conf))
	for _, want := range []string{"\tfilemode = false\n", "\tsymlinks = true\n", "objectformat = sha256", "bare = true"} {
		if !strings.Contains(got, want) {
			t.Errorf("config lacks %q:\n%s", want, got)
		}
	}
	for _, bad := range []string{"evil", "filter", "hooks", "include", "eol", "fsmonitor"} {
		if strings.Contains(got, bad) {
			t.Errorf("config holds %q:\n%s", bad, got)
		}
	}
}

// What git reads from the repository's git directory besides its config
// is copied into the home at each snapshot: info/exclude (a file it
// ignores stays out of snapshots) and shallow (a shallow clone's
// snapshot, worktree and merge-back work); one that is a symlink is not
// copied (its target could be any file of the user's).
func TestHomeCopiesTheRepositorysOwnFiles(t *testing.T) {
	origin := newRepo(t, map[string]string{"a.txt": "a\n"})
	for i := range 2 {
		write(t, origin, map[string]string{"a.txt": strings.Repeat("a\n", i+2)})
		sh(t, origin, "commit", "-q", "-am", "more")
	}
	root := filepath.Join(t.TempDir(), "ws")
	sh(t, filepath.Dir(root), "-c", "protocol.file.allow=always", "clone", "-q", "--depth", "1", "file://"+origin, root)
	write(t, root, map[string]string{".git/info/exclude": "secret.env\n.troupe/\n", "secret.env": "KEY=1\n", "b.txt": "b\n"})
	private, untouched := outside(t, map[string]string{"id_rsa": "private key\n"})
	must(t, os.Symlink(filepath.Join(private, "id_rsa"), filepath.Join(root, ".git", "info", "attributes")))

	r, snap := openSnap(t, root)
	if out := sh(t, root, "--git-dir="+r.home.dir, "ls-tree", "-r", "--name-only", snap.Tree); strings.Contains(out, "secret.env") || !strings.Contains(out, "b.txt") {
		t.Errorf("the snapshot holds:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(r.home.dir, "shallow")); err != nil {
		t.Errorf("shallow not copied: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(r.home.dir, "info", "attributes")); !os.IsNotExist(err) {
		t.Errorf("a symlinked info/attributes was copied: %v", err)
	}
	untouched(t, "snapshot")
	w, err := r.NewWorktree(t.Context(), snap, "w")
	must(t, err)
	write(t, w.Dir(), map[string]string{"b.txt": "worker\n"})
	cs, err := w.Capture(t.Context())
	must(t, err)
	out, err := r.Apply(t.Context(), snap, cs, ModeApply, "run", "w")
	must(t, err)
	if out.Status != "applied" || read(t, root, "b.txt") != "worker\n" {
		t.Errorf("in a shallow clone: %+v", out)
	}
	for _, thin := range []bool{true, false} {
		b, err := r.Bundle(t.Context(), snap, thin)
		if err != nil {
			t.Errorf("bundle (thin %v) of a shallow clone's snapshot: %v", thin, err)
		}
		b.Remove()
	}
}

// The home is outside the workspace, and a home base inside it (a
// TMPDIR there) is refused.
func TestHomeIsOutsideTheWorkspace(t *testing.T) {
	root := newRepo(t, map[string]string{"a.txt": "a\n"})
	r := open(t, root)
	if rel, err := filepath.Rel(root, r.home.dir); err == nil && filepath.IsLocal(rel) {
		t.Errorf("home %s is inside the workspace %s", r.home.dir, root)
	}
	if _, err := Open(t.Context(), root, Options{GitHome: filepath.Join(root, "tmp", "git")}); err == nil ||
		!strings.Contains(err.Error(), "inside the workspace") {
		t.Errorf("a home inside the workspace: %v", err)
	}
}

// git is found, and run with a PATH, outside the workspace: a program
// called git an agent put in a PATH directory inside it is never run.
func TestGitIsNotFoundInTheWorkspace(t *testing.T) {
	ws := t.TempDir()
	bin := filepath.Join(ws, "bin")
	must(t, os.MkdirAll(bin, 0o755))
	must(t, os.WriteFile(filepath.Join(bin, "git"), []byte("#!/bin/sh\nexit 0\n"), 0o755))
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	tool := findGit(ws)
	if tool.bin == "" || strings.HasPrefix(tool.bin, ws) || strings.Contains(tool.path, bin) {
		t.Errorf("git %q, PATH %q: the workspace's own git or PATH entry was kept", tool.bin, tool.path)
	}
	if own := findGit(); own.bin != filepath.Join(bin, "git") {
		t.Errorf("without the workspace to skip, git is %q: this test tests nothing", own.bin)
	}
}

// The user's index is copied for a snapshot unless it cannot serve: a
// split index (its shared part is in the user's git directory) or a
// symlink (to any file of the user's); the snapshot then starts from
// HEAD's tree, and holds the same files.
func TestSnapshotWithoutAUsableIndex(t *testing.T) {
	for _, name := range []string{"split", "symlink"} {
		t.Run(name, func(t *testing.T) {
			root := newRepo(t, map[string]string{"a.txt": "a\n", ".gitignore": "*.log\n.troupe/\n"})
			write(t, root, map[string]string{"ignored.log": "tracked though ignored\n"})
			sh(t, root, "add", "-f", "ignored.log")
			sh(t, root, "commit", "-q", "-m", "tracked though ignored")
			write(t, root, map[string]string{"a.txt": "edited\n", "b.txt": "new\n"})
			_, untouched := outside(t, map[string]string{"id_rsa": "private key\n"})
			switch name {
			case "split":
				sh(t, root, "update-index", "--split-index")
				data, err := os.ReadFile(filepath.Join(root, ".git", "index"))
				must(t, err)
				if _, err := indexLinks(data, 20); !errors.Is(err, errLinksUnknown) {
					t.Fatalf("the split index reads as whole (%v): this case tests nothing", err)
				}
			case "symlink":
				secret, _ := outside(t, map[string]string{"id_rsa": "private key\n"})
				must(t, os.Remove(filepath.Join(root, ".git", "index")))
				must(t, os.Symlink(filepath.Join(secret, "id_rsa"), filepath.Join(root, ".git", "index")))
			}
			r, snap := openSnap(t, root)
			got := sh(t, root, "--git-dir="+r.home.dir, "ls-tree", "-r", "--name-only", snap.Tree)
			if got != ".gitignore\na.txt\nb.txt\nignored.log" {
				t.Errorf("snapshot holds:\n%s", got)
			}
			if c := sh(t, root, "--git-dir="+r.home.dir, "show", snap.Tree+":a.txt"); c != "edited" {
				t.Errorf("a.txt = %q", c)
			}
			untouched(t, "snapshot")
		})
	}
}

// The home lives beside the per-user state directory
// ($XDG_STATE_HOME/troupe-git), private to the user, not in the shared
// system temp; a kept patch's folders are 0700 and the patch 0600.
func TestHomeAndKeptPatchArePrivate(t *testing.T) {
	root := newRepo(t, map[string]string{"a.txt": "a\n"})
	r := open(t, root)
	want := filepath.Join(os.Getenv("XDG_STATE_HOME"), "troupe-git")
	if os.Getenv("XDG_STATE_HOME") == "" || filepath.Dir(r.home.dir) != want {
		t.Errorf("home %s, want it in %s", r.home.dir, want)
	}
	for _, d := range []string{want, r.home.dir} {
		if fi, err := os.Lstat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v, want 0700", d, fi.Mode(), err)
		}
	}
	state := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(state, "runs"), 0o755)) // made wider before, by an older version
	path, err := KeepPatch(root, state, "run1", "worker-1", []byte("diff --git a/a.txt b/a.txt\n"))
	must(t, err)
	for _, d := range []string{"runs", "runs/run1", "runs/run1/changes"} {
		if fi, err := os.Lstat(filepath.Join(state, d)); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v, want 0700", d, fi.Mode(), err)
		}
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode().Perm() != 0o600 || !fi.Mode().IsRegular() {
		t.Errorf("the patch %s: %v %v, want a 0600 file", path, fi.Mode(), err)
	}
	// Kept again (a retried agent's): replaced, still 0600.
	path, err = KeepPatch(root, state, "run1", "worker-1", []byte("second\n"))
	must(t, err)
	if b, _ := os.ReadFile(path); string(b) != "second\n" {
		t.Errorf("the patch holds %q", b)
	}
}
