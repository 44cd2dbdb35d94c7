//go:build linux

package sandbox

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/internal/peer"
)

// roBox is a box whose workspace is a git checkout with a hook folder
// and a .troupe folder, and whose policy keeps .git and .troupe
// read-only, as Settings.PolicyFor makes it.
func roBox(t *testing.T) *box {
	t.Helper()
	peer.Need(t, "git")
	b := newBox(t)
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = b.ws
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+b.home)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(b.ws, "a.txt"), []byte("a\n"), 0o644))
	must(os.MkdirAll(filepath.Join(b.ws, "src"), 0o755))
	must(os.WriteFile(filepath.Join(b.ws, "src", "b.txt"), []byte("b\n"), 0o644))
	git("add", "-A")
	git("-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-qm", "one")
	must(os.MkdirAll(filepath.Join(b.ws, ".troupe", "worktrees", "w1"), 0o755))
	must(os.WriteFile(filepath.Join(b.ws, ".troupe", "config.yaml"), []byte("agent: {}\n"), 0o644))
	b.pol.ReadOnly = []string{filepath.Join(b.ws, ".git"), filepath.Join(b.ws, ".troupe")}
	return b
}

// runWith runs script confined by pol on a kernel supporting s.
func (b *box) runWith(t *testing.T, pol Policy, s Support, script string) (string, int) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = b.ws
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.home, "TMPDIR=" + b.tmp, "GIT_CONFIG_NOSYSTEM=1"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := Start(cmd, pol, s); err != nil {
		t.Fatalf("start: %v", err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run: %v", err)
	}
	return out.String(), cmd.ProcessState.ExitCode()
}

// readOnlyModes are the ways .git and .troupe are kept: a mount namespace
// this process makes, one the launcher is cloned into (a new user
// namespace), and Landlock alone.
func readOnlyModes(t *testing.T) map[string]Support {
	s := Check()
	modes := map[string]Support{"landlock": s.pretend("mountns")}
	if s.ThreadMountNS {
		modes["thread"] = s
	}
	if s.UserNS {
		modes["launcher"] = s.pretend("threadmountns")
	}
	want := 3
	if os.Getuid() != 0 {
		want = 2 // a mount namespace made on a thread needs CAP_SYS_ADMIN
	}
	if len(modes) < want {
		peer.Missing(t, "mount namespaces", "only %d of the %d ways to keep .git read-only this user has can be tried here: %+v", len(modes), want, s)
	}
	return modes
}

// Attack 1 of issue 28, in the sandbox: a command that writes git's
// config, plants a hook, rewrites info/attributes, renames or removes
// .git, or writes troupe's files fails, however it goes about it, and
// nothing changes; the rest of the workspace stays writable, git status,
// diff and log work, and nothing of it is left mounted afterwards.
func TestGitAndTroupeReadOnly(t *testing.T) {
	needKernel(t)
	for name, s := range readOnlyModes(t) {
		t.Run(name, func(t *testing.T) {
			b := roBox(t)
			config, _ := os.ReadFile(filepath.Join(b.ws, ".git", "config"))
			for _, attack := range []string{
				`printf '[filter "x"]\n\tclean = ./f.sh\n' >> .git/config`,
				`git config filter.x.clean ./f.sh`,
				`printf '#!/bin/sh\ntouch /tmp/pwned\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit`,
				`mv .git/hooks/pre-commit.sample .git/hooks/pre-commit`,
				`echo '* filter=x' > .git/info/attributes`,
				`mv .git .git-old && mkdir .git`,
				`rm -rf .git`,
				`echo 'model: {base_url: http://evil}' > .troupe/config.yaml`,
				`rm -rf .troupe`,
				`mkdir .troupe/agents`,
				`ln -s /tmp .troupe/spill`,
			} {
				out, code := b.runWith(t, b.pol, s, attack)
				if code == 0 {
					t.Errorf("%s: exit 0\n%s", attack, out)
				}
				if e := Explain(code, out, b.pol); !strings.Contains(e, "sandbox") {
					t.Errorf("%s: no sandbox line for %q", attack, out)
				}
			}
			if got, _ := os.ReadFile(filepath.Join(b.ws, ".git", "config")); !bytes.Equal(got, config) {
				t.Errorf(".git/config changed:\n%s", got)
			}
			for _, p := range []string{".git/hooks/pre-commit", ".git/info/attributes", ".git-old", ".troupe/agents", ".troupe/spill"} {
				notExist(t, filepath.Join(b.ws, p))
			}
			for _, p := range []string{".git/HEAD", ".git/hooks/pre-commit.sample", ".troupe/config.yaml"} {
				if _, err := os.Stat(filepath.Join(b.ws, p)); err != nil {
					t.Errorf("%s: %v", p, err)
				}
			}
			out, code := b.runWith(t, b.pol, s, `set -e; echo more >> a.txt; echo new > src/c.txt; mkdir -p src/d; rm src/b.txt
git status --short; git diff --stat; git log --oneline | wc -l`)
			if code != 0 || !strings.Contains(out, " M a.txt") || !strings.Contains(out, "2 files changed") {
				t.Errorf("writes and git in the workspace: exit %d\n%s", code, out)
			}
			out, code = b.runWith(t, b.pol, s, `echo new > top.txt`)
			if name == "landlock" {
				if code == 0 {
					t.Errorf("Landlock alone let a command create an entry in the top folder:\n%s", out)
				}
			} else if code != 0 {
				t.Errorf("a new file in the top folder: exit %d\n%s", code, out)
			}
			if mi, err := os.ReadFile("/proc/self/mountinfo"); err == nil && strings.Contains(string(mi), b.ws) {
				t.Errorf("a mount of the workspace leaked into this namespace:\n%s", mi)
			}
		})
	}
}

// Without read-only trees nothing changes: the workspace root stays
// writable as a whole, new entries included, whatever the kernel offers.
func TestNoHolesNoSplit(t *testing.T) {
	needKernel(t)
	b := newBox(t)
	b.pol.ReadOnly = []string{filepath.Join(b.ws, ".git")} // no .git here
	out, code := b.runWith(t, b.pol, Check().pretend("mountns"), `echo new > top.txt && mkdir top && rmdir top`)
	if code != 0 {
		t.Errorf("exit %d\n%s", code, out)
	}
}

// The write grants split around holes leave the holes, and only them,
// out, and never grant through a link.
func TestSplitWrites(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"ws/.git/hooks", "ws/src", "ws/.troupe"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "ws", "a.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(root, "ws", "etc")); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(root, "ws")
	p := Policy{Writable: []string{ws, "/tmp/x"}, ReadOnly: []string{filepath.Join(ws, ".git"), filepath.Join(ws, ".troupe"), filepath.Join(ws, ".nope")}}
	holes := p.holes()
	if len(holes) != 2 {
		t.Fatalf("holes %v", holes)
	}
	got := p.splitWrites(holes).Writable
	want := []string{filepath.Join(ws, "a.txt"), filepath.Join(ws, "src"), "/tmp/x"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("split %v, want %v", got, want)
	}
}

// A read-only entry that is a symbolic link stands for its target when
// that lies in a writable tree; one pointing elsewhere needs no hole.
func TestHolesFollowALinkToItsTarget(t *testing.T) {
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	for _, d := range []string{"ws/real-git", "elsewhere"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("real-git", filepath.Join(ws, ".git")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "elsewhere"), filepath.Join(ws, ".troupe")); err != nil {
		t.Fatal(err)
	}
	p := Policy{Writable: []string{ws}, ReadOnly: []string{filepath.Join(ws, ".git"), filepath.Join(ws, ".troupe")}}
	if got := p.holes(); len(got) != 1 || got[0] != filepath.Join(ws, "real-git") {
		t.Errorf("holes %v", got)
	}
}
