package changes

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/internal/testfiles"
	"github.com/troupe-ai/troupe/messages"
)

// enterOne enters one agent that may change files, in the background
// (so auto isolation gives it a worktree too), and fails the test when
// it gets none.
func enterOne(t *testing.T, r *Run, id string) (*Isolated, func()) {
	t.Helper()
	iso, leave, err := r.enter(context.Background(), Entry{ID: id, Background: true})
	if err != nil || iso == nil {
		t.Fatalf("enter %s: %v %v", id, iso, err)
	}
	return iso, leave
}

// Where an agent works: a read-only kind always in the workspace; shared
// isolation in the workspace; auto gives a lone foreground agent the
// workspace and a second one (or one in the background) a worktree;
// worktree isolation a worktree each.
func TestEnterGivesWorktreesAsTheModeSays(t *testing.T) {
	ws := gitRepo(t, map[string]string{"g.go": "package p\n"})
	for i, c := range []struct {
		mode          string
		readOnly, bg  bool
		first, second bool // whether the first and a second agent get worktrees
	}{
		{"worktree", true, false, false, false},
		{"shared", false, true, false, false},
		{"auto", false, false, false, true},
		{"auto", false, true, true, true},
		{"worktree", false, false, true, true},
	} {
		r := openRun(t, ws, c.mode)
		a, leaveA, err := r.enter(context.Background(), Entry{ReadOnly: c.readOnly, ID: fmt.Sprintf("a%d", i), Background: c.bg})
		if err != nil {
			t.Fatal(err)
		}
		b, leaveB, err := r.enter(context.Background(), Entry{ReadOnly: c.readOnly, ID: fmt.Sprintf("b%d", i), Background: c.bg})
		if err != nil {
			t.Fatal(err)
		}
		if (a != nil) != c.first || (b != nil) != c.second {
			t.Errorf("%+v: worktrees %v, %v", c, a != nil, b != nil)
		}
		for _, iso := range []*Isolated{a, b} {
			if iso != nil {
				if _, err := os.Stat(filepath.Join(iso.Root(), "g.go")); err != nil {
					t.Errorf("%+v: the worktree lacks the workspace's file: %v", c, err)
				}
				iso.Drop()
			}
		}
		leaveA()
		leaveB()
	}
}

// An agent's edit lands in the workspace, the events say so, the run
// records it and the worktree is gone.
func TestLandAppliesAndRemovesTheWorktree(t *testing.T) {
	ws := gitRepo(t, map[string]string{"g.go": "package p\n\nvar G = 1\n"})
	r := openRun(t, ws, "worktree")
	iso, leave := enterOne(t, r, "worker-1")
	defer leave()
	write(t, iso.Root(), "g.go", "package p\n\nvar G = 3\n")
	rec := &recorder{}
	out := iso.land(context.Background(), rec.emit, "r1", "worker-1", true)
	if out == nil || out.Status != messages.ChangeStatusApplied || out.Worktree != "" {
		t.Fatalf("outcome %+v", out)
	}
	if g, _ := os.ReadFile(filepath.Join(ws, "g.go")); string(g) != "package p\n\nvar G = 3\n" {
		t.Errorf("the workspace's g.go: %q", g)
	}
	if len(rec.ofType(messages.EvtChangesReady)) != 1 || len(rec.ofType(messages.EvtChangesApplied)) != 1 {
		t.Errorf("events %+v", rec.events)
	}
	if got := r.results(); len(got) != 1 || got[0].Status != messages.ChangeStatusApplied {
		t.Errorf("the run's changes %+v", got)
	}
	r.close() // what it kept for reuse goes with the run
	if _, err := os.Stat(iso.Root()); !os.IsNotExist(err) {
		t.Errorf("the worktree is still there after the run: %v", err)
	}
}

// checkKept checks that out is an error outcome, recorded with the
// run's changes, that kept the agent's worktree whole (its edit of
// g.go in it) and returns it.
func checkKept(t *testing.T, r *Run, out *messages.ChangeOutcome) messages.ChangeOutcome {
	t.Helper()
	if out == nil || out.Status != messages.ChangeStatusError || out.Error == "" {
		t.Fatalf("outcome %+v, want an error", out)
	}
	if got := r.results(); len(got) != 1 || got[0].Worktree != out.Worktree || got[0].Patch != out.Patch {
		t.Errorf("the run's changes %+v do not name what was kept (%+v)", got, out)
	}
	if out.Worktree == "" {
		t.Fatalf("no worktree kept: %+v", out)
	}
	if g, err := os.ReadFile(filepath.Join(out.Worktree, "g.go")); err != nil || !strings.Contains(string(g), "G = 3") {
		t.Errorf("the kept worktree %s lost the edit: %q %v", out.Worktree, g, err)
	}
	return *out
}

// A capture that fails (git refuses a path the agent made) keeps the
// worktree whole, never reset or removed, and the outcome (run --json's
// changes) says so and where; the patch of what could be captured is kept.
func TestCaptureErrorKeepsTheWorktree(t *testing.T) {
	ws := gitRepo(t, map[string]string{"g.go": "package p\n\nvar G = 1\n"})
	r := openRun(t, ws, "worktree")
	iso, leave := enterOne(t, r, "worker-1")
	defer leave()
	write(t, iso.Root(), "g.go", "package p\n\nvar G = 3\n")
	write(t, iso.Root(), "sub/.GIT/x", "x\n")
	out := checkKept(t, r, iso.land(context.Background(), nil, "r1", "worker-1", true))
	if !strings.Contains(out.Error, "capture") {
		t.Errorf("error %q does not say the capture failed", out.Error)
	}
	if g, _ := os.ReadFile(filepath.Join(ws, "g.go")); string(g) != "package p\n\nvar G = 1\n" {
		t.Errorf("the workspace changed: %q", g)
	}
	// What could be captured is kept as a patch that applies to the
	// snapshot, named by the outcome (the run's changes: checkKept), with
	// what it leaves out.
	if out.Patch == "" {
		t.Fatalf("no patch of what could be captured: %+v", out)
	}
	testfiles.Git(t, ws, "apply", "--cached", "--check", out.Patch)
	patch, err := os.ReadFile(out.Patch)
	if err != nil || !strings.Contains(string(patch), "+var G = 3") || strings.Contains(string(patch), ".GIT") {
		t.Errorf("the patch does not hold what could be captured, and only that: %v\n%s", err, patch)
	}
	if !strings.Contains(out.Error, "sub/.GIT/x") || !slices.Contains(out.Files, "g.go") {
		t.Errorf("the outcome does not name what the patch leaves out and holds: %+v", out)
	}
}

// Changes captured that cannot be written into the workspace (an
// immutable file) keep the worktree and the changeset's patch, which
// applies to the snapshot; the outcome names both.
func TestApplyErrorKeepsTheWorktreeAndThePatch(t *testing.T) {
	ws := gitRepo(t, map[string]string{"g.go": "package p\n\nvar G = 1\n"})
	target := filepath.Join(ws, "g.go")
	if out, err := exec.Command("chattr", "+i", target).CombinedOutput(); err != nil {
		t.Skipf("this file system cannot make a file immutable: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("chattr", "-i", target).Run() })
	r := openRun(t, ws, "worktree")
	iso, leave := enterOne(t, r, "worker-1")
	defer leave()
	write(t, iso.Root(), "g.go", "package p\n\nvar G = 3\n")
	out := checkKept(t, r, iso.land(context.Background(), nil, "r1", "worker-1", true))
	if out.Patch == "" {
		t.Fatalf("no patch kept: %+v", out)
	}
	testfiles.Git(t, ws, "apply", "--cached", "--check", out.Patch)
}
