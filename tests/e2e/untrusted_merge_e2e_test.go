package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/troupe-ai/troupe/internal/testfiles"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

// backgroundID is the agent ID a background delegate returned.
var backgroundID = regexp.MustCompile(`agent_id=([a-z]+-[0-9a-f]{8})`)

// waitOr waits for ch to close, or answers the turn that says it gave up
// when the test's context ends first (so a broken run fails, never hangs).
func waitOr(ctx context.Context, ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		return false
	}
}

// Attack 4 of issue 28: while a background worker in its worktree edits
// d/x and deletes d/y, the root swaps d/ for a symlink to a directory
// outside the workspace. The merge-back writes and deletes nothing there:
// the outcome is a conflict whose reason (run --json's changes, and the
// root's check_agent result) names the rule, the patch is kept, d is
// still the root's link, and a second run on the same workspace is
// unaffected. A .troupe/runs planted as a link to a folder outside gets
// nothing: the kept patch is in troupe's state directory.
func TestAttackMergeBackFollowsNoSymlink(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	ws := attackWS(t)
	must(t, os.MkdirAll(filepath.Join(ws, "d"), 0o755))
	must(t, os.WriteFile(filepath.Join(ws, "d", "x"), []byte("x\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(ws, "d", "y"), []byte("y\n"), 0o644))
	testfiles.Git(t, ws, "add", "-A")
	testfiles.Git(t, ws, "commit", "-q", "-m", "d")
	target := t.TempDir()
	// The same bytes as the snapshot's d/: a merge that followed the link
	// would see no overlap and write d/x and delete d/y out there.
	outsideFiles := map[string]string{"x": "x\n", "y": "y\n", "z": "z\n"}
	for name, c := range outsideFiles {
		must(t, os.WriteFile(filepath.Join(target, name), []byte(c), 0o644))
	}
	// Attack 5's patch half: where an older version kept conflict patches
	// (.troupe/runs) is a link to a folder outside, as a cloned repository
	// could ship it. The patch goes to the state directory; nothing there.
	trap := t.TempDir()
	must(t, os.Symlink(trap, filepath.Join(ws, ".troupe", "runs")))
	untouched := func(when string) {
		t.Helper()
		if entries, _ := os.ReadDir(trap); len(entries) != 0 {
			t.Errorf("%s: %d entries written through .troupe/runs", when, len(entries))
		}
		entries, err := os.ReadDir(target)
		must(t, err)
		if len(entries) != len(outsideFiles) {
			t.Errorf("%s: %d entries outside the workspace, want %d", when, len(entries), len(outsideFiles))
		}
		for name, c := range outsideFiles {
			if b, err := os.ReadFile(filepath.Join(target, name)); err != nil || string(b) != c {
				t.Errorf("%s: outside the workspace %s = %q (%v), want %q", when, name, b, err, c)
			}
		}
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	srv := swapScript(ctx, target)
	t.Cleanup(srv.Close)
	p := start(t, bin.orchestrator, modelEnv(srv), "run", "--workspace", ws, "--json", "--yes", "--ephemeral", "swap d")
	res := runJSON(t, p)
	cancel()
	untouched("the run")
	if res.Status != "completed" {
		t.Fatalf("run: %+v\n%s", res, p.errs())
	}
	var worker []string
	var root string
	for _, r := range srv.Requests() {
		if r.Kind == "worker" {
			worker = toolResultsOf(r)
		} else if rs := toolResultsOf(r); len(rs) == 1 && strings.Contains(rs[0], "[changes:") {
			root = rs[0]
		}
	}
	if len(worker) != 1 || !strings.HasPrefix(worker[0], "[exit: 0]") {
		t.Fatalf("the worker's rm d/y: %q", worker)
	}
	changes := conflictsOf(t, p)
	if len(changes) != 1 {
		t.Fatalf("changes %+v\n%s", changes, p.errs())
	}
	c := changes[0]
	const why = "d is a symbolic link"
	if c.Status != "conflict" || !strings.Contains(c.Reason, why) || !slices.Contains(c.Conflicts, "d/x") || !slices.Contains(c.Conflicts, "d/y") {
		t.Errorf("the outcome %+v: want a conflict in d/x and d/y naming the rule (%q)", c, why)
	}
	if !strings.Contains(root, "NOT applied") || !strings.Contains(root, why) {
		t.Errorf("the root's check_agent result does not name the rule: %q", root)
	}
	if b, err := os.ReadFile(c.Patch); err != nil || !strings.Contains(string(b), "worker's x") || !strings.Contains(string(b), "deleted file") {
		t.Errorf("the patch %q was not kept whole: %v\n%s", c.Patch, err, b)
	} else if !strings.HasPrefix(c.Patch, stateDirOf(t, ws)) {
		t.Errorf("the patch %s is not under the state directory", c.Patch)
	}
	if fi, err := os.Lstat(filepath.Join(ws, "d")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("d is no longer the root's link: %v", err)
	}
	secondRun(t, ws, filepath.Join(t.TempDir(), "pwned"))
	untouched("the second run")
}

// swapScript is attack 4's script: the root delegates a background
// worker, and once the worker has edited d/x and deleted d/y in its
// worktree, swaps d for a link to target, then waits for the worker; the
// worker ends only after the swap, so its merge-back meets the link.
// A gate not reached before ctx ends answers a turn that says so.
func swapScript(ctx context.Context, target string) *llmtest.Server {
	edited, swapped := make(chan struct{}), make(chan struct{})
	closeEdited, closeSwapped := onceCloser(edited), onceCloser(swapped)
	say := func(s string) llmtest.Turn { return llmtest.Turn{Text: s} }
	return llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{call("delegate", map[string]any{"type": "worker", "task": "edit d", "background": true})}},
			{Dynamic: func(llmtest.Recorded) llmtest.Turn {
				// The worker's edits are made in its worktree; now the swap.
				if !waitOr(ctx, edited) {
					return say("the worker never edited")
				}
				return llmtest.Turn{ToolCalls: []llmtest.ToolCall{sh("rm -rf d && ln -s " + target + " d && ls -l d")}}
			}},
			{Dynamic: func(req llmtest.Recorded) llmtest.Turn {
				closeSwapped()
				var id string
				for _, m := range req.Messages {
					if m := backgroundID.FindStringSubmatch(m.Content); m != nil {
						id = m[1]
					}
				}
				b, _ := json.Marshal(map[string]any{"agent_id": id, "block": true, "timeout": 300})
				return llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "check_agent", Args: b}}}
			}},
			say("root done")}},
		{Match: llmtest.Matcher{Kind: "worker"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{call("read_file", map[string]string{"path": "d/x"})}},
			{ToolCalls: []llmtest.ToolCall{call("edit_file", map[string]string{"path": "d/x", "old_string": "x", "new_string": "worker's x"})}},
			{ToolCalls: []llmtest.ToolCall{sh("rm d/y")}},
			{Dynamic: func(llmtest.Recorded) llmtest.Turn {
				closeEdited()
				if !waitOr(ctx, swapped) {
					return say("the root never swapped")
				}
				return say("worker done")
			}}}},
	}})
}

// conflictsOf is run --json's changes with the conflict's fields.
func conflictsOf(t *testing.T, p *proc) []struct {
	Status    string   `json:"status"`
	Files     []string `json:"files"`
	Conflicts []string `json:"conflicts"`
	Reason    string   `json:"reason"`
	Patch     string   `json:"patch"`
} {
	t.Helper()
	var out struct {
		Changes []struct {
			Status    string   `json:"status"`
			Files     []string `json:"files"`
			Conflicts []string `json:"conflicts"`
			Reason    string   `json:"reason"`
			Patch     string   `json:"patch"`
		} `json:"changes"`
	}
	if err := json.Unmarshal([]byte(p.out()), &out); err != nil {
		t.Fatalf("run --json: %v\n%s", err, p.out())
	}
	return out.Changes
}

// onceCloser closes ch the first time it is called.
func onceCloser(ch chan struct{}) func() {
	var once sync.Once
	return func() { once.Do(func() { close(ch) }) }
}
