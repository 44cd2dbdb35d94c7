package workspace

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/messages"
)

func TestSnapshotHoldsTheWorkingTree(t *testing.T) {
	root := newRepo(t, map[string]string{"a.go": "a\n", "b.go": "b\n", "gone.go": "x\n", ".gitignore": "*.log\n"})
	write(t, root, map[string]string{"a.go": "a edited\n", "new.go": "new\n", "debug.log": "ignored\n", ".troupe/runs/x": "data\n"})
	if err := os.Remove(filepath.Join(root, "gone.go")); err != nil {
		t.Fatal(err)
	}
	sh(t, root, "add", "b.go") // something in the user's index
	before, _ := os.ReadFile(filepath.Join(root, ".git", "index"))
	r := open(t, root)
	snap, err := r.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if head := sh(t, root, "rev-parse", "HEAD"); snap.Base != head {
		t.Errorf("base %s, want HEAD %s", snap.Base, head)
	}
	files := strings.Fields(sh(t, root, "ls-tree", "-r", "--name-only", snap.Tree))
	want := []string{".gitignore", "a.go", "b.go", "new.go"}
	if !slices.Equal(files, want) {
		t.Errorf("snapshot holds %v, want %v", files, want)
	}
	if got := sh(t, root, "show", snap.Tree+":a.go"); got != "a edited" {
		t.Errorf("a.go in snapshot = %q", got)
	}
	after, _ := os.ReadFile(filepath.Join(root, ".git", "index"))
	if !bytes.Equal(before, after) {
		t.Error("the user's index changed")
	}
	again, err := r.Snapshot(t.Context())
	if err != nil || again != snap {
		t.Errorf("second snapshot of the same state = %+v, %v; want %+v", again, err, snap)
	}
}

func TestWorktreeChangesLand(t *testing.T) {
	root := newRepo(t, map[string]string{"f.go": funcs, "other.go": "x\n"})
	write(t, root, map[string]string{"wip.go": "uncommitted\n"})
	r := open(t, root)
	snap, err := r.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	edits := map[string]func(string) (string, string){
		"w1": func(s string) (string, string) { return "f.go", strings.Replace(s, "return 1", "return 10", 1) },
		"w2": func(s string) (string, string) { return "f.go", strings.Replace(s, "return 2", "return 20", 1) },
		"w3": func(string) (string, string) { return "other.go", "y\n" },
	}
	var changes []messages.Changeset
	for _, name := range []string{"w1", "w2", "w3"} {
		w, err := r.NewWorktree(t.Context(), snap, name)
		if err != nil {
			t.Fatal(err)
		}
		if got := read(t, w.Root(), "wip.go"); got != "uncommitted\n" {
			t.Fatalf("worktree lacks the uncommitted file: %q", got)
		}
		path, text := edits[name](read(t, w.Root(), "f.go"))
		write(t, w.Root(), map[string]string{path: text})
		cs, err := w.Capture(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(cs.Files) != 1 || cs.Files[0].Path != path || cs.Files[0].Added != 1 || cs.Files[0].Deleted != 1 {
			t.Fatalf("%s changeset files %+v", name, cs.Files)
		}
		changes = append(changes, cs)
		if err := w.Remove(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	for i, cs := range changes {
		out, err := r.Apply(t.Context(), snap, cs, ModeApply, "run1", "w"+string(rune('1'+i)))
		if err != nil || out.Status != messages.ChangeStatusApplied {
			t.Fatalf("apply %d: %+v, %v", i, out, err)
		}
	}
	f := read(t, root, "f.go")
	if !strings.Contains(f, "return 10") || !strings.Contains(f, "return 20") || read(t, root, "other.go") != "y\n" {
		t.Errorf("not all changes landed:\n%s", f)
	}
	if list := sh(t, root, "worktree", "list"); strings.Count(list, "\n") != 0 {
		t.Errorf("worktrees left:\n%s", list)
	}
}

func TestOverlapIsAConflictAndNothingHalfApplied(t *testing.T) {
	root := newRepo(t, map[string]string{"f.go": funcs, "g.go": "g\n"})
	r := open(t, root)
	snap, err := r.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	capture := func(name string, files map[string]string) messages.Changeset {
		w, err := r.NewWorktree(t.Context(), snap, name)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Remove(t.Context())
		write(t, w.Root(), files)
		cs, err := w.Capture(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	first := capture("first", map[string]string{"f.go": strings.Replace(funcs, "return 1", "return 100", 1)})
	second := capture("second", map[string]string{"f.go": strings.Replace(funcs, "return 1", "return 200", 1), "g.go": "g2\n"})
	if out, err := r.Apply(t.Context(), snap, first, ModeApply, "run1", "first"); err != nil || out.Status != "applied" {
		t.Fatalf("first: %+v %v", out, err)
	}
	out, err := r.Apply(t.Context(), snap, second, ModeApply, "run1", "second")
	if err != nil || out.Status != "conflict" || !slices.Equal(out.Conflicts, []string{"f.go"}) {
		t.Fatalf("second: %+v %v", out, err)
	}
	if read(t, root, "g.go") != "g\n" {
		t.Error("g.go of a conflicting changeset was written")
	}
	if want := filepath.Join(root, ".troupe", "runs", "run1", "changes", "second.patch"); out.Patch != want {
		t.Errorf("patch at %s, want %s", out.Patch, want)
	}
	// The kept patch applies cleanly to the snapshot.
	w, err := r.NewWorktree(t.Context(), snap, "check")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Remove(t.Context())
	sh(t, w.Dir(), "apply", out.Patch)
	if read(t, w.Root(), "g.go") != "g2\n" || !strings.Contains(read(t, w.Root(), "f.go"), "return 200") {
		t.Error("the kept patch does not reproduce the agent's changes")
	}
}

func TestUserEditMeanwhileConflicts(t *testing.T) {
	root := newRepo(t, map[string]string{"f.go": funcs})
	r := open(t, root)
	snap, _ := r.Snapshot(t.Context())
	w, err := r.NewWorktree(t.Context(), snap, "a")
	if err != nil {
		t.Fatal(err)
	}
	write(t, w.Root(), map[string]string{"f.go": strings.Replace(funcs, "return 2", "return 3", 1)})
	cs, _ := w.Capture(t.Context())
	w.Remove(t.Context())
	user := strings.Replace(funcs, "return 2", "return 4", 1)
	write(t, root, map[string]string{"f.go": user})
	out, err := r.Apply(t.Context(), snap, cs, ModeApply, "r", "a")
	if err != nil || out.Status != "conflict" {
		t.Fatalf("%+v %v", out, err)
	}
	if read(t, root, "f.go") != user {
		t.Error("the user's edit was overwritten")
	}
}

func TestBinaryModesSymlinksDeletes(t *testing.T) {
	root := newRepo(t, map[string]string{"run.sh": "echo\n", "old.txt": "old\n", "keep.txt": "k\n"})
	r := open(t, root)
	snap, _ := r.Snapshot(t.Context())
	w, err := r.NewWorktree(t.Context(), snap, "a")
	if err != nil {
		t.Fatal(err)
	}
	bin := []byte{0, 1, 2, 255, 0, 'x'}
	must(t, os.WriteFile(filepath.Join(w.Root(), "img.bin"), bin, 0o644))
	must(t, os.Chmod(filepath.Join(w.Root(), "run.sh"), 0o755))
	must(t, os.Remove(filepath.Join(w.Root(), "old.txt")))
	must(t, os.Symlink("keep.txt", filepath.Join(w.Root(), "link")))
	cs, err := w.Capture(t.Context())
	must(t, err)
	must(t, w.Remove(t.Context()))
	cs.Tree = "" // as if it came from another machine: the patch alone
	out, err := r.Apply(t.Context(), snap, cs, ModeApply, "r", "a")
	if err != nil || out.Status != "applied" {
		t.Fatalf("%+v %v", out, err)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "img.bin")); !bytes.Equal(got, bin) {
		t.Errorf("binary file = %v", got)
	}
	if info, _ := os.Stat(filepath.Join(root, "run.sh")); info.Mode()&0o100 == 0 {
		t.Error("mode not applied")
	}
	if read(t, root, "old.txt") != "<absent>" {
		t.Error("deleted file still there")
	}
	if target, err := os.Readlink(filepath.Join(root, "link")); err != nil || target != "keep.txt" {
		t.Errorf("symlink = %q, %v", target, err)
	}
}

func TestBranchAndPatchModes(t *testing.T) {
	root := newRepo(t, map[string]string{"a.txt": "a\n"})
	r := open(t, root)
	snap, _ := r.Snapshot(t.Context())
	w, _ := r.NewWorktree(t.Context(), snap, "a")
	write(t, w.Root(), map[string]string{"a.txt": "b\n"})
	cs, _ := w.Capture(t.Context())
	w.Remove(t.Context())
	out, err := r.Apply(t.Context(), snap, cs, ModeBranch, "run1", "worker-1")
	if err != nil || out.Branch != "troupe/run1/worker-1" || out.Status != "branch" {
		t.Fatalf("%+v %v", out, err)
	}
	if got := sh(t, root, "show", "troupe/run1/worker-1:a.txt"); got != "b" || read(t, root, "a.txt") != "a\n" {
		t.Errorf("branch holds %q; work tree %q", got, read(t, root, "a.txt"))
	}
	out, err = r.Apply(t.Context(), snap, cs, ModePatch, "run1", "worker-1")
	if err != nil || out.Status != "patch" || read(t, root, "a.txt") != "a\n" {
		t.Fatalf("%+v %v", out, err)
	}
	if b, _ := os.ReadFile(out.Patch); !bytes.Equal(b, cs.Patch) {
		t.Error("patch file differs from the changeset's patch")
	}
	if _, err := ParseMode("merge"); err == nil {
		t.Error("ParseMode accepted merge")
	}
}

func TestNotAGitCheckout(t *testing.T) {
	needGit(t)
	root := t.TempDir()
	write(t, root, map[string]string{"a.txt": "a\n", ".gitignore": "skip/\n", "skip/big": "x\n", "src/b.txt": "b\n"})
	r := open(t, root)
	if r.IsGit() {
		t.Fatal("a plain directory opened as a git checkout")
	}
	snap, err := r.Snapshot(t.Context())
	must(t, err)
	w, err := r.NewWorktree(t.Context(), snap, "a")
	must(t, err)
	if read(t, w.Root(), "skip/big") != "<absent>" || read(t, w.Root(), "src/b.txt") != "b\n" {
		t.Error("worktree of a plain directory is wrong")
	}
	write(t, w.Root(), map[string]string{"src/b.txt": "b2\n", "c.txt": "c\n"})
	cs, err := w.Capture(t.Context())
	must(t, err)
	must(t, w.Remove(t.Context()))
	out, err := r.Apply(t.Context(), snap, cs, ModeApply, "r", "a")
	if err != nil || out.Status != "applied" || read(t, root, "src/b.txt") != "b2\n" || read(t, root, "c.txt") != "c\n" {
		t.Fatalf("%+v %v", out, err)
	}
	if _, err := os.Stat(filepath.Join(root, ".git")); err == nil {
		t.Error("a .git appeared in the plain directory")
	}
	small, err := Open(t.Context(), root, Options{MaxBytes: 3})
	must(t, err)
	if _, err := small.Snapshot(t.Context()); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Errorf("oversized snapshot: %v", err)
	}
}

func TestPruneRemovesWorktreesOfDeadProcesses(t *testing.T) {
	root := newRepo(t, map[string]string{"a.txt": "a\n"})
	r := open(t, root)
	snap, _ := r.Snapshot(t.Context())
	dead := exec.Command("true")
	must(t, dead.Run())
	left, err := r.NewWorktree(t.Context(), snap, "left")
	must(t, err)
	// Made as a process now dead would have: its directory and its git
	// directory named after that process.
	deadName := strconvItoa(dead.Process.Pid) + "-left"
	must(t, os.Rename(left.dir, filepath.Join(r.worktreesDir(), deadName)))
	must(t, os.Rename(left.admin, filepath.Join(r.home.dir, "worktrees", deadName+"-1")))
	deadTmp := filepath.Join(r.home.tmpDir(), strconvItoa(dead.Process.Pid)+"-index-1")
	must(t, os.WriteFile(deadTmp, nil, 0o600))
	live, err := r.NewWorktree(t.Context(), snap, "live")
	must(t, err)
	must(t, r.Prune(t.Context()))
	if _, err := os.Lstat(deadTmp); !os.IsNotExist(err) {
		t.Errorf("the dead process's temporary file is still there: %v", err)
	}
	list := worktreeList(t, r)
	if strings.Contains(list, "left") || !strings.Contains(list, "live") {
		t.Errorf("after prune:\n%s", list)
	}
	if _, err := os.Lstat(filepath.Join(r.worktreesDir(), deadName)); !os.IsNotExist(err) {
		t.Errorf("the dead process's worktree is still there: %v", err)
	}
	must(t, live.Remove(t.Context()))
}

// worktreeList is what git worktree list says of the worktrees troupe
// made for r (their git directories are in its home).
func worktreeList(t *testing.T, r *Repo) string {
	t.Helper()
	return sh(t, r.home.dir, "--git-dir="+r.home.dir, "worktree", "list")
}

// A record without its commondir (a process killed while writing one,
// in an older version) makes git itself fail; the next start's prune
// removes it.
func TestPruneRemovesHalfWrittenRecords(t *testing.T) {
	root := newRepo(t, map[string]string{"a.txt": "a\n"})
	r := open(t, root)
	dead := exec.Command("true")
	must(t, dead.Run())
	rec := filepath.Join(r.home.dir, "worktrees", strconvItoa(dead.Process.Pid)+"-worker-1")
	must(t, os.MkdirAll(rec, 0o755))
	must(t, os.WriteFile(filepath.Join(rec, "HEAD"), []byte("0000000000000000000000000000000000000000\n"), 0o644))
	// Its checkout is still there (git's own prune keeps such a record).
	checkout := t.TempDir()
	must(t, os.WriteFile(filepath.Join(checkout, ".git"), []byte("gitdir: "+rec+"\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(rec, "gitdir"), []byte(filepath.Join(checkout, ".git")+"\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(rec, "commondir"), nil, 0o644)) // created, not yet written
	if out, err := exec.Command("git", "--git-dir="+r.home.dir, "worktree", "list").CombinedOutput(); err == nil {
		t.Fatalf("git accepted the half-written record, so this test tests nothing:\n%s", out)
	}
	must(t, r.Prune(t.Context()))
	if list := worktreeList(t, r); strings.Count(strings.TrimSpace(list), "\n") != 0 {
		t.Errorf("after prune:\n%s", list)
	}
}

// Fifty workers at once, twice: new worktrees, then the ones the first
// round kept; each gets a worktree without a lock error, and every
// worker's change lands.
func TestManyWorktreesAtOnce(t *testing.T) {
	files := map[string]string{"a.txt": "a\n"}
	for i := range 50 {
		files["w/"+strconvItoa(i)+".txt"] = "start\n"
	}
	root := newRepo(t, files)
	r, err := Open(t.Context(), root, Options{KeepIdle: 50})
	must(t, err)
	for round := range 2 {
		snap, err := r.Snapshot(t.Context())
		must(t, err)
		errs := make(chan error, 50)
		for i := range 50 {
			go func() {
				name := "w" + strconvItoa(round*50+i)
				w, err := r.NewWorktree(t.Context(), snap, name)
				if err != nil {
					errs <- err
					return
				}
				path := "w/" + strconvItoa(i) + ".txt"
				err = os.WriteFile(filepath.Join(w.Root(), path), []byte("round "+strconvItoa(round)+"\n"), 0o644)
				var cs messages.Changeset
				if err == nil {
					cs, err = w.Capture(t.Context())
				}
				if err == nil && (len(cs.Files) != 1 || cs.Files[0].Path != path) {
					err = fmt.Errorf("%s captured %+v", name, cs.Files)
				}
				var out Outcome
				if err == nil {
					out, err = r.Apply(t.Context(), snap, cs, ModeApply, "run", name)
				}
				if err == nil && out.Status != messages.ChangeStatusApplied {
					err = fmt.Errorf("%s: %+v", name, out)
				}
				if rerr := w.Remove(t.Context()); err == nil {
					err = rerr
				}
				errs <- err
			}()
		}
		for range 50 {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
		for i := range 50 {
			if got := read(t, root, "w/"+strconvItoa(i)+".txt"); got != "round "+strconvItoa(round)+"\n" {
				t.Errorf("round %d: worker %d's change did not land: %q", round, i, got)
			}
		}
	}
	must(t, r.Close(t.Context()))
	if list := sh(t, root, "worktree", "list"); strings.Count(list, "\n") != 0 {
		t.Errorf("worktrees left after Close:\n%s", list)
	}
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}
