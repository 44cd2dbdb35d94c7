package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/internal/peer"
	"github.com/troupe-ai/troupe/internal/testfiles"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

// lfsHome makes ws's programs' HOME (userConfig, with config) the HOME
// of this test's git too, and runs git lfs install in it, as a user of
// git lfs has.
func lfsHome(t *testing.T, ws, config string) {
	t.Helper()
	userConfig(t, ws, config)
	h, _ := homes.Load(ws)
	t.Setenv("HOME", h.(string))
	testfiles.UserGit(t, h.(string), "lfs", "install")
}

// An orchestrator and a node, real processes, on a repository using git
// lfs: the orchestrator's user committed a.bin through git lfs (its
// object in .git/lfs); the node's checkout is a clone made with git
// lfs's --skip smudge (pointers only, its .git/lfs empty) and its user
// has git lfs installed too. The remote worker reads a.bin's content
// (the object came with the snapshot), edits it and adds a new LFS file
// c.bin; both land in the orchestrator's workspace as content, their
// objects in the user's .git/lfs, and git status, git lfs status, git
// add (pointers) and git lfs fsck see an ordinary LFS change.
func TestRemoteWorkerEditsLFSFilesAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	peer.Need(t, "git")
	peer.Need(t, "git-lfs")
	for _, name := range []string{"GIT_CONFIG_GLOBAL", "XDG_CONFIG_HOME"} {
		t.Setenv(name, "")
		os.Unsetenv(name)
	}
	requester, node := t.TempDir(), t.TempDir()
	lfsHome(t, node, "agent:\n  plan_first: {worker: false}\nnode:\n  heartbeat: 1s\n")
	lfsHome(t, requester, "agent:\n  plan_first: {root: false, worker: false}\nnode:\n  placement_timeout: 90s\n")
	testfiles.UserGit(t, requester, "init", "-q", "-b", "main")
	testfiles.UserGit(t, requester, "lfs", "track", "*.bin")
	writeFiles(t, requester, map[string]string{".gitignore": ".troupe/\n", "a.bin": "lfs one\nlfs two\n", "g.go": "package g\n"})
	// Files older than the index (not racily clean): the snapshot takes
	// the index's pointers for them.
	past := time.Now().Add(-time.Hour)
	for _, name := range []string{".gitignore", ".gitattributes", "a.bin", "g.go"} {
		must(t, os.Chtimes(filepath.Join(requester, name), past, past))
	}
	testfiles.UserGit(t, requester, "add", "-A")
	testfiles.UserGit(t, requester, "commit", "-q", "-m", "first")
	testfiles.UserGit(t, node, "-c", "filter.lfs.smudge=git-lfs smudge --skip -- %f", "-c", "filter.lfs.process=git-lfs filter-process --skip",
		"clone", "-q", requester, ".")
	if b, _ := os.ReadFile(filepath.Join(node, "a.bin")); !strings.HasPrefix(string(b), "version https://git-lfs") {
		t.Fatalf("precondition: the node's a.bin is %q, want its pointer", b)
	}

	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: json.RawMessage(`{"type":"worker","task":"edit a.bin"}`)}}},
			{Text: "done"}}},
		{Match: llmtest.Matcher{Kind: "worker"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "read_file", Args: json.RawMessage(`{"path":"a.bin"}`)}}},
			{ToolCalls: []llmtest.ToolCall{{Name: "edit_file", Args: json.RawMessage(`{"path":"a.bin","old_string":"lfs two","new_string":"lfs TWO"}`)},
				{Name: "write_file", Args: json.RawMessage(`{"path":"c.bin","content":"a new lfs file\n"}`)}}},
			{Text: "edited"}}},
	}})
	defer srv.Close()
	run, n := runWithNode(t, srv, requester, node, "edit a.bin")
	res := runJSON(t, run)
	if res.Status != "completed" {
		t.Fatalf("run: %+v\n%s\nnode:\n%s", res, run.errs(), n.errs())
	}
	read := ""
	for _, r := range srv.Requests() {
		for _, m := range r.Messages {
			if r.Kind == "worker" && m.Role == "tool" && strings.Contains(m.Content, "lfs") && read == "" {
				read = m.Content
			}
		}
	}
	if !strings.Contains(read, "lfs two") || strings.Contains(read, "git-lfs.github.com") {
		t.Errorf("the remote worker read a.bin as %q, want its content", read)
	}
	if ch := changesOf(t, run); len(ch) != 1 || ch[0].Status != "applied" {
		t.Fatalf("run --json changes: %+v\nnode:\n%s", ch, n.errs())
	}
	testfiles.LFSLanded(t, requester, map[string]string{"a.bin": "lfs one\nlfs TWO\n", "c.bin": "a new lfs file\n"})
}
