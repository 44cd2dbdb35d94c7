package tools

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// What configures git and troupe is not the agent's: write_file and
// edit_file refuse .git/config, hooks, info, a worktree's admin files,
// a worktree's .git file and .troupe (also reached through a link), with
// a sentence naming the rule; read_file still reads them, and nothing
// is changed.
func TestFileToolsRefuseGitAndTroupe(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	root := s.Workspace.Root()
	files := map[string]string{".git/config": "[core]\n", ".git/hooks/pre-commit.sample": "#!/bin/sh\n",
		".git/info/exclude": "# excludes\n", ".git/worktrees/w1/config.worktree": "[core]\n", ".troupe/config.yaml": "agent: {}\n",
		"wt/.git": "gitdir: /somewhere\n"}
	for rel, body := range files {
		writeFile(t, s, rel, body)
	}
	if err := os.Symlink(".git", filepath.Join(root, "hooks-link")); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{".git/config", ".git/hooks/pre-commit", ".git/info/attributes",
		".git/worktrees/w1/config.worktree", ".git/worktrees/w1/gitdir", ".troupe/config.yaml", ".troupe/agents/x.md",
		"hooks-link/hooks/post-checkout", ".git", ".troupe"} {
		for _, tool := range []Tool{WriteFile(), EditFile()} {
			readWithToolIfFile(t, s, path)
			args := fmt.Sprintf(`{"path":%q,"content":"#!/bin/sh\ntouch /tmp/pwned\n"}`, path)
			if tool.Spec().Name == NameEditFile {
				args = fmt.Sprintf(`{"path":%q,"old_string":"","new_string":"#!/bin/sh\ntouch /tmp/pwned\n"}`, path)
			}
			res := callFileTool(t, s, tool, args)
			if !res.IsError || !strings.Contains(res.Text, "refused") || !strings.Contains(res.Text, "what configures git and troupe is not the agent's") {
				t.Errorf("%s %s: %v %q", tool.Spec().Name, path, res.IsError, res.Text)
			}
		}
	}
	for rel, body := range files {
		if b, err := os.ReadFile(filepath.Join(root, rel)); err != nil || string(b) != body {
			t.Errorf("%s changed: %q %v", rel, b, err)
		}
	}
	for _, made := range []string{".git/hooks/pre-commit", ".git/info/attributes", ".troupe/agents", ".git/hooks/post-checkout"} {
		if _, err := os.Lstat(filepath.Join(root, made)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s was created: %v", made, err)
		}
	}
	// A worktree's .git file, seen from the worktree as its root.
	wt, err := NewWorkspace(filepath.Join(root, "wt"))
	if err != nil {
		t.Fatal(err)
	}
	defer wt.Close()
	ws := NewSession("wt", wt, Config{})
	defer ws.Close()
	readWithTool(t, ws, ".git")
	if res := callFileTool(t, ws, WriteFile(), `{"path":".git","content":"gitdir: /tmp/evil\n"}`); !res.IsError || !strings.Contains(res.Text, "not the agent's") {
		t.Errorf("the worktree's .git file: %q", res.Text)
	}
	if res := callFileTool(t, s, ReadFile(), `{"path":".git/config"}`); res.IsError || !strings.Contains(res.Text, "[core]") {
		t.Errorf("read_file .git/config: %q", res.Text)
	}
	if res := callFileTool(t, s, WriteFile(), `{"path":"src/.git/config","content":"x"}`); res.IsError {
		t.Errorf("a .git below the root is the agent's own: %q", res.Text)
	}
}

// readWithToolIfFile reads path with read_file when it is a file, so a
// refusal is for the rule and not for an unread file.
func readWithToolIfFile(t *testing.T, s *Session, path string) {
	t.Helper()
	if fi, err := os.Stat(filepath.Join(s.Workspace.Root(), path)); err == nil && fi.Mode().IsRegular() {
		readWithTool(t, s, path)
	}
}

// A folder on the way swapped for a link into .git after the path was
// checked is caught on the opened folder, before anything is written.
func TestWriteAtomicCatchesASwapIntoGit(t *testing.T) {
	t.Parallel()
	if _, err := os.Readlink("/proc/self/fd/0"); err != nil {
		t.Skip("no /proc/self/fd here: the look before the open stands alone")
	}
	s := newTestSession(t)
	root := s.Workspace.Root()
	writeFile(t, s, ".git/hooks/README", "hooks\n")
	if err := os.Symlink(filepath.Join(".git", "hooks"), filepath.Join(root, "d")); err != nil {
		t.Fatal(err)
	}
	// As Resolve saw it a moment earlier: d was a folder of the agent's.
	err := s.Workspace.WriteAtomic(filepath.Join(root, "d", "pre-commit"), []byte("#!/bin/sh\n"), 0o755)
	if !errors.Is(err, ErrReadOnly) {
		t.Fatalf("write through the swapped folder: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, ".git", "hooks", "pre-commit")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a hook was planted: %v", err)
	}
}
