package changes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/workspace"
)

// A remote agent's changeset is derived again from the snapshot the run
// sent and its patch alone: one whose patch does not apply is refused
// (nothing written, changes.refused emitted, the refusal in the run's
// changes and the sentence its result fails with); one that applies
// lands as a local agent's would.
func TestBringRemoteDerivesOrRefuses(t *testing.T) {
	tr, cs := shippedEdit(t)
	req := tr.From.Root()
	r := openRun(t, req, "worktree")
	bad := tamperedBase(cs)
	rec := &recorder{}
	out, why := r.bringRemote(rec.emit, "r1", "w1", true, Remote{Node: "n1", Changeset: &bad})
	if why == "" || out == nil || out.Status != messages.ChangeStatusError || !strings.Contains(why, "node n1") {
		t.Fatalf("a patch that does not apply: outcome %+v, refusal %q", out, why)
	}
	if len(rec.ofType(messages.EvtChangesRefused)) != 1 {
		t.Errorf("events %+v", rec.events)
	}
	if g, _ := os.ReadFile(filepath.Join(req, "g.go")); string(g) != "package p\n\nvar G = 2\n" {
		t.Errorf("a refused changeset wrote g.go: %q", g)
	}
	out, why = r.bringRemote(nil, "r1", "w2", true, Remote{Node: "n1", Changeset: cs})
	if why != "" || out == nil || out.Status != messages.ChangeStatusApplied {
		t.Fatalf("a good changeset: outcome %+v, refusal %q", out, why)
	}
	if g, _ := os.ReadFile(filepath.Join(req, "g.go")); string(g) != "package p\n\nvar G = 3\n" {
		t.Errorf("g.go after the good changeset: %q", g)
	}
	if got := r.results(); len(got) != 2 || got[0].Status != messages.ChangeStatusError || got[1].Status != messages.ChangeStatusApplied {
		t.Errorf("the run's changes %+v", got)
	}
}

// A node that could not capture or send an agent's changes says why and
// where it kept them; the run lists that as an error and applies
// nothing.
func TestBringRemoteListsWhatANodeKept(t *testing.T) {
	r := &Run{}
	out, why := r.bringRemote(nil, "r1", "w1", false, Remote{Node: "n1", Err: "capture: refused; the worktree is kept on the node at /x/kept-1"})
	if why != "" || out == nil || out.Status != messages.ChangeStatusError || !strings.Contains(out.Error, "/x/kept-1") ||
		!strings.Contains(out.Error, "node n1") {
		t.Fatalf("outcome %+v, refusal %q", out, why)
	}
	if got := r.results(); len(got) != 1 || got[0].Error != out.Error {
		t.Errorf("the run's changes %+v", got)
	}
}

// A remote agent's changes that are refused leave no spooled file of
// this process behind: neither its own patch's nor those of the nested
// changesets its result carried (spooled by the transport, never
// brought once the agent's were refused).
func TestRefusedRemoteLeavesNoSpool(t *testing.T) {
	tr, cs := shippedEdit(t)
	r := openRun(t, tr.From.Root(), "worktree")
	spool := t.TempDir()
	spooled := func(patch []byte) workspace.PatchFile {
		p, err := workspace.SpoolPatch(spool, workspace.PatchFrom(patch, ""))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	bad := tamperedBase(cs)
	own := spooled(bad.Patch)
	bad.Patch, bad.PatchFile, bad.PatchSHA256 = nil, own.Path, own.SHA256
	nested := spooled(cs.Patch)
	rc := Remote{Node: "n1", Changeset: &bad, Nested: []messages.NestedChanges{{Agent: "w1-1", Status: messages.ChangeStatusApplied,
		Files: []string{"g.go"}, PatchFile: nested.Path, PatchSHA256: nested.SHA256}}}
	out := r.bringBack(Ending{Completed: true, Remote: &rc}, "r1", "w1")
	if out.Refused == "" {
		t.Fatalf("a patch that does not apply was not refused: %+v", out)
	}
	left, _ := filepath.Glob(filepath.Join(spool, "spool", "*"))
	if len(left) != 0 {
		t.Errorf("spooled files left after the refusal: %v", left)
	}
	// A process that keeps no workspace takes nothing in, and keeps no
	// spooled file either.
	nested = spooled(cs.Patch)
	rc = Remote{Node: "n1", Nested: []messages.NestedChanges{{Agent: "w1-1", Status: messages.ChangeStatusApplied,
		Files: []string{"g.go"}, PatchFile: nested.Path, PatchSHA256: nested.SHA256}}}
	(*Run)(nil).bringBack(Ending{Completed: true, Remote: &rc}, "r1", "w1")
	if left, _ := filepath.Glob(filepath.Join(spool, "spool", "*")); len(left) != 0 {
		t.Errorf("spooled files left by a process without a workspace: %v", left)
	}
}
