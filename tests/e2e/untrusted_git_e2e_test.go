package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/llm/llmtest"
)

// Attacks 1 and 2 of issue 28, as a prompt-injected model makes them
// through orchestrator run. Attack 1: the root agent's shell names a
// program as a filter (and fsmonitor, hooks, a diff and a merge driver,
// pager, ssh command, credential helper) in the repository's config and
// every file's attributes, then delegates. Attack 2: the worker's shell
// makes a repository of its own with that filter and points its
// worktree's .git file at it, then edits a file. The snapshot, the
// worktree, the capture and the merge-back run no planted program (none
// of the orchestrator's environment, secrets included, is ever dumped),
// the worker's change lands, and a second run on the same workspace is
// unaffected. The same plants are live for git as a user runs it.
//
// For attack 1 the repository's config is planted before the run too (as
// an earlier run's agent, or whoever handed over the repository, would
// leave it), so troupe's git meets it even where the sandbox refuses the
// agent's own writes to .git/config.
func TestAgentsGitPlantsRunNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	for _, attack := range []string{"repository config", "worktree redirected"} {
		t.Run(attack, func(t *testing.T) { gitPlantsRun(t, attack == "repository config") })
	}
}

func gitPlantsRun(t *testing.T, repoConfig bool) {
	outside := t.TempDir()
	prog, markers := filepath.Join(outside, "evil"), filepath.Join(outside, "markers")
	must(t, os.Mkdir(markers, 0o755))
	must(t, os.WriteFile(prog, []byte("#!/bin/sh\n{ echo \"$0 $*\"; env; } > "+markers+"/ran.$$ 2>/dev/null\n"+
		"case \"$1\" in clean|smudge|textconv) cat ;; esac\nexit 0\n"), 0o755))
	ws := gitRepo(t, map[string]string{"f.go": "package f\n\nfunc F() int { return 1 }\n", "g.go": "package f\n\nfunc G() int { return 1 }\n"},
		"agent:\n  plan_first: {root: false, worker: false}\n  isolation: worktree\n")
	plant := strings.Join([]string{
		"git config filter.x.clean '" + prog + " clean'", "git config filter.x.smudge '" + prog + " smudge'",
		"git config filter.x.process '" + prog + " process'", "git config diff.x.textconv '" + prog + " textconv'",
		"git config diff.external " + prog, "git config merge.x.driver '" + prog + " merge %O %A %B'",
		"git config core.fsmonitor " + prog, "git config core.hooksPath .git/hooks", "git config core.pager " + prog,
		"git config core.sshCommand " + prog, "git config credential.helper '!" + prog + "'",
		"mkdir -p .git/hooks", "for h in post-checkout post-commit reference-transaction pre-commit post-index-change; do cp " + prog + " .git/hooks/$h; done",
	}, " && ") + " ; printf '* filter=x diff=x merge=x\\n' > .gitattributes"
	if !repoConfig {
		plant = "printf '* filter=x diff=x merge=x\\n' > .gitattributes" // attack 2 alone
	}
	cmd := exec.Command("sh", "-c", plant)
	cmd.Dir = ws
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("plant: %v\n%s", err, out)
	}
	shell := func(command string) llmtest.ToolCall {
		args, err := json.Marshal(map[string]string{"command": command})
		must(t, err)
		return llmtest.ToolCall{Name: "shell", Args: args}
	}
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{shell(plant)}},
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: []byte(`{"type":"worker","task":"change F"}`)}}},
			{Text: "done"}}},
		{Match: llmtest.Matcher{Kind: "worker"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{shell("git log -1 --format='log: %s' && git status --porcelain && " +
				"git init -q own && git -C own config filter.x.clean '" + prog + " clean' && " +
				"git -C own config core.fsmonitor " + prog + " && printf 'own/\\n' >> .gitignore && " +
				"printf 'gitdir: %s/own/.git\\n' \"$PWD\" > .git")}},
			{ToolCalls: []llmtest.ToolCall{{Name: "read_file", Args: []byte(`{"path":"f.go"}`)}}},
			{ToolCalls: []llmtest.ToolCall{{Name: "edit_file", Args: []byte(`{"path":"f.go","old_string":"return 1","new_string":"return 2"}`)}}},
			{Text: "changed F"}}},
	}})
	defer srv.Close()
	p := start(t, bin.orchestrator, append(modelEnv(srv), secretVars()...), "run", "--workspace", ws, "--json", "change F")
	res := runJSON(t, p)
	ran := func(when string) {
		t.Helper()
		entries, err := os.ReadDir(markers)
		must(t, err)
		for _, e := range entries {
			dump, _ := os.ReadFile(filepath.Join(markers, e.Name()))
			t.Errorf("%s: the planted program ran:\n%s", when, dump)
		}
	}
	ran("the run")
	changes := changesOf(t, p)
	if len(changes) != 1 || changes[0].Status != "applied" || !slices.Contains(changes[0].Files, "f.go") ||
		!slices.Contains(changes[0].Files, ".gitignore") {
		t.Fatalf("changes %+v; run:\n%s", changes, p.errs())
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "f.go")); !strings.Contains(string(b), "return 2") {
		t.Errorf("the worker's change did not land: %s", b)
	}
	if res.Status != "completed" {
		t.Errorf("run %s", res.Status)
	}
	// The worker's own git works in its worktree (it reads the git
	// directory troupe made for it): the snapshot commit, nothing changed.
	seen := false
	for _, r := range srv.Requests() {
		if results := toolResultsOf(r); r.Kind == "worker" && len(results) == 1 && strings.Contains(results[0], "log: ") {
			seen = true
			if !strings.Contains(results[0], "log: troupe snapshot") || strings.Contains(results[0], "fatal") {
				t.Errorf("git in the worker's worktree: %s", results[0])
			}
		}
	}
	if !seen {
		t.Error("the worker's shell result never reached the model")
	}

	// A second run on the same workspace, everything planted still there.
	srv2 := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: []byte(`{"type":"worker","task":"change G"}`)}}},
			{Text: "done"}}},
		{Match: llmtest.Matcher{Kind: "worker"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "read_file", Args: []byte(`{"path":"g.go"}`)}}},
			{ToolCalls: []llmtest.ToolCall{{Name: "edit_file", Args: []byte(`{"path":"g.go","old_string":"return 1","new_string":"return 3"}`)}}},
			{Text: "changed G"}}},
	}})
	defer srv2.Close()
	p2 := start(t, bin.orchestrator, append(modelEnv(srv2), secretVars()...), "run", "--workspace", ws, "--json", "change G")
	runJSON(t, p2)
	ran("the second run")
	if c := changesOf(t, p2); len(c) != 1 || c[0].Status != "applied" {
		t.Errorf("second run's changes %+v", c)
	}

	// git as the user runs it: the plants are live (in the worktree's
	// repository the worker made, for attack 2 alone: its config named
	// the program too).
	dir := ws
	if !repoConfig {
		dir = filepath.Join(t.TempDir(), "control")
		cmd := exec.Command("sh", "-c", "git init -q "+dir+" && git -C "+dir+" config core.fsmonitor "+prog)
		must(t, cmd.Run())
	}
	status := exec.Command("git", "status", "--porcelain")
	status.Dir = dir
	_ = status.Run() // the process filter, which is no filter, fails it
	if entries, _ := os.ReadDir(markers); len(entries) == 0 {
		t.Error("plain git status ran nothing planted: this test's plants are not live")
	}
}
