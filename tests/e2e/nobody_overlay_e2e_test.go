//go:build linux

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/troupe-ai/troupe/internal/peer"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

// The orchestrator run by a user who is not root (uid and gid 65534 when
// the tests run as root; troupe's users are not root), on a workspace
// that user owns, with agent.worktrees: overlay: the worker's worktree is
// an overlay (findmnt in its shell says so), its shell command and its
// file tools edit one tree (the shell reads what write_file made,
// appends to a.txt and makes a file and a directory at the worktree's
// top, edit_file edits a.txt), the edits land, and the
// sandbox holds: a
// write outside its worktree (to a directory the user owns) is refused,
// the user's key is unreadable, no secret-looking variable reaches it.
func TestUnprivilegedRunWithOverlayWorktrees(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	peer.Need(t, "git")
	peer.Need(t, "findmnt")
	exe, ws, home, cred := asOtherUser(t, bin.orchestrator)
	if os.Getenv("CHOWNEXE") != "" {
		must(t, os.Chown(exe, 65534, 65534))
	}
	outside := filepath.Join(filepath.Dir(home), "outside")
	if cred == nil {
		outside = t.TempDir()
	} else {
		must(t, os.Mkdir(outside, 0o755))
	}
	must(t, os.MkdirAll(filepath.Join(home, ".ssh"), 0o700))
	must(t, os.WriteFile(filepath.Join(home, ".ssh", "id_test"), []byte("SECRET KEY\n"), 0o600))
	must(t, os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha\n"), 0o644))
	must(t, os.MkdirAll(filepath.Join(ws, ".troupe"), 0o755))
	must(t, os.WriteFile(filepath.Join(ws, ".troupe", "config.yaml"),
		[]byte("agent:\n  plan_first: {root: false, worker: false}\n  isolation: worktree\n"), 0o644))
	// agent.worktrees is the user's to set (a workspace's config may not).
	must(t, os.MkdirAll(filepath.Join(home, ".config", "troupe"), 0o755))
	must(t, os.WriteFile(filepath.Join(home, ".config", "troupe", "config.yaml"), []byte("agent:\n  worktrees: overlay\n"), 0o644))
	if cred != nil {
		for _, d := range []string{ws, home, outside} {
			must(t, filepath.Walk(d, func(p string, _ os.FileInfo, err error) error {
				if err != nil {
					return err
				}
				return os.Lchown(p, int(cred.Uid), int(cred.Gid))
			}))
		}
	}
	asUser(t, cred, ws, "git", "init", "-q", "-b", "main")
	asUser(t, cred, ws, "git", "add", "-A")
	asUser(t, cred, ws, "git", "-c", "user.name=u", "-c", "user.email=u@example.org", "commit", "-q", "-m", "first")

	worker := []llmtest.Turn{
		{ToolCalls: []llmtest.ToolCall{call("write_file", map[string]string{"path": "tool.txt", "content": "from the tools\n"})}},
		{ToolCalls: []llmtest.ToolCall{sh("cat tool.txt >> a.txt && echo from the shell >> a.txt && echo new > new.txt && mkdir sub && echo deep > sub/deep.txt && " +
			"findmnt -n -o FSTYPE -T .")}},
		{ToolCalls: []llmtest.ToolCall{call("read_file", map[string]string{"path": "a.txt"})}},
		{ToolCalls: []llmtest.ToolCall{call("edit_file", map[string]string{"path": "a.txt", "old_string": "alpha", "new_string": "alpha, edited"})}},
		{ToolCalls: []llmtest.ToolCall{sh("echo escaped > " + filepath.Join(outside, "escaped.txt")),
			sh("cat " + filepath.Join(home, ".ssh", "id_test")), sh("env")}},
		{Text: "worker done"},
	}
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{call("delegate", map[string]string{"type": "worker", "task": "edit"})}}, {Text: "root done"}}},
		{Match: llmtest.Matcher{Kind: "worker"}, Turns: worker}}})
	t.Cleanup(srv.Close)
	cmd := exec.Command(exe, "run", "--workspace", ws, "--json", "--yes", "edit things")
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_STATE_HOME=", "OPENAI_BASE_URL=" + srv.URL(),
		"NO_COLOR=1", "TROUPE_NATS_URL="}, secretVars()...)
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	p := startCmd(t, cmd)
	res := runJSON(t, p)
	if res.Status != "completed" {
		t.Fatalf("run: %+v\n%s", res, p.errs())
	}
	for f, want := range map[string]string{"a.txt": "alpha, edited\nfrom the tools\nfrom the shell\n", "tool.txt": "from the tools\n",
		"new.txt": "new\n", "sub/deep.txt": "deep\n"} {
		if b, err := os.ReadFile(filepath.Join(ws, f)); err != nil || string(b) != want {
			t.Errorf("%s in the workspace: %q, %v; want %q", f, b, err, want)
		}
	}
	var last llmtest.Recorded
	for _, r := range srv.Requests() {
		if r.Kind == "worker" {
			last = r
		}
	}
	var all []string
	for _, m := range last.Messages {
		if m.Role == "tool" {
			all = append(all, m.Content)
		}
	}
	if len(all) < 2 || !strings.Contains(all[1], "[exit: 0]") || !strings.Contains(all[1], "overlay") {
		t.Errorf("the worker's shell command in its worktree (findmnt should say overlay): %q", all)
	}
	got := toolResultsOf(last)
	if t.Failed() {
		for _, m := range last.Messages {
			if m.Role == "tool" {
				t.Logf("the worker's tool result: %.600s", m.Content)
			}
		}
		t.Logf("run: %+v\n%s", res, p.errs())
	}
	if len(got) != 3 {
		reqs := srv.Requests()
		t.Fatalf("the worker's last results: %q; the root's: %q\n%s", got, toolResultsOf(reqs[len(reqs)-1]), p.errs())
	}
	if !strings.Contains(got[0], "Permission denied") {
		t.Errorf("a write outside the worktree: %q", got[0])
	}
	if _, err := os.Lstat(filepath.Join(outside, "escaped.txt")); err == nil {
		t.Error("the worker wrote outside its worktree")
	}
	if strings.Contains(got[1], "SECRET") {
		t.Errorf("the worker read the user's key: %q", got[1])
	}
	for k, v := range secretEnv {
		if strings.Contains(got[2], v) || strings.Contains(got[2], k+"=") {
			t.Errorf("the worker's command saw %s", k)
		}
	}
}

// asUser runs a program in dir as the user cred names (this process's
// user when nil), failing t on error.
func asUser(t *testing.T, cred *syscall.Credential, dir string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}
