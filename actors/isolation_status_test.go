package actors_test

import (
	"strings"
	"testing"
)

// After a run with worktrees, a change applied and another in conflict
// (its patch kept), git status in the user's checkout shows the applied
// change and nothing of troupe's: no data folder, no worktree, no
// temporary or pre-image file of a land, no ref of troupe's.
func TestRunLeavesNothingOfTroupesInGitStatus(t *testing.T) {
	ws := gitRepo(t, map[string]string{"f.go": twoFuncs, "g.go": "package p\n\nvar G = 1\n"})
	res, _, _ := isolatedRun(t, ws, []string{"task alpha", "task beta"},
		editor("alpha", "g.go", "G = 1", "G = 3"),
		editor("beta", "g.go", "G = 1", "G = 4"))
	statuses := map[string]int{}
	for _, c := range res.Changes {
		statuses[c.Status]++
	}
	if statuses["applied"] != 1 || statuses["conflict"] != 1 {
		t.Fatalf("changes %+v, want one applied and one conflict", res.Changes)
	}
	if st := gitIn(t, ws, "status", "--porcelain", "--untracked-files=all", "--ignored=no"); st != "M g.go" {
		t.Errorf("git status --porcelain after the run:\n%s\nwant only the applied change, M g.go", st)
	}
	if wl := gitIn(t, ws, "worktree", "list"); strings.Count(wl, "\n") != 0 {
		t.Errorf("worktrees registered in the user's repository:\n%s", wl)
	}
	if refs := gitIn(t, ws, "for-each-ref", "--format=%(refname)"); refs != "refs/heads/main" {
		t.Errorf("refs after the run:\n%s", refs)
	}
}
