package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/internal/testfiles"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

// sandbox.commit, through orchestrator run: a worker whose kind the
// user's own config lists commits in its worktree (its commit in
// its log, its file merged into the user's checkout), while the
// repository's config and refs stay out of its reach, with the rule
// named; a worker of a run without it cannot even stage.
func TestWorkerCommitsInItsWorktreeOnlyWhenConfigured(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	commit := sh(`echo c > c.txt && git add c.txt && git -c user.name=a -c user.email=a@example.org commit -qm mine && git log -1 --format=%s`)
	for _, allowed := range []bool{true, false} {
		ws := attackWS(t)
		if allowed {
			userConfig(t, ws, "sandbox:\n  commit: [worker]\n")
		}
		config, _ := os.ReadFile(filepath.Join(ws, ".git", "config"))
		head := strings.TrimSpace(testfiles.Git(t, ws, "rev-parse", "HEAD"))
		res, results, p := attack(t, ws,
			[]llmtest.Turn{{ToolCalls: []llmtest.ToolCall{call("delegate", map[string]string{"type": "worker", "task": "commit"})}}},
			[]llmtest.Turn{{ToolCalls: []llmtest.ToolCall{commit, sh("git config core.hooksPath /tmp"),
				sh("git update-ref refs/heads/planted HEAD")}}})
		if res.Status != "completed" {
			t.Fatalf("commit allowed %v: %+v\n%s", allowed, res, p.errs())
		}
		got := results["worker"]
		if len(got) != 3 {
			t.Fatalf("commit allowed %v: worker results %q", allowed, got)
		}
		if committed := strings.HasPrefix(got[0], "[exit: 0]\nmine\n"); committed != allowed {
			t.Errorf("commit allowed %v: the commit: %q", allowed, got[0])
		}
		if !allowed && !strings.Contains(got[0], rule) {
			t.Errorf("the refused commit does not name the rule: %q", got[0])
		}
		for _, r := range got[1:] {
			if strings.HasPrefix(r, "[exit: 0]") || !strings.Contains(r, rule) {
				t.Errorf("commit allowed %v: %q", allowed, r)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(ws, ".git", "config")); !bytes.Equal(b, config) {
			t.Errorf("commit allowed %v: .git/config changed:\n%s", allowed, b)
		}
		notThere(t, filepath.Join(ws, ".git", "refs", "heads", "planted"))
		if now := strings.TrimSpace(testfiles.Git(t, ws, "rev-parse", "HEAD")); now != head {
			t.Errorf("commit allowed %v: the user's HEAD moved from %s to %s", allowed, head, now)
		}
		if b, _ := os.ReadFile(filepath.Join(ws, "c.txt")); string(b) != "c\n" {
			t.Errorf("commit allowed %v: the worker's file did not land: %q", allowed, b)
		}
	}
}
