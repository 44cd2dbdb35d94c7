package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// setConf sets key in the repository's config file without git reading
// the repository (which it may refuse to).
func setConf(t *testing.T, root, key, val string) {
	t.Helper()
	sh(t, root, "config", "-f", filepath.Join(root, ".git", "config"), key, val)
}

// A repository with an extension this git does not know is one git
// cannot read: troupe refuses with a sentence saying so, and never takes
// the directory for one without git (a private snapshot of its files).
func TestUnreadableRepositoryIsRefused(t *testing.T) {
	root := newRepo(t, map[string]string{"a.txt": "a\n"})
	setConf(t, root, "core.repositoryformatversion", "1")
	setConf(t, root, "extensions.troupeunknown", "x")
	data := filepath.Join(t.TempDir(), "data")
	r, err := Open(t.Context(), filepath.Join(root), Options{DataDir: data})
	if err == nil {
		_, serr := r.Snapshot(t.Context())
		t.Fatalf("opened a repository git cannot read (private %v, snapshot error %v)", r.private, serr)
	}
	if !strings.Contains(err.Error(), "git cannot read") || !strings.Contains(err.Error(), "troupeunknown") {
		t.Errorf("error %q does not say why", err)
	}
	if _, err := os.Stat(filepath.Join(data, "workspace.git")); err == nil {
		t.Error("a private repository was made for it")
	}
}

// A repository feature git knows and troupe does not model (here
// extensions.preciousObjects; reftable and compatObjectFormat on a git
// that has them) sends checkouts and captures to git, with a one-line
// note, and the changes come back right.
func TestUnmodelledExtensionTakesGitsPath(t *testing.T) {
	for _, tc := range []struct{ key, val, want string }{
		{"extensions.preciousobjects", "true", "extensions.preciousobjects"},
		{"core.splitindex", "true", "split index"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			root := newRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
			setConf(t, root, "core.repositoryformatversion", "1")
			setConf(t, root, tc.key, tc.val)
			r, err := Open(t.Context(), root, Options{})
			must(t, err)
			t.Cleanup(func() { _ = r.Close(context.Background()) })
			if !strings.Contains(r.Note(), tc.want) || !strings.Contains(r.Note(), "git itself") {
				t.Errorf("note %q", r.Note())
			}
			snap, err := r.Snapshot(t.Context())
			must(t, err)
			w, err := r.NewWorktree(t.Context(), snap, "w")
			must(t, err)
			if got := read(t, w.Dir(), "b.txt"); got != "b\n" {
				t.Fatalf("worktree's b.txt %q", got)
			}
			write(t, w.Dir(), map[string]string{"a.txt": "agent\n", "n.txt": "new\n"})
			cs, err := w.Capture(t.Context())
			must(t, err)
			if w.captured != "git" {
				t.Errorf("captured by %s, want git", w.captured)
			}
			if len(cs.Files) != 2 {
				t.Fatalf("files %+v", cs.Files)
			}
			out, err := r.Apply(t.Context(), snap, cs, ModeApply, "run", "w")
			must(t, err)
			if out.Status != "applied" || read(t, root, "a.txt") != "agent\n" || read(t, root, "n.txt") != "new\n" {
				t.Errorf("outcome %+v; a.txt %q", out, read(t, root, "a.txt"))
			}
		})
	}
}

// A plain repository has nothing to note.
func TestModelledRepositoryHasNoNote(t *testing.T) {
	root := newRepo(t, map[string]string{"a.txt": "a\n"})
	if n := open(t, root).Note(); n != "" {
		t.Errorf("note %q", n)
	}
}

// A repository holding a submodule: the worker's worktree and capture
// leave the submodule as it is (git's checkout and capture, no status
// run inside it), and the worker's edit beside it comes back alone.
func TestSubmoduleInAWorktree(t *testing.T) {
	root := newRepo(t, map[string]string{"a.txt": "a\n"})
	mod := filepath.Join(root, "mod")
	must(t, os.Mkdir(mod, 0o755))
	sh(t, mod, "init", "-q")
	write(t, mod, map[string]string{"m": "m\n"})
	sh(t, mod, "add", "m")
	sh(t, mod, "commit", "-q", "-m", "m")
	sh(t, root, "add", "mod")
	sh(t, root, "commit", "-q", "-m", "submodule")
	modHead := sh(t, mod, "rev-parse", "HEAD")
	r, snap := openSnap(t, root)
	w, err := r.NewWorktree(t.Context(), snap, "w")
	must(t, err)
	write(t, w.Dir(), map[string]string{"a.txt": "agent\n"})
	cs, err := w.Capture(t.Context())
	must(t, err)
	if len(cs.Files) != 1 || cs.Files[0].Path != "a.txt" {
		t.Fatalf("files %+v, want a.txt alone", cs.Files)
	}
	out, err := r.Apply(t.Context(), snap, cs, ModeApply, "run", "w")
	must(t, err)
	if out.Status != "applied" || read(t, root, "a.txt") != "agent\n" {
		t.Errorf("outcome %+v", out)
	}
	if got := sh(t, mod, "rev-parse", "HEAD"); got != modHead {
		t.Errorf("the submodule moved: %s, was %s", got, modHead)
	}
	if st := sh(t, root, "status", "--porcelain", "--", ".", ":!.troupe"); st != "M a.txt" {
		t.Errorf("status %q, want only a.txt modified", st)
	}
}
