package workspace

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// userGit runs git in dir as the user would, with the user's global
// config (the test's HOME) and no system config.
func userGit(tb testing.TB, dir string, args ...string) string {
	tb.Helper()
	cmd := exec.Command("git", append([]string{"-c", "core.quotePath=false"}, args...)...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// lines are the non-empty lines of s, sorted, without those under .troupe/.
func lines(s string) []string {
	var out []string
	for l := range strings.Lines(s) {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, ".troupe/") {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return out
}

// The user's global ignore file (the default ~/.config/git/ignore, or
// core.excludesFile of the global config), info/exclude and every
// .gitignore decide what a snapshot holds exactly as git status does: its
// paths are git ls-files -co --exclude-standard's, run as the user. A
// .env ignored only globally stays out of the snapshot, the bundle, the
// worktree and a worker's capture; the global file is read again at each
// snapshot.
func TestSnapshotHonoursTheUsersGlobalIgnores(t *testing.T) {
	for _, form := range []string{"default", "core.excludesFile"} {
		t.Run(form, func(t *testing.T) {
			home := t.TempDir()
			t.Setenv("HOME", home)
			t.Setenv("XDG_CONFIG_HOME", "")
			ignoreFile := filepath.Join(home, ".config", "git", "ignore")
			if form == "core.excludesFile" {
				ignoreFile = filepath.Join(home, "my-ignores")
				write(t, home, map[string]string{".gitconfig": "[core]\n\texcludesFile = ~/my-ignores\n"})
			}
			root := newRepo(t, map[string]string{"a.txt": "a\n", "tracked.log": "tracked\n", ".gitignore": "*.tmp\n",
				"sub/.gitignore": "!keep.log\nbuild/\n"})
			write(t, filepath.Dir(ignoreFile), map[string]string{filepath.Base(ignoreFile): ".env\n*.log\n"})
			write(t, root, map[string]string{".git/info/exclude": "local-only.txt\n", ".env": "OPENAI_API_KEY=sk-secret\n",
				"sub/.env": "KEY=2\n", "x.log": "x\n", "sub/keep.log": "kept\n", "y.tmp": "y\n", "sub/build/out.o": "o\n",
				"local-only.txt": "l\n", "new.txt": "n\n", "tracked.log": "tracked, changed\n"})

			r, snap := openSnap(t, root)
			got := lines(sh(t, root, "--git-dir="+r.home.dir, "ls-tree", "-r", "--name-only", snap.Tree))
			want := lines(userGit(t, root, "ls-files", "-co", "--exclude-standard"))
			if !slices.Equal(got, want) {
				t.Fatalf("the snapshot holds %q\ngit status sees %q", got, want)
			}
			for _, p := range []string{".env", "sub/.env", "x.log"} {
				if slices.Contains(got, p) {
					t.Errorf("the snapshot holds %s", p)
				}
			}
			for _, p := range []string{"sub/keep.log", "tracked.log", "new.txt"} {
				if !slices.Contains(got, p) {
					t.Errorf("the snapshot lacks %s", p)
				}
			}

			secret := strings.TrimSpace(userGit(t, root, "hash-object", ".env"))
			bundle, err := r.Bundle(t.Context(), snap, false)
			must(t, err)
			bare := t.TempDir()
			sh(t, bare, "init", "-q", "--bare")
			defer bundle.Remove()
			sh(t, bare, "bundle", "unbundle", bundle.Path)
			if err := exec.Command("git", "--git-dir="+bare, "cat-file", "-e", secret).Run(); err == nil {
				t.Errorf("the bundle carries .env's contents")
			}

			w, err := r.NewWorktree(t.Context(), snap, "w")
			must(t, err)
			if read(t, w.Dir(), ".env") != "<absent>" || read(t, w.Dir(), "sub/keep.log") != "kept\n" {
				t.Errorf("the worktree: .env %q, sub/keep.log %q", read(t, w.Dir(), ".env"), read(t, w.Dir(), "sub/keep.log"))
			}
			write(t, w.Dir(), map[string]string{".env": "KEY=worker\n", "w.log": "w\n", "w.txt": "w\n"})
			cs, err := w.Capture(t.Context())
			must(t, err)
			files := map[string]bool{}
			for _, f := range cs.Files {
				files[f.Path] = true
			}
			if files[".env"] || files["w.log"] || !files["w.txt"] {
				t.Errorf("the capture holds %v", cs.Files)
			}

			write(t, filepath.Dir(ignoreFile), map[string]string{filepath.Base(ignoreFile): ".env\n*.log\nnew.txt\n"})
			snap2, err := r.Snapshot(t.Context())
			must(t, err)
			got = lines(sh(t, root, "--git-dir="+r.home.dir, "ls-tree", "-r", "--name-only", snap2.Tree))
			if slices.Contains(got, "new.txt") {
				t.Errorf("a pattern added to the global ignore file later is not honoured: %q", got)
			}
		})
	}
}
