package workspace

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/messages"
)

// overlayRepo opens a repository of files with overlay worktrees forced
// on and returns it with its snapshot; without overlays on this machine
// the test is skipped, or fails under CI=true (CI runs on a machine
// class that has them).
func overlayRepo(t *testing.T, files map[string]string) (*Repo, Snapshot, string) {
	t.Helper()
	root := newRepo(t, files)
	r, err := Open(t.Context(), root, Options{Worktrees: WorktreesOverlay})
	must(t, err)
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	snap, err := r.Snapshot(t.Context())
	must(t, err)
	w, err := r.NewWorktree(t.Context(), snap, "probe")
	if err != nil {
		if os.Getenv("CI") == "true" || !strings.Contains(err.Error(), "overlay worktrees unavailable") {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	must(t, w.Remove(t.Context()))
	return r, snap, root
}

// inWorktree runs script with sh inside w, as the agent's commands run.
func inWorktree(t *testing.T, w *Worktree, script string) string {
	t.Helper()
	argv := append(w.Enter(""), "/bin/sh", "-c", script)
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return string(out)
}

func changedPaths(cs messages.Changeset) []string {
	var ps []string
	for _, f := range cs.Files {
		ps = append(ps, f.Path)
	}
	slices.Sort(ps)
	return ps
}

// TestOverlayWorktreeCapturesAndLands: an overlay worktree starts with
// nothing of its own but its .git file, the file tools (its Root) and
// a command entered in it see one tree, its agent's git sees its edits,
// and its capture lands as a checkout's does.
func TestOverlayWorktreeCapturesAndLands(t *testing.T) {
	r, snap, root := overlayRepo(t, map[string]string{"a.txt": "a\n", "d/b.txt": "b\n", "gone.txt": "g\n"})
	w, err := r.NewWorktree(t.Context(), snap, "w")
	must(t, err)
	defer w.Remove(context.Background())
	up, err := os.ReadDir(filepath.Join(w.ov.side, "up"))
	must(t, err)
	if len(up) != 1 || up[0].Name() != ".git" {
		t.Fatalf("a new overlay worktree's upper directory holds %v, want its .git file alone", up)
	}
	write(t, w.Root(), map[string]string{"a.txt": "a by tool\n", "new.txt": "new\n"})
	got := inWorktree(t, w, "cat a.txt; echo cmd >> d/b.txt; rm gone.txt; git status --porcelain")
	if want := "a by tool\n M a.txt\n M d/b.txt\n D gone.txt\n?? new.txt\n"; got != want {
		t.Fatalf("the command saw %q, want %q", got, want)
	}
	if got := read(t, w.Root(), "d/b.txt"); got != "b\ncmd\n" {
		t.Fatalf("the tools read %q after the command's append", got)
	}
	cs, err := w.Capture(t.Context())
	must(t, err)
	if got, want := changedPaths(cs), []string{"a.txt", "d/b.txt", "gone.txt", "new.txt"}; !slices.Equal(got, want) {
		t.Fatalf("captured %v, want %v", got, want)
	}
	out, err := r.Apply(t.Context(), snap, cs, ModeApply, "run", "w")
	must(t, err)
	if out.Status != "applied" {
		t.Fatalf("outcome %+v", out)
	}
	if got := read(t, root, "d/b.txt") + read(t, root, "new.txt"); got != "b\ncmd\nnew\n" {
		t.Fatalf("the workspace holds %q", got)
	}
	if _, err := os.Stat(filepath.Join(root, "gone.txt")); !os.IsNotExist(err) {
		t.Fatalf("gone.txt was not deleted: %v", err)
	}
}

// TestOverlayWorkersNeverMeet: whatever one worker does to the files it
// shares with the lower tree (an edit of the same file, append in
// place, a hard link written through, mv over, chmod, a directory
// removed), another worker's view, the lower tree and the user's files
// keep theirs, and each capture holds its own worker's changes alone.
func TestOverlayWorkersNeverMeet(t *testing.T) {
	files := map[string]string{"same.txt": "base\n", "append": "1\n", "link": "2\n", "mv": "3\n", "run.sh": "4\n", "dir/deep": "5\n"}
	r, snap, root := overlayRepo(t, files)
	a, err := r.NewWorktree(t.Context(), snap, "a")
	must(t, err)
	defer a.Remove(context.Background())
	b, err := r.NewWorktree(t.Context(), snap, "b")
	must(t, err)
	defer b.Remove(context.Background())
	inWorktree(t, a, `echo a > same.txt; echo evil >> append; ln link hard && echo evil >> hard
echo evil > new && mv -f new mv; chmod 755 run.sh; rm -rf dir`)
	inWorktree(t, b, "echo b > same.txt")
	for dir, want := range map[string]map[string]string{
		b.Root():         {"same.txt": "b\n", "append": "1\n", "link": "2\n", "mv": "3\n", "dir/deep": "5\n"},
		root:             files,
		b.ov.lower.dir(): files,
	} {
		for name, data := range want {
			if got := read(t, dir, name); got != data {
				t.Errorf("%s/%s = %q, want %q", dir, name, got, data)
			}
		}
		if fi, err := os.Stat(filepath.Join(dir, "run.sh")); err != nil || fi.Mode().Perm()&0o111 != 0 {
			t.Errorf("%s/run.sh became executable: %v %v", dir, fi, err)
		}
	}
	ca, err := a.Capture(t.Context())
	must(t, err)
	if got, want := changedPaths(ca), []string{"append", "dir/deep", "hard", "link", "mv", "run.sh", "same.txt"}; !slices.Equal(got, want) {
		t.Errorf("a captured %v, want %v", got, want)
	}
	cb, err := b.Capture(t.Context())
	must(t, err)
	if got := changedPaths(cb); !slices.Equal(got, []string{"same.txt"}) {
		t.Errorf("b captured %v, want [same.txt]", got)
	}
}

// TestOverlayKeepOutlivesTheMount: a kept overlay worktree is a real
// directory of the agent's files, without a .git file.
func TestOverlayKeepOutlivesTheMount(t *testing.T) {
	r, snap, _ := overlayRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	w, err := r.NewWorktree(t.Context(), snap, "w")
	must(t, err)
	write(t, w.Root(), map[string]string{"a.txt": "edited\n"})
	must(t, os.Symlink("/etc/passwd", filepath.Join(w.Root(), "out")))
	kept, err := w.Keep(t.Context())
	must(t, err)
	if got := read(t, kept, "a.txt") + read(t, kept, "b.txt"); got != "edited\nb\n" {
		t.Fatalf("kept %q", got)
	}
	if l, err := os.Readlink(filepath.Join(kept, "out")); err != nil || l != "/etc/passwd" {
		t.Fatalf("the symlink was not kept as one: %q %v", l, err)
	}
	if _, err := os.Lstat(filepath.Join(kept, ".git")); !os.IsNotExist(err) {
		t.Fatalf("the kept directory has a .git: %v", err)
	}
	if _, err := os.Stat(w.ov.side); !os.IsNotExist(err) {
		t.Fatalf("the upper directory is still there: %v", err)
	}
}

// TestOverlayCaptureFollowsWhatWasTouched: a file copied up without a
// change (touched, chmod and back) is no change; an edit deep in a
// directory, a file made in a new directory and a directory replaced
// whole (removed and made again) are found, while directories the agent
// never touched are not read.
func TestOverlayCaptureFollowsWhatWasTouched(t *testing.T) {
	r, snap, _ := overlayRepo(t, map[string]string{"a/b/c/deep.txt": "deep\n", "t.txt": "t\n", "r/old.txt": "old\n", "q/keep.txt": "k\n"})
	w, err := r.NewWorktree(t.Context(), snap, "w")
	must(t, err)
	defer w.Remove(context.Background())
	inWorktree(t, w, "touch t.txt; chmod 600 t.txt; chmod 644 t.txt")
	cs, err := w.Capture(t.Context())
	must(t, err)
	if len(cs.Files) != 0 {
		t.Fatalf("a file copied up unchanged was captured: %v", changedPaths(cs))
	}
	inWorktree(t, w, "echo more >> a/b/c/deep.txt; mkdir -p n/m && echo n > n/m/new.txt; rm -rf r && mkdir r && echo new > r/new.txt")
	cs, err = w.Capture(t.Context())
	must(t, err)
	if got, want := changedPaths(cs), []string{"a/b/c/deep.txt", "n/m/new.txt", "r/new.txt", "r/old.txt"}; !slices.Equal(got, want) {
		t.Fatalf("captured %v, want %v", got, want)
	}
	if _, err := os.Lstat(filepath.Join(w.ov.side, "up", "q")); !os.IsNotExist(err) {
		t.Fatalf("an untouched directory is in the upper directory: %v", err)
	}
}
