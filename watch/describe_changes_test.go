package watch

import (
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/messages"
)

func TestDescribeChanges(t *testing.T) {
	cases := []struct {
		typ  string
		data any
		want string
	}{
		{messages.EvtChangesReady, messages.ChangesReady{Agent: "worker-1", Files: []messages.FileChange{{Path: "a.go", Added: 3, Deleted: 1}, {Path: "b.go", Added: 1}}},
			"worker-1 changed 2 files +4 −1"},
		{messages.EvtChangesApplied, messages.ChangesApplied{Agent: "worker-1", Status: "applied", Files: []string{"a.go", "b.go"}},
			"worker-1's changes applied: a.go, b.go"},
		{messages.EvtChangesApplied, messages.ChangesApplied{Agent: "worker-1", Status: "branch", Branch: "troupe/r/worker-1"},
			"worker-1's changes committed on troupe/r/worker-1"},
		{messages.EvtChangesConflict, messages.ChangesConflict{Agent: "worker-2", Files: []string{"a.go"}, Patch: "/w/.troupe/runs/r/changes/worker-2.patch"},
			"worker-2's changes CONFLICT in a.go; patch kept: /w/.troupe/runs/r/changes/worker-2.patch"},
	}
	for _, c := range cases {
		ev, err := messages.NewEvent("r", "root", c.typ, 1, c.data)
		if err != nil {
			t.Fatal(err)
		}
		v, err := ev.Decode()
		if err != nil {
			t.Fatal(err)
		}
		if got := Describe(ev, v); !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.typ, got, c.want)
		}
	}
}
