package changes

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/messages"
)

// enterChild enters agent id under parent (nil: the run's root) and
// fails the test on an error or when whether it got a worktree is not
// want.
func enterChild(t *testing.T, r *Run, parent *Child, id string, want bool) *Child {
	t.Helper()
	c, err := r.Enter(context.Background(), parent, Entry{Run: "r1", ID: id, Background: true})
	if err != nil || c == nil {
		t.Fatalf("enter %s: %v %v", id, c, err)
	}
	if got := c.Isolated() != nil; got != want {
		t.Fatalf("%s: worktree %v, want %v", id, got, want)
	}
	return c
}

// The three calls: a child of an agent in a worktree of its own gets a
// worktree of that agent's directory, and its changes merge there (not
// into the workspace); the agent's end brings both into the workspace,
// and the run's end lists that and removes what was kept for reuse.
func TestChildOfAWorktreeAgentWorksInItsDirectory(t *testing.T) {
	ws := gitRepo(t, map[string]string{"g.go": "package p\n\nvar G = 1\n"})
	r := openRun(t, ws, "worktree")
	lead := enterChild(t, r, nil, "lead-1", true)
	write(t, lead.Root(), "g.go", "package p\n\nvar G = 2\n")
	w := enterChild(t, r, lead, "worker-1", true)
	where := w.Root()
	if in := w.Isolated().View().Inside; in != "" {
		where = in // an overlay worktree's mount point (Root is its view through the holder)
	}
	if !strings.HasPrefix(where, filepath.Join(ws, ".troupe", nestedDir)) {
		t.Errorf("the nested worktree %s is not under the run's nested data", where)
	}
	if g, _ := os.ReadFile(filepath.Join(w.Root(), "g.go")); string(g) != "package p\n\nvar G = 2\n" {
		t.Errorf("the child sees %q, not its parent's directory", g)
	}
	write(t, w.Root(), "h.go", "package p\n\nvar H = 1\n")
	rec := &recorder{}
	out := w.End(context.Background(), Ending{Emit: rec.emit, Completed: true})
	if out.Changes == nil || out.Changes.Status != messages.ChangeStatusApplied || out.Refused != "" || out.Carried != nil {
		t.Fatalf("the child's end: %+v", out)
	}
	if _, err := os.Stat(filepath.Join(lead.Root(), "h.go")); err != nil {
		t.Errorf("the child's file did not merge into its parent's worktree: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "h.go")); err == nil {
		t.Error("the child's file went straight into the workspace")
	}
	if again := w.End(context.Background(), Ending{Completed: true}); again.Changes != nil {
		t.Errorf("a second end: %+v", again)
	}
	out = lead.End(context.Background(), Ending{Completed: true})
	if out.Changes == nil || out.Changes.Status != messages.ChangeStatusApplied {
		t.Fatalf("the lead's end: %+v", out.Changes)
	}
	if entries, _ := os.ReadDir(filepath.Join(ws, ".troupe", nestedDir)); len(entries) != 0 {
		t.Errorf("the lead's isolation for its children is still there: %v", entries)
	}
	for name, want := range map[string]string{"g.go": "package p\n\nvar G = 2\n", "h.go": "package p\n\nvar H = 1\n"} {
		if b, _ := os.ReadFile(filepath.Join(ws, name)); string(b) != want {
			t.Errorf("%s in the workspace: %q", name, b)
		}
	}
	got := r.Finish()
	if len(got) != 1 || got[0].Agent != "lead-1" {
		t.Errorf("the run's changes %+v", got)
	}
}

// A child that did not start no longer counts as running, its worktree
// is given up (nothing of it captured) and the run ends with no outcome
// and its worktree gone.
func TestChildNotStartedDropsItsWorktree(t *testing.T) {
	ws := gitRepo(t, map[string]string{"g.go": "package p\n"})
	r := openRun(t, ws, "worktree")
	c := enterChild(t, r, nil, "worker-1", true)
	root := c.Root()
	write(t, root, "h.go", "package p\n")
	if r.live.Load() != 1 {
		t.Fatalf("running %d", r.live.Load())
	}
	if out := c.End(context.Background(), Ending{NotStarted: true, Completed: true}); out.Changes != nil {
		t.Errorf("outcome %+v", out.Changes)
	}
	if r.live.Load() != 0 || c.Isolated() != nil {
		t.Errorf("after its end: running %d, worktree %v", r.live.Load(), c.Isolated())
	}
	if got := r.Finish(); len(got) != 0 {
		t.Errorf("the run's changes %+v", got)
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("the worktree of a child that did not start is still there after the run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "h.go")); err == nil {
		t.Error("the file of a child that did not start reached the workspace")
	}
}

// On a node, a task's first agent works in the directory it was given;
// a child's changeset that does not merge there (a conflict) leaves with
// the task's result, patch and all, and the child's parent reads where
// the requester will keep it.
func TestTaskCarriesWhatDoesNotMerge(t *testing.T) {
	dir := gitRepo(t, map[string]string{"g.go": "package p\n\nvar G = 1\n"})
	host := gitRepo(t, map[string]string{"other.go": "package o\n"})
	r := openRun(t, host, "worktree")
	task, err := r.Enter(context.Background(), nil, Entry{Run: "r1", ID: "w-1", Task: true, Dir: dir})
	if err != nil || task.Root() != dir || task.Isolated() != nil {
		t.Fatalf("task %+v %v", task, err)
	}
	c := enterChild(t, r, task, "w-2", true)
	write(t, c.Root(), "g.go", "package p\n\nvar G = 3\n")
	write(t, dir, "g.go", "package p\n\nvar G = 2\n")
	out := c.End(context.Background(), Ending{Completed: true})
	if out.Changes == nil || out.Changes.Status != messages.ChangeStatusConflict ||
		out.Changes.Patch != filepath.Join("runs", "r1", "changes", "w-2.patch") {
		t.Fatalf("the child's end: %+v", out.Changes)
	}
	end := task.End(context.Background(), Ending{Completed: true})
	if len(end.Carried) != 1 || end.Carried[0].Agent != "w-2" || !strings.Contains(string(end.Carried[0].Patch), "+var G = 3") {
		t.Fatalf("carried %+v", end.Carried)
	}
	if got := r.Finish(); len(got) != 0 {
		t.Errorf("the host's run recorded %+v", got)
	}
}

// A remote child's refused changes fail its result and the changesets
// of its descendants its result carries are not kept; accepted, they
// are.
func TestRemoteChildRefusedKeepsNoNested(t *testing.T) {
	tr, cs := shippedEdit(t)
	r := openRun(t, tr.From.Root(), "worktree")
	nested := []messages.NestedChanges{{Agent: "w1-1", Status: messages.ChangeStatusPatch, Files: []string{"h.go"}, Patch: []byte("p")}}
	bad := tamperedBase(cs)
	for _, c := range []struct {
		cs      *messages.Changeset
		refused bool
	}{{&bad, true}, {cs, false}} {
		ch := enterElsewhere(t, r, "w1")
		out := ch.End(context.Background(), Ending{Completed: true, Remote: &Remote{Node: "n1", Changeset: c.cs, Nested: nested}})
		if (out.Refused != "") != c.refused || (len(out.Nested) == 0) != c.refused {
			t.Errorf("refused %v: %+v", c.refused, out)
		}
		if !c.refused && (out.Changes == nil || out.Changes.Status != messages.ChangeStatusApplied) {
			t.Errorf("accepted: %+v", out.Changes)
		}
	}
	if g, _ := os.ReadFile(filepath.Join(tr.From.Root(), "g.go")); string(g) != "package p\n\nvar G = 3\n" {
		t.Errorf("g.go %q", g)
	}
}

// enterElsewhere enters agent id as placed on a node (Entry.Elsewhere)
// and fails the test when it got a worktree or does not count as
// running.
func enterElsewhere(t *testing.T, r *Run, id string) *Child {
	t.Helper()
	before := r.live.Load()
	c, err := r.Enter(context.Background(), nil, Entry{Run: "r1", ID: id, Background: true, Elsewhere: true})
	if err != nil || c == nil {
		t.Fatalf("enter %s: %v %v", id, c, err)
	}
	if c.Isolated() != nil || c.Root() != "" || r.live.Load() != before+1 {
		t.Fatalf("%s placed elsewhere: worktree %v in %q, running %d", id, c.Isolated(), c.Root(), r.live.Load())
	}
	return c
}

// A child placed on a node is entered as such: no snapshot is taken and
// no worktree made for it here (the run has not even opened the
// repository), yet it counts as running, so a local agent beside it
// gets a worktree in auto mode; its End takes in its node's changes.
func TestChildPlacedElsewhereGetsNoWorktree(t *testing.T) {
	tr, cs := shippedEdit(t)
	ws := tr.From.Root()
	r := openRun(t, ws, "worktree")
	remote := enterElsewhere(t, r, "w1")
	r.mu.Lock()
	opened := r.repo != nil
	r.mu.Unlock()
	if opened {
		t.Error("the run opened the repository for a child placed elsewhere")
	}
	if entries, _ := os.ReadDir(filepath.Join(ws, ".troupe", "worktrees")); len(entries) != 0 {
		t.Errorf("worktrees made for a child placed elsewhere: %v", entries)
	}
	auto := openRun(t, gitRepo(t, map[string]string{"a.go": "package a\n"}), "auto")
	beside := enterElsewhere(t, auto, "w2")
	local, err := auto.Enter(context.Background(), nil, Entry{Run: "r1", ID: "w3"})
	if err != nil || local.Isolated() == nil {
		t.Errorf("a foreground agent beside a remote one: worktree %v, %v", local.Isolated(), err)
	}
	local.End(context.Background(), Ending{NotStarted: true})
	beside.End(context.Background(), Ending{NotStarted: true})
	out := remote.End(context.Background(), Ending{Completed: true, Remote: &Remote{Node: "n1", Changeset: cs}})
	if out.Refused != "" || out.Changes == nil || out.Changes.Status != messages.ChangeStatusApplied || r.live.Load() != 0 {
		t.Fatalf("its end: %+v, running %d", out, r.live.Load())
	}
}
