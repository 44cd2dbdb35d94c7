package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/internal/peer"
)

// Offline, the two worker tasks run on the nodes (not in the
// orchestrator), each in its node's worktree of the orchestrator's
// snapshot; the results say which node ran each, and both changes land in
// the orchestrator's checkout.
func TestWorkerPoolOffline(t *testing.T) {
	peer.Need(t, "git")
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	var out, errb strings.Builder
	if err := run(t.Context(), &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	ran := regexp.MustCompile(`^worker-\S+ ran on (node-a|node-b): changed \[(greet\.go|bye\.go)\]$`)
	landed := regexp.MustCompile(`^changes of worker-\S+: applied \[(greet\.go|bye\.go)\]$`)
	files, applied := map[string]bool{}, map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if m := ran.FindStringSubmatch(l); m != nil {
			files[m[2]] = true
		}
		if m := landed.FindStringSubmatch(l); m != nil {
			applied[m[1]] = true
		}
	}
	for _, want := range []string{
		`orchestrator's greet.go: func Greet(name string) string { return "HELLO " + name }`,
		`orchestrator's bye.go: func Bye(name string) string { return "BYE " + name }`,
		"completed: Both files changed on the nodes.",
	} {
		if !strings.Contains(out.String(), want+"\n") {
			t.Errorf("no line %q in\n%s", want, out.String())
		}
	}
	if len(files) != 2 || len(applied) != 2 {
		t.Errorf("ran %v, applied %v:\n%s", files, applied, out.String())
	}
}
