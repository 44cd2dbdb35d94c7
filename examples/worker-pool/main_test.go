package main

import (
	"regexp"
	"strings"
	"testing"
)

// Offline, the two worker tasks run on the nodes (not in the
// orchestrator), each edits its file in its node's checkout, and the
// results say which node ran it and what changed.
func TestWorkerPoolOffline(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	var out, errb strings.Builder
	if err := run(t.Context(), &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	re := regexp.MustCompile(`^worker-\S+ ran on (node-a|node-b): changed \[(greet\.go|bye\.go)\]$`)
	files := map[string]bool{}
	for _, l := range lines[:len(lines)-1] {
		m := re.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("unexpected line %q in\n%s", l, out.String())
		}
		files[m[2]] = true
	}
	if len(files) != 2 || lines[len(lines)-1] != "completed: Both files changed on the nodes." {
		t.Errorf("output:\n%s", out.String())
	}
}
