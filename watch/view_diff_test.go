package watch

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/messages"
)

// The view shows the last file change: its +N −M in the tail and the first
// lines of its diff, control characters escaped.
func TestViewShowsTheLastChange(t *testing.T) {
	s := &stream{t: t}
	var diff strings.Builder
	diff.WriteString("--- a/a.go\n+++ b/a.go\n@@ -1,20 +1,20 @@\n-old\x1b[2J\n")
	for i := range 20 {
		fmt.Fprintf(&diff, "+new %d\n", i)
	}
	s.add("root", "root", messages.EvtToolFinished, messages.ToolFinished{Round: 1, Tool: "edit_file", Diff: diff.String(),
		Metadata: map[string]any{"path": "a.go", "lines_added": 20, "lines_removed": 1}})
	s.add("root", "root", messages.EvtToolFinished, messages.ToolFinished{Round: 1, Tool: "edit_file", IsError: true})
	tr := NewTree(5)
	for _, ev := range s.events {
		tr.Apply(ev)
	}
	frame := strings.Join(Frame(tr, time.Now(), Layout{Width: 100}), "\n")
	for _, want := range []string{"root: edit_file a.go +20 −1", "last change: root edit_file +20 −1", "  @@ -1,20 +1,20 @@", "  -old\\x1b[2J", "  +new 9", "  … 10 more lines"} {
		if !strings.Contains(frame, want) {
			t.Errorf("frame lacks %q:\n%s", want, frame)
		}
	}
	if strings.Contains(frame, "\x1b") || strings.Contains(frame, "+++ b/a.go") || strings.Contains(frame, "+new 10") {
		t.Errorf("frame:\n%s", frame)
	}
	// apply_patch names its files.
	ev, _ := messages.NewEvent("r", "w", messages.EvtToolFinished, 1, messages.ToolFinished{Tool: "apply_patch", Diff: "x",
		Metadata: map[string]any{"files": []string{"M a.go", "A b.go"}, "lines_added": 2}})
	v, _ := ev.Decode()
	if got := Describe(ev, v); got != "w: apply_patch M a.go, A b.go +2 −0" {
		t.Errorf("%q", got)
	}
}
