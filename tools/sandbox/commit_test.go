//go:build linux

package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A kind of sandbox.commit commits in its worktree (its HEAD, index and
// logs, the objects) and still cannot touch the repository's config,
// hooks, its worktree's gitdir or another worktree; a kind not listed
// cannot commit at all. Without mount namespaces a commit fails too.
func TestCommitInItsOwnWorktree(t *testing.T) {
	needKernel(t)
	for name, s := range readOnlyModes(t) {
		t.Run(name, func(t *testing.T) {
			b := roBox(t)
			git := func(dir string, args ...string) {
				t.Helper()
				cmd := exec.Command("git", args...)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+b.home)
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("git %v: %v\n%s", args, err, out)
				}
			}
			wt, other := filepath.Join(b.ws, ".troupe", "worktrees", "w1"), filepath.Join(b.ws, ".troupe", "worktrees", "w2")
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(os.RemoveAll(wt))
			git(b.ws, "worktree", "add", "-q", "--detach", wt)
			git(b.ws, "worktree", "add", "-q", "--detach", other)
			admin := filepath.Join(b.ws, ".git", "worktrees", "w1")
			settings := Settings{Commit: []string{"worker"}, DenyRead: b.pol.DenyRead}
			pol := settings.PolicyFor("worker", wt)
			pol.Writable = append(pol.Writable, b.tmp)
			b.ws = wt // commands run in the worktree
			commit := `echo new > new.txt && git add new.txt && git -c user.name=a -c user.email=a@example.org commit -qm mine && git log --oneline | wc -l`
			out, code := b.runWith(t, pol, s, commit)
			if name == "landlock" {
				if code == 0 {
					t.Errorf("a commit with Landlock alone:\n%s", out)
				}
			} else if code != 0 || !strings.Contains(out, "2") {
				t.Errorf("commit in its worktree: exit %d\n%s", code, out)
			}
			for _, attack := range []string{
				`git config core.hooksPath /tmp`,
				`echo 'gitdir: /tmp/x' > ` + filepath.Join(admin, "gitdir"),
				`echo '../../../../tmp' > ` + filepath.Join(admin, "commondir"),
				`printf '#!/bin/sh\n' > ` + filepath.Join(b.ws, "..", "..", "..", ".git", "hooks", "pre-commit"),
				`echo 0000 > ` + filepath.Join(filepath.Dir(admin), "w2", "HEAD"),
				`echo x > ` + filepath.Join(filepath.Dir(filepath.Dir(admin)), "refs", "heads", "x"),
			} {
				if out, code := b.runWith(t, pol, s, attack); code == 0 {
					t.Errorf("%s: exit 0\n%s", attack, out)
				}
			}
			notExist(t, filepath.Join(filepath.Dir(filepath.Dir(admin)), "hooks", "pre-commit"))
			if g, _ := os.ReadFile(filepath.Join(admin, "gitdir")); !strings.Contains(string(g), wt) {
				t.Errorf("gitdir: %q", g)
			}
			// A kind not listed commits nothing.
			plain := Settings{DenyRead: b.pol.DenyRead}.PolicyFor("explore", wt)
			plain.Writable = append(plain.Writable, b.tmp)
			if out, code := b.runWith(t, plain, s, `echo more > more.txt && git add more.txt`); code == 0 {
				t.Errorf("git add by a kind that may not commit:\n%s", out)
			}
		})
	}
}
