package changes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/internal/peer"
	"github.com/troupe-ai/troupe/internal/testfiles"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/workspace"
)

// A node serving for weeks: every task's snapshot differs (a commit of
// the requester's with a git lfs file of its own, and uncommitted
// files), and every worker writes a git lfs file of its own. The node's
// store (its packs, loose objects and git lfs objects) stays within
// its bounds whatever the number of tasks.

// lfsFleet is a requester's repository using git lfs (*.bin), its
// workspace's Repo, and a node over a clone of it whose store tidies
// as soon as it holds anything no worktree needs.
type lfsFleet struct {
	req  string
	base string // the requester's first commit, which every snapshot's commit is made on
	repo *workspace.Repo
	n    *Node
	tr   Local
}

// tightBounds make every task's end tidy the store: more than one pack,
// any loose object, any git lfs object no worktree needs.
var tightBounds = workspace.StoreBounds{Packs: 1, Loose: 0, GitSpare: 1 << 30, LFSSpare: 0}

func newLFSFleet(t *testing.T) *lfsFleet {
	t.Helper()
	peer.Need(t, "git")
	peer.Need(t, "git-lfs")
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, name := range []string{"GIT_CONFIG_GLOBAL", "XDG_CONFIG_HOME"} {
		t.Setenv(name, "")
		os.Unsetenv(name)
	}
	testfiles.UserGit(t, home, "lfs", "install")
	f := &lfsFleet{req: t.TempDir()}
	testfiles.UserGit(t, f.req, "init", "-q", "-b", "main")
	testfiles.UserGit(t, f.req, "config", "user.email", "u@example.com")
	testfiles.UserGit(t, f.req, "config", "user.name", "u")
	testfiles.UserGit(t, f.req, "lfs", "track", "*.bin")
	write(t, f.req, ".gitignore", ".troupe/\n")
	write(t, f.req, "g.go", "package g\n")
	testfiles.UserGit(t, f.req, "add", "-A")
	testfiles.UserGit(t, f.req, "commit", "-q", "-m", "first")
	f.base = testfiles.UserGit(t, f.req, "rev-parse", "HEAD")
	node := filepath.Join(t.TempDir(), "node")
	testfiles.UserGit(t, filepath.Dir(node), "clone", "-q", f.req, node)
	var err error
	if f.repo, err = workspace.Open(context.Background(), f.req, workspace.Options{DataDir: filepath.Join(f.req, ".troupe"), StateDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.repo.Close(context.Background()) })
	f.n = NewNode(Dirs{Root: node, Data: filepath.Join(node, ".troupe", "snapshots"), State: t.TempDir()}, 2, 0, zerolog.Nop())
	f.n.bounds = tightBounds
	t.Cleanup(f.n.Close)
	f.tr = Local{From: f.repo}
	return f
}

// binOf is the content of task i's snapshot's git lfs file f<i>.bin.
func binOf(i int) string { return strings.Repeat(fmt.Sprintf("snapshot lfs %d\n", i), 4000) }

// snapshot commits f<i>.bin on the first commit (each snapshot holds
// one git lfs file, and a history as long as the others'), writes
// u<i>.txt uncommitted and snapshots.
func (f *lfsFleet) snapshot(t *testing.T, i int) messages.TaskSnapshot {
	t.Helper()
	testfiles.UserGit(t, f.req, "reset", "-q", "--hard", f.base)
	testfiles.UserGit(t, f.req, "clean", "-q", "-f")
	name := fmt.Sprintf("f%d.bin", i)
	write(t, f.req, name, binOf(i))
	// Older than the index to be: the snapshot takes the index's pointer.
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(f.req, name), past, past); err != nil {
		t.Fatal(err)
	}
	testfiles.UserGit(t, f.req, "add", "-A")
	testfiles.UserGit(t, f.req, "commit", "-q", "-m", fmt.Sprint("task ", i))
	write(t, f.req, fmt.Sprintf("u%d.txt", i), fmt.Sprintf("uncommitted %d\n", i))
	snap, err := f.repo.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return messages.TaskSnapshot{Commit: snap.Commit, Tree: snap.Tree, Base: snap.Base, Prefix: snap.Prefix}
}

// start starts task i on snap and checks its worktree holds the
// snapshot: f<i>.bin's content (its git lfs object) and u<i>.txt.
func (f *lfsFleet) start(t *testing.T, tr Transport, snap messages.TaskSnapshot, i int) *Hosted {
	t.Helper()
	h, err := f.n.Start(context.Background(), tr, snap, fmt.Sprintf("r1-w%d-0", i))
	if err != nil {
		t.Fatalf("task %d: %v", i, err)
	}
	if b, _ := os.ReadFile(filepath.Join(h.Root(), fmt.Sprintf("f%d.bin", i))); string(b) != binOf(i) {
		t.Fatalf("task %d's worktree holds f%d.bin as %.60q, want its git lfs content", i, i, b)
	}
	if b, _ := os.ReadFile(filepath.Join(h.Root(), fmt.Sprintf("u%d.txt", i))); string(b) != fmt.Sprintf("uncommitted %d\n", i) {
		t.Fatalf("task %d's worktree holds u%d.txt as %q", i, i, b)
	}
	return h
}

// work has task i's worker write a git lfs file of its own and edit g.go.
func work(t *testing.T, h *Hosted, i int) {
	t.Helper()
	write(t, h.Root(), fmt.Sprintf("w%d.bin", i), strings.Repeat(fmt.Sprintf("worker lfs %d\n", i), 3000))
	write(t, h.Root(), "g.go", fmt.Sprintf("package g\n\n// task %d\n", i))
}

// end ends task i, its changeset shipped, and waits for the tidy its
// end started.
func (f *lfsFleet) end(t *testing.T, h *Hosted, i int) *messages.Changeset {
	t.Helper()
	cs, err := h.End(context.Background(), f.tr, true, "r1", fmt.Sprintf("w%d", i))
	f.n.tidies.Wait()
	if err != nil || cs == nil || len(cs.LFS) != 1 || !strings.Contains(string(cs.Patch), fmt.Sprintf("+// task %d", i)) {
		t.Fatalf("task %d's changeset %+v: %v", i, cs, err)
	}
	return cs
}

// The store stays flat over many tasks of different snapshots: its git
// objects in one pack (no loose ones left), its git lfs objects those of
// the snapshots its worktrees kept for reuse hold; each task sees its
// snapshot; a snapshot the store dropped is fetched again.
func TestNodeStoreStaysFlat(t *testing.T) { storeStaysFlat(t, newLFSFleet(t)) }

// The same with overlay worktrees, whose lower trees (a checkout of each
// snapshot) stayed until the node stopped.
func TestNodeStoreStaysFlatWithOverlays(t *testing.T) {
	f := newLFSFleet(t)
	f.n.WithWorktrees(workspace.WorktreesAuto)
	h := f.start(t, f.tr, f.snapshot(t, 0), 0)
	h.Drop()
	if kind, note, _ := f.n.repo.Worktrees(); kind != workspace.WorktreesOverlay {
		if os.Getenv("CI") == "true" {
			t.Fatalf("overlay worktrees cannot be made: %s", note)
		}
		t.Skip("overlay worktrees cannot be made: " + note)
	}
	storeStaysFlat(t, f)
}

// storeStaysFlat runs tasks of different snapshots on f's node and
// checks its store stays within bounds.
func storeStaysFlat(t *testing.T, f *lfsFleet) {
	const tasks = 8
	snaps := make([]messages.TaskSnapshot, tasks)
	var most, first workspace.StoreUsage
	worktrees := 0 // directories under the store's worktrees: checkouts, overlays' uppers and lowers
	for i := range tasks {
		snaps[i] = f.snapshot(t, i)
		h := f.start(t, f.tr, snaps[i], i)
		work(t, h, i)
		f.end(t, h, i)
		u, err := f.n.keeper.Usage()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("after task %d: %+v", i, u)
		if i == 0 {
			first = u
		}
		most.GitBytes = max(most.GitBytes, u.GitBytes)
		dirs, err := os.ReadDir(filepath.Join(f.n.dirs.Data, "worktrees"))
		if err != nil {
			t.Fatal(err)
		}
		worktrees = max(worktrees, len(dirs))
		most.Packs, most.Loose = max(most.Packs, u.Packs), max(most.Loose, u.Loose)
		most.LFSObjects, most.LFSBytes = max(most.LFSObjects, u.LFSObjects), max(most.LFSBytes, u.LFSBytes)
	}
	// Two worktrees are kept for reuse (one per slot), each holding a
	// snapshot with one git lfs file; every worker's file and every
	// older snapshot's are gone.
	if most.Packs > 1 || most.Loose > 0 || most.LFSObjects > 2 || most.LFSBytes > 2*int64(len(binOf(tasks))) || most.GitBytes > 3*first.GitBytes ||
		worktrees > 3*f.n.slots {
		t.Errorf("the store grew with the tasks: at most %+v and %d worktree directories over %d tasks", most, worktrees, tasks)
	}
	if u, _ := f.n.keeper.Usage(); u.LFSObjects == 0 || u.Packs == 0 {
		t.Errorf("the store dropped what its idle worktrees hold: %+v", u)
	}
	// The first snapshot, dropped long ago, comes again: fetched again.
	h := f.start(t, f.tr, snaps[0], 0)
	work(t, h, 0)
	f.end(t, h, 0)
}

// Beyond what its worktrees need, the store keeps the git lfs objects
// used last, up to its spare bytes: after four tasks, with room for
// one snapshot's object and one worker's, the last worker's object and
// the previous snapshot's (last needed by the worktree kept for reuse
// before the last task took it) stay, older ones go; a task on that
// previous snapshot again finds its object there.
func TestNodeStoreKeepsRecentLFSWithinItsSpare(t *testing.T) {
	f := newLFSFleet(t)
	f.n.bounds.LFSSpare = int64(len(binOf(0)) + len(workerBin(0)))
	snaps := make([]messages.TaskSnapshot, 4)
	for i := range snaps {
		snaps[i] = f.snapshot(t, i)
		h := f.start(t, f.tr, snaps[i], i)
		work(t, h, i)
		f.end(t, h, i)
	}
	held := map[string]bool{}
	for name, content := range map[string]string{"f3": binOf(3), "w3": workerBin(3), "f2": binOf(2), "w2": workerBin(2), "f1": binOf(1), "w1": workerBin(1), "f0": binOf(0)} {
		held[name] = f.n.repo.HasLFS(lfsObjectOf(content))
	}
	want := map[string]bool{"f3": true, "w3": true, "f2": true}
	for name, has := range held {
		if has != want[name] {
			t.Errorf("the store holds the git lfs object of %s: %v, want %v", name, has, want[name])
		}
	}
	h := f.start(t, f.tr, snaps[2], 2)
	work(t, h, 2)
	f.end(t, h, 2)
}
