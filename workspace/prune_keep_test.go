package workspace

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// killedWork is what a test's agent wrote before its process "died":
// an edit, a new file, a deletion, a directory removed, a symlink to a
// secret file outside, fifos (one as a .gitignore git would open) and a
// file over the size limit.
const killedWork = `echo edited > a.txt; echo new > new.txt; rm b.txt; rm -r d
ln -s "$SECRET" link; ln -s "$SECRET.fifo" trap; mkfifo pipe; mkdir -p sub; mkfifo sub/.gitignore; echo kept > sub/k.txt
head -c 4096 /dev/zero > big.bin`

// asDead renames w (unmounted, for an overlay) and its git directory
// as a process no longer running would have left them, and returns
// the dead name.
func asDead(t testing.TB, w *Worktree) string {
	t.Helper()
	pid := deadProcess(t)
	if w.ov != nil {
		must(t, w.ov.h.Unmount(w.fd.f))
		must(t, os.Rename(w.ov.side, filepath.Join(w.repo.worktreesDir(), pid+"-"+w.name[strings.Index(w.name, "-")+1:]+".ovl")))
	}
	w.fd.close()
	w.fd = nil
	dead := pid + "-" + w.name[strings.Index(w.name, "-")+1:]
	must(t, os.Rename(w.dir, filepath.Join(w.repo.worktreesDir(), dead)))
	admin := filepath.Join(w.repo.home.dir, "worktrees", dead+"-1")
	must(t, os.Rename(w.admin, admin))
	must(t, os.WriteFile(filepath.Join(admin, "gitdir"), []byte(filepath.Join(w.repo.worktreesDir(), dead, ".git")+"\n"), 0o644))
	w.removed = true
	return dead
}

// checkKilledWork runs killedWork in a worktree of a repository of
// kind, kills it (asDead) and checks what Prune kept: the patch names
// the changes, applies to the snapshot, carries the link as a link and
// nothing of its target; the big file is kept whole; the dead worktree
// is gone.
func checkKilledWork(t *testing.T, r *Repo, snap Snapshot, root string) {
	secret := filepath.Join(t.TempDir(), "secret")
	must(t, os.WriteFile(secret, []byte("SECRET-CONTENTS\n"), 0o600))
	// A link to a fifo outside: reading through it would block Prune.
	must(t, syscall.Mkfifo(secret+".fifo", 0o600))
	r.SetMaxChangeBytes(1024)
	w, err := r.NewWorktree(t.Context(), snap, "worker")
	must(t, err)
	argv := append(w.Enter(""), "/bin/sh", "-c", killedWork)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = w.Root(), append(os.Environ(), "SECRET="+secret)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	dead := asDead(t, w)
	kept, err := r.PruneKeep(t.Context())
	must(t, err)
	if len(kept) != 1 {
		t.Fatalf("kept %+v, want the worker's work", kept)
	}
	k := kept[0]
	slices.Sort(k.Files)
	if want := []string{"a.txt", "b.txt", "d/c.txt", "link", "new.txt", "sub/k.txt", "trap"}; !slices.Equal(k.Files, want) || k.Agent != "worker" || k.Snapshot != snap.Commit {
		t.Errorf("kept %+v, want files %v", k, want)
	}
	patch, err := os.ReadFile(k.Patch)
	must(t, err)
	if !bytes.Contains(patch, []byte("new file mode 120000")) || !bytes.Contains(patch, []byte("+"+secret)) || bytes.Contains(patch, []byte("SECRET-CONTENTS")) {
		t.Errorf("the link is not kept as a link (or its target was read):\n%s", patch)
	}
	if bytes.Contains(patch, []byte("big.bin")) || !strings.Contains(k.Note(), "big.bin") || !strings.Contains(k.Note(), k.Patch) {
		t.Errorf("the big file went into the patch, or the note does not say where things went: %s", k.Note())
	}
	if fi, err := os.Lstat(filepath.Join(k.Dir, "big.bin")); err != nil || fi.Size() != 4096 {
		t.Errorf("the big file is not kept whole in %q: %v", k.Dir, err)
	}
	for _, p := range []string{"pipe", "sub/.gitignore"} {
		if fi, err := os.Lstat(filepath.Join(k.Dir, p)); err == nil && fi.Mode()&os.ModeNamedPipe != 0 {
			t.Errorf("the fifo %s was kept", p)
		}
	}
	if fi, err := os.Lstat(secret + ".fifo"); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the fifo outside was touched: %v %v", fi, err)
	}
	snapDir := t.TempDir()
	archive := exec.Command("sh", "-c", `git archive "$1" | tar -x -C "$2"`, "sh", snap.Commit, snapDir)
	archive.Dir = root
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if out, err := exec.Command("git", "-C", snapDir, "apply", "--check", k.Patch).CombinedOutput(); err != nil {
		t.Errorf("the kept patch does not apply to its snapshot: %v\n%s\n%s", err, out, patch)
	}
	for _, name := range []string{dead, dead + ".ovl"} {
		if _, err := os.Lstat(filepath.Join(r.worktreesDir(), name)); !os.IsNotExist(err) {
			t.Errorf("the dead worktree's %s is still there: %v", name, err)
		}
	}
	if again, err := r.PruneKeep(t.Context()); err != nil || len(again) != 0 {
		t.Errorf("a second prune kept %+v (%v)", again, err)
	}
}

var killedFiles = map[string]string{"a.txt": "a\n", "b.txt": "b\n", "d/c.txt": "c\n", "sub/.keep": ""}

// A checkout worktree left by a killed process: Prune keeps its work.
func TestPruneKeepsAKilledCheckoutsWork(t *testing.T) {
	root := newRepo(t, killedFiles)
	r, err := Open(t.Context(), root, Options{Worktrees: WorktreesCheckout})
	must(t, err)
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	snap, err := r.Snapshot(t.Context())
	must(t, err)
	checkKilledWork(t, r, snap, root)
}

// An overlay worktree left by a killed process (its mount gone with
// the holder): Prune reads the upper directory, whiteouts as deletions.
func TestPruneKeepsAKilledOverlaysWork(t *testing.T) {
	r, snap, root := overlayRepo(t, killedFiles)
	checkKilledWork(t, r, snap, root)
}

// A dead worktree with nothing changed is removed and keeps nothing.
func TestPruneKeepsNothingOfAnUntouchedWorktree(t *testing.T) {
	root := newRepo(t, killedFiles)
	r := open(t, root)
	snap, err := r.Snapshot(t.Context())
	must(t, err)
	w, err := r.NewWorktree(t.Context(), snap, "idle")
	must(t, err)
	dead := asDead(t, w)
	kept, err := r.PruneKeep(t.Context())
	if err != nil || len(kept) != 0 {
		t.Fatalf("kept %+v (%v)", kept, err)
	}
	if _, err := os.Lstat(filepath.Join(r.worktreesDir(), dead)); !os.IsNotExist(err) {
		t.Errorf("the dead worktree is still there: %v", err)
	}
	if entries, _ := os.ReadDir(r.worktreesDir()); slices.ContainsFunc(entries, func(e os.DirEntry) bool { return strings.HasPrefix(e.Name(), keptPrefix) }) {
		t.Errorf("an untouched worktree was kept: %v", entries)
	}
}

// BenchmarkPruneUntouchedCheckout is what Prune costs for a killed
// process's checkout worktree (5,000 files) that holds no change: its
// walk and one git add against its own index's stat data.
func BenchmarkPruneUntouchedCheckout(b *testing.B) {
	files := map[string]string{}
	for i := range 5000 {
		files[fmt.Sprintf("d%02d/f%04d.txt", i%50, i)] = fmt.Sprintf("file %d\n", i)
	}
	root := newRepo(b, files)
	r, err := Open(b.Context(), root, Options{Worktrees: WorktreesCheckout})
	must(b, err)
	snap, err := r.Snapshot(b.Context())
	must(b, err)
	for b.Loop() {
		b.StopTimer()
		w, err := r.NewWorktree(b.Context(), snap, "idle")
		must(b, err)
		asDead(b, w)
		b.StartTimer()
		kept, err := r.PruneKeep(b.Context())
		if err != nil || len(kept) != 0 {
			b.Fatalf("kept %+v (%v)", kept, err)
		}
	}
}
