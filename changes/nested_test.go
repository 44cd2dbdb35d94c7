package changes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/messages"
)

// The requester keeps a remote agent's nested changesets as the run's
// patch files, emits their events through the remote agent's parent's
// events and lists them, with the reason some were refused, in the run's
// changes; an agent ID that is no file name writes nothing.
func TestBringNestedKeepsThePatchesHome(t *testing.T) {
	dir := t.TempDir()
	r := &Run{stateDir: dir, log: zerolog.Nop()}
	rec := &recorder{}
	nested := []messages.NestedChanges{
		{Agent: "worker-1", Status: messages.ChangeStatusConflict, Files: []string{"f.go", "g.go"}, Conflicts: []string{"f.go"}, Patch: []byte("conflicting patch")},
		{Agent: "worker-2", Status: messages.ChangeStatusPatch, Files: []string{"h.go"}, Patch: []byte("unfinished patch")},
		{Agent: "../x", Status: messages.ChangeStatusConflict, Files: []string{"f.go"}, Patch: []byte("escape")},
	}
	outs := r.bringNested(rec.emit, "r1", "lead-1", "n1", nested, "nested changes refused: agent \"../y\" is not a file name")
	if len(outs) != 4 {
		t.Fatalf("outcomes %+v", outs)
	}
	for i, want := range []struct{ status, body string }{{"conflict", "conflicting patch"}, {"patch", "unfinished patch"}} {
		path := filepath.Join(dir, "runs", "r1", "changes", outs[i].Agent+".patch")
		if b, err := os.ReadFile(path); err != nil || string(b) != want.body || outs[i].Patch != path || outs[i].Status != want.status {
			t.Errorf("%+v: %q %v", outs[i], b, err)
		}
	}
	if outs[2].Status != messages.ChangeStatusError || !strings.Contains(outs[2].Error, "bad run") {
		t.Errorf("the climbing ID: %+v", outs[2])
	}
	if _, err := os.Stat(filepath.Join(dir, "runs", "r1", "x.patch")); err == nil {
		t.Error("a patch was written outside the changes directory")
	}
	if outs[3].Agent != "lead-1" || outs[3].Status != messages.ChangeStatusError || !strings.Contains(outs[3].Error, `"../y"`) {
		t.Errorf("the refused ones: %+v", outs[3])
	}
	if got := r.results(); len(got) != 4 {
		t.Errorf("run's changes %+v", got)
	}
	c, a := rec.ofType(messages.EvtChangesConflict), rec.ofType(messages.EvtChangesApplied)
	if len(c) != 1 || len(a) != 1 || c[0].data.(messages.ChangesConflict).Agent != "worker-1" ||
		a[0].data.(messages.ChangesApplied).Status != messages.ChangeStatusPatch {
		t.Errorf("events: conflict %v, applied %v", c, a)
	}
	note := NestedNote("lead-1", outs)
	if !strings.Contains(note, "[changes of worker-1, started by lead-1 on its node: NOT applied") ||
		!strings.Contains(note, "[changes of the agents lead-1 started on its node: could not be brought back") {
		t.Errorf("note:\n%s", note)
	}
}

// On a node, what does not merge into an agent's directory leaves with
// the task's result: the taskCarry keeps it (patch and all) and the parent
// reads where the requester will keep it.
func TestCarryTakesWhatDoesNotMergeForTheResult(t *testing.T) {
	c := &taskCarry{}
	out, now := c.keep("r1", messages.ChangeOutcome{Agent: "w-1", Status: messages.ChangeStatusConflict, Files: []string{"f.go"}}, []byte("p"))
	if now || out.Patch != filepath.Join("runs", "r1", "changes", "w-1.patch") {
		t.Errorf("outcome %+v, emit now %v", out, now)
	}
	if sets := c.take(); len(sets) != 1 || string(sets[0].Patch) != "p" || sets[0].Agent != "w-1" {
		t.Errorf("carried %+v", sets)
	}
	if sets := c.take(); len(sets) != 0 {
		t.Errorf("taken twice: %+v", sets)
	}
	if note := Note(&out); !strings.Contains(note, "in the requester's data directory") {
		t.Errorf("note %q", note)
	}
}
