package workspace

import (
	"strconv"
	"strings"
	"testing"
)

// --changes branch: a short name, the user's identity and the real time,
// a message naming run and agent; the commit sits directly on HEAD when
// nothing was uncommitted, else on one commit of the uncommitted changes.
func TestBranchIsOneUsersCanMerge(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	for _, v := range []string{"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"} {
		t.Setenv(v, "")
	}
	write(t, home, map[string]string{".gitconfig": "[user]\n\tname = Ada Lovelace\n\temail = ada@example.com\n"})
	root := newRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	head := sh(t, root, "rev-parse", "HEAD")
	r := open(t, root)
	const run = "0123456789abcdef-run"

	land := func(agent string) string {
		t.Helper()
		snap, err := r.Snapshot(t.Context())
		must(t, err)
		w, err := r.NewWorktree(t.Context(), snap, agent)
		must(t, err)
		write(t, w.Root(), map[string]string{"a.txt": "a by " + agent + "\n"})
		cs, err := w.Capture(t.Context())
		must(t, err)
		must(t, w.Remove(t.Context()))
		out, err := r.Apply(t.Context(), snap, cs, ModeBranch, run, agent)
		must(t, err)
		if out.Branch != "troupe/01234567/"+agent {
			t.Fatalf("branch %q", out.Branch)
		}
		return out.Branch
	}

	clean := land("worker-1")
	if p := sh(t, root, "rev-parse", clean+"^"); p != head {
		t.Errorf("the branch's parent is %s, not HEAD %s", p, head)
	}
	who := sh(t, root, "log", "-1", "--format=%an <%ae>|%cn <%ce>|%at|%B", clean)
	parts := strings.SplitN(who, "|", 4)
	if parts[0] != "Ada Lovelace <ada@example.com>" || parts[1] != parts[0] {
		t.Errorf("author and committer %q %q", parts[0], parts[1])
	}
	if at, _ := strconv.ParseInt(parts[2], 10, 64); at < 1700000000 {
		t.Errorf("dated %s, not now", parts[2])
	}
	if !strings.Contains(parts[3], run) || !strings.Contains(parts[3], "worker-1") {
		t.Errorf("message %q names not the run and the agent", parts[3])
	}

	write(t, root, map[string]string{"b.txt": "b, uncommitted\n"})
	dirty := land("worker-2")
	if p := sh(t, root, "rev-parse", dirty+"~2"); p != head {
		t.Errorf("the branch is not two commits on HEAD: %s", p)
	}
	if msg := sh(t, root, "log", "-1", "--format=%s|%an", dirty+"^"); msg != "troupe: uncommitted changes at snapshot|Ada Lovelace" {
		t.Errorf("the uncommitted changes' commit: %q", msg)
	}
	if got := sh(t, root, "show", dirty+":b.txt"); got != "b, uncommitted" {
		t.Errorf("the branch's b.txt %q", got)
	}
}
