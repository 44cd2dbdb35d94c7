package workspace

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/messages"
)

// The attacks of issue 28 on troupe's own git, planted as an agent (or a
// repository it was handed) would plant them, then every workspace
// operation run over them: nothing planted runs, and git itself, run as
// a user would, shows the plants are live.

// hooks are the hook names planted.
var hooks = []string{"pre-commit", "post-commit", "post-checkout", "post-merge", "pre-auto-gc", "post-rewrite",
	"reference-transaction", "post-index-change", "fsmonitor-watchman", "pre-push", "push-to-checkout"}

// attack is what a test planted: where the planted program leaves its
// marks (an environment dump per run), outside any workspace.
type attack struct {
	prog    string // the planted program
	markers string // where it writes
}

// newAttack writes the program an attacker wants run: it dumps its
// environment and arguments into markers, and passes its input through
// (a filter that ran still works).
func newAttack(t *testing.T) *attack {
	t.Helper()
	out := t.TempDir()
	a := &attack{prog: filepath.Join(out, "bin", "evil"), markers: filepath.Join(out, "markers")}
	must(t, os.MkdirAll(a.markers, 0o755))
	must(t, os.MkdirAll(filepath.Dir(a.prog), 0o755))
	script := "#!/bin/sh\nf=" + a.markers + "/ran.$$\n{ echo \"$0 $*\"; env; } > \"$f\" 2>/dev/null\n" +
		"case \"$1\" in clean|smudge|textconv) cat ;; esac\nexit 0\n"
	must(t, os.WriteFile(a.prog, []byte(script), 0o755))
	return a
}

// ran is what the planted program wrote, each run's dump.
func (a *attack) ran(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(a.markers)
	must(t, err)
	var dumps []string
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(a.markers, e.Name()))
		dumps = append(dumps, string(b))
	}
	return dumps
}

// none fails the test when the planted program ran during what.
func (a *attack) none(t *testing.T, what string) {
	t.Helper()
	if dumps := a.ran(t); len(dumps) > 0 {
		t.Fatalf("%s ran the planted program %d times; first:\n%s", what, len(dumps), dumps[0])
	}
}

// ok fails the test when the planted program ran, then when err is set
// (a planted filter that ran may make git fail too).
func (a *attack) ok(t *testing.T, err error) {
	t.Helper()
	a.none(t, "the workspace")
	must(t, err)
}

// plantRepo makes the repository at gitDir (its git directory) name the
// program everywhere git could run one: filter, diff and merge drivers,
// the filesystem monitor, hooks (its own and a hooksPath), pager,
// editor, ssh, credential helper, signing, alternate refs, a transport
// for any fetch, and an include (and includeIf) whose file names a
// filter of its own.
func (a *attack) plantRepo(t *testing.T, gitDir string) {
	t.Helper()
	inc := filepath.Join(filepath.Dir(a.markers), "inc.config")
	must(t, os.WriteFile(inc, []byte("[filter \"y\"]\n\tclean = "+a.prog+" clean\n\tsmudge = "+a.prog+" smudge\n"+
		"[core]\n\tfsmonitor = "+a.prog+"\n"), 0o644))
	hooksPath := filepath.Join(filepath.Dir(a.markers), "hooks")
	for _, dir := range []string{hooksPath, filepath.Join(gitDir, "hooks")} {
		must(t, os.MkdirAll(dir, 0o755))
		for _, h := range hooks {
			_ = os.Remove(filepath.Join(dir, h))
			must(t, os.Symlink(a.prog, filepath.Join(dir, h)))
		}
	}
	keys := [][2]string{
		{"filter.x.clean", a.prog + " clean"}, {"filter.x.smudge", a.prog + " smudge"}, {"filter.x.process", a.prog + " process"},
		{"diff.x.textconv", a.prog + " textconv"}, {"diff.x.command", a.prog}, {"diff.external", a.prog},
		{"merge.x.driver", a.prog + " merge %O %A %B"}, {"merge.x.name", "evil"},
		{"core.fsmonitor", a.prog}, {"core.hooksPath", hooksPath}, {"core.sshCommand", a.prog},
		{"core.pager", a.prog}, {"core.editor", a.prog}, {"core.askPass", a.prog}, {"sequence.editor", a.prog},
		{"credential.helper", "!" + a.prog}, {"gpg.program", a.prog}, {"gpg.ssh.program", a.prog},
		{"commit.gpgSign", "true"}, {"core.alternateRefsCommand", a.prog},
		{"remote.origin.url", "ext::" + a.prog + " %S"}, {"protocol.ext.allow", "always"},
		{"include.path", inc}, {"includeIf.gitdir:/.path", inc},
	}
	for _, kv := range keys {
		gitAt(t, gitDir, "config", kv[0], kv[1])
	}
	must(t, os.MkdirAll(filepath.Join(gitDir, "info"), 0o755))
	must(t, os.WriteFile(filepath.Join(gitDir, "info", "attributes"), []byte("* filter=x diff=x merge=x\n"), 0o644))
}

// attributes is the .gitattributes an agent writes to name the drivers.
const attributes = "* filter=x diff=x merge=x\n*.txt filter=y\n"

// gitAt runs plain git in the git directory dir (a test's own use).
func gitAt(t *testing.T, dir string, args ...string) {
	t.Helper()
	sh(t, dir, append([]string{"--git-dir=" + dir}, args...)...)
}

// hostileEnv sets what the orchestrator's environment may hold: secrets,
// and git variables that would redirect or run things.
func (a *attack) hostileEnv(t *testing.T, elsewhere string) {
	t.Helper()
	for k, v := range map[string]string{
		"OPENAI_API_KEY": "sk-planted-secret", "AWS_SECRET_ACCESS_KEY": "aws-planted-secret",
		"GIT_EXTERNAL_DIFF": a.prog, "GIT_SSH_COMMAND": a.prog, "GIT_PAGER": a.prog, "GIT_EDITOR": a.prog,
		"GIT_ASKPASS": a.prog, "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.fsmonitor", "GIT_CONFIG_VALUE_0": a.prog,
		"GIT_CONFIG_PARAMETERS": "'core.fsmonitor'='" + a.prog + "'", "GIT_DIR": elsewhere, "GIT_WORK_TREE": elsewhere,
	} {
		t.Setenv(k, v)
	}
}

// evilRepo makes a repository at dir (an agent made it) whose config and
// attributes name the program, with a file git must hash through them.
func (a *attack) evilRepo(t *testing.T, dir string) {
	t.Helper()
	must(t, os.MkdirAll(dir, 0o755))
	sh(t, dir, "init", "-q", "-b", "main")
	write(t, dir, map[string]string{".gitattributes": attributes, "m.txt": "m\n"})
	sh(t, dir, "add", "-A")
	sh(t, dir, "commit", "-q", "-m", "evil")
	a.plantRepo(t, filepath.Join(dir, ".git"))
	// Its index is stale for m.txt: a status there hashes it, through the filter.
	future := time.Now().Add(time.Hour)
	write(t, dir, map[string]string{"m.txt": "n\n"}) // same size: only hashing tells
	must(t, os.Chtimes(filepath.Join(dir, "m.txt"), future, future))
}

// hostileWorkspace is a checkout whose repository names the program
// everywhere, with attributes naming the drivers, a submodule (checked
// out, its own repository planted and dirty) and an uncommitted edit.
func hostileWorkspace(t *testing.T, a *attack) string {
	t.Helper()
	root := newRepo(t, map[string]string{"f.go": funcs, "a.txt": "a\n", "d/x.txt": "x\n", ".gitignore": ".troupe/\n"})
	mod := filepath.Join(root, "mod")
	must(t, os.Mkdir(mod, 0o755))
	sh(t, mod, "init", "-q", "-b", "main")
	write(t, mod, map[string]string{"m.txt": "m\n"})
	sh(t, mod, "add", "-A")
	sh(t, mod, "commit", "-q", "-m", "mod")
	sh(t, root, "add", "mod")
	sh(t, root, "commit", "-q", "-m", "a submodule")
	a.plantRepo(t, filepath.Join(mod, ".git"))
	write(t, mod, map[string]string{".gitattributes": attributes, "m.txt": "n\n"}) // same size: only hashing tells
	future := time.Now().Add(time.Hour)
	must(t, os.Chtimes(filepath.Join(mod, "m.txt"), future, future))
	a.plantRepo(t, filepath.Join(root, ".git"))
	write(t, root, map[string]string{".gitattributes": attributes, "a.txt": "a, edited by the user\n"})
	return root
}

// Every operation on a workspace whose repository, attributes,
// submodule, worktrees and environment name a planted program (attacks
// 1 and 2 of issue 28): snapshot, worktree creation (by git, attributes
// being in the tree), capture (by git), a worktree whose .git file an
// agent rewrote to a repository it made, a nested repository it made,
// apply (merged file by file, with merge-file), branch, patch, a kept
// worktree's preparation and reuse, bundles, a store borrowing the
// checkout, prune and the workspace key: the program never runs and its
// environment dump never appears; nor in the next run on the same
// workspace. Then plain git, run as a user would, runs it: the plants
// are live.
func TestTroupesGitRunsNothingTheAgentChose(t *testing.T) {
	a := newAttack(t)
	root := hostileWorkspace(t, a)
	elsewhere := t.TempDir()
	a.evilRepo(t, elsewhere)
	a.hostileEnv(t, filepath.Join(elsewhere, ".git"))
	ctx := t.Context()

	r, err := Open(ctx, root, Options{KeepIdle: 2})
	a.ok(t, err)
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	snap, err := r.Snapshot(ctx)
	a.ok(t, err)
	a.none(t, "Open and Snapshot")
	if got := sh(t, root, "-c", "core.fsmonitor=false", "--git-dir="+r.home.dir, "show", snap.Commit+":a.txt"); got != "a, edited by the user" {
		t.Fatalf("the snapshot holds a.txt %q", got)
	}

	w, err := r.NewWorktree(ctx, snap, "w1")
	a.ok(t, err)
	if _, byGit := checkoutCounts(r); byGit != 1 {
		t.Fatalf("the worktree was not checked out by git (attributes are in its tree), so this test tests less")
	}
	a.none(t, "NewWorktree")
	// The agent: an edit, and its worktree's .git file pointing at a
	// repository it made there (ignored).
	write(t, w.Dir(), map[string]string{"f.go": strings.Replace(funcs, "return 2", "return 20", 1), "new.txt": "new\n",
		".gitignore": ".troupe/\nownrepo/\n"})
	a.evilRepo(t, filepath.Join(w.Dir(), "ownrepo"))
	must(t, os.WriteFile(filepath.Join(w.Dir(), ".git"), []byte("gitdir: "+filepath.Join(w.Dir(), "ownrepo", ".git")+"\n"), 0o644))
	// Another agent: a nested repository of its own, which git add would
	// take for a submodule (the merge leaves those to the user).
	nested, err := r.NewWorktree(ctx, snap, "nested")
	a.ok(t, err)
	a.evilRepo(t, filepath.Join(nested.Dir(), "nest"))
	ncs, err := nested.Capture(ctx)
	a.ok(t, err)
	nout, err := r.Apply(ctx, snap, ncs, ModeApply, "run1", "nested")
	a.ok(t, err)
	if nout.Status != messages.ChangeStatusConflict || !strings.Contains(nout.Reason, "nest is a repository of its own") {
		t.Errorf("a nested repository's changeset: %+v", nout)
	}
	a.ok(t, nested.Remove(ctx))
	cs, err := w.Capture(ctx)
	a.ok(t, err)
	a.none(t, "Capture")
	if w.captured != "git" {
		t.Errorf("captured by %s: attributes in the tree leave it to git", w.captured)
	}
	var files []string
	for _, f := range cs.Files {
		files = append(files, f.Path)
	}
	if !slices.Contains(files, "f.go") || !slices.Contains(files, "new.txt") {
		t.Fatalf("captured %v", files)
	}

	// The user edits f.go meanwhile, elsewhere in the file: a real
	// three-way merge (git merge-file) brings both in.
	write(t, root, map[string]string{"f.go": strings.Replace(funcs, "return 1", "return 10", 1)})
	out, err := r.Apply(ctx, snap, cs, ModeApply, "run1", "w1")
	a.ok(t, err)
	if out.Status != messages.ChangeStatusApplied || !strings.Contains(read(t, root, "f.go"), "return 10") ||
		!strings.Contains(read(t, root, "f.go"), "return 20") {
		t.Fatalf("apply: %+v; f.go:\n%s", out, read(t, root, "f.go"))
	}
	for _, mode := range []Mode{ModeBranch, ModePatch} {
		_, err := r.Apply(ctx, snap, cs, mode, "run1", "w1-"+string(mode))
		a.ok(t, err)
	}
	a.none(t, "Apply, branch and patch")

	a.ok(t, w.Remove(ctx)) // kept: prepared in the background for the next agent
	waitIdle(t, r)
	w2, err := r.NewWorktree(ctx, snap, "w2")
	a.ok(t, err)
	if w2.Dir() != w.Dir() && w2.Dir() != nested.Dir() {
		t.Errorf("not reused: %s", w2.Dir())
	}
	a.ok(t, w2.Remove(ctx))
	waitIdle(t, r)
	a.none(t, "reuse")

	bundle, err := r.Bundle(ctx, snap, true)
	a.ok(t, err)
	defer bundle.Remove()
	store, err := OpenStore(ctx, filepath.Join(t.TempDir(), "node"), root, 0)
	a.ok(t, err)
	a.ok(t, store.Unbundle(ctx, bundle))
	sw, err := store.NewWorktree(ctx, snap, "remote")
	a.ok(t, err)
	write(t, sw.Dir(), map[string]string{"remote.txt": "r\n"})
	_, err = sw.Capture(ctx)
	a.ok(t, err)
	a.ok(t, sw.Remove(ctx))
	if roots, err := RootCommits(ctx, root); a.ran(t) != nil || err != nil || len(roots) != 1 {
		t.Fatalf("root commits %v: %v", roots, err)
	}
	a.ok(t, r.Prune(ctx))
	a.none(t, "bundles, a store and prune")

	// The next run on the same workspace: everything planted is still
	// there (and the changes the first run merged), and still inert.
	next, err := Open(ctx, root, Options{})
	a.ok(t, err)
	t.Cleanup(func() { _ = next.Close(context.Background()) })
	snap2, err := next.Snapshot(ctx)
	a.ok(t, err)
	w3, err := next.NewWorktree(ctx, snap2, "next")
	a.ok(t, err)
	write(t, w3.Dir(), map[string]string{"d/x.txt": "next run\n"})
	cs3, err := w3.Capture(ctx)
	a.ok(t, err)
	out3, err := next.Apply(ctx, snap2, cs3, ModeApply, "run2", "next")
	a.ok(t, err)
	a.ok(t, w3.Remove(ctx))
	if out3.Status != messages.ChangeStatusApplied || read(t, root, "d/x.txt") != "next run\n" {
		t.Fatalf("the next run: %+v", out3)
	}

	// Git as a user runs it: the plants run. (Each would; one is enough
	// to show this test's plants are live.)
	for _, dir := range []string{root, filepath.Join(root, "mod")} {
		cmd := exec.Command("git", "status", "--porcelain")
		cmd.Dir = dir
		cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GIT_") })
		_ = cmd.Run()
		if len(a.ran(t)) == 0 {
			t.Fatalf("plain git status in %s ran nothing: the plants are not live", dir)
		}
		must(t, os.RemoveAll(a.markers))
		must(t, os.Mkdir(a.markers, 0o755))
	}
}

// The planted program, once the protection is gone, would have seen the
// orchestrator's secrets: troupe's git gets PATH, HOME, LANG, LC_*, TZ
// and its own GIT_ variables only.
func TestTroupesGitEnvironmentIsAllowListed(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-planted-secret")
	t.Setenv("GIT_DIR", "/elsewhere")
	t.Setenv("GIT_EXEC_PATH", "/elsewhere")
	t.Setenv("LD_PRELOAD_TROUPE_TEST", "x")
	t.Setenv("LC_ALL", "C")
	t.Setenv("PATH", "relative/bin"+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd, err := (git{gitDir: "/home-dir", workTree: "/work"}).command(t.Context(), "status")
	must(t, err)
	var names []string
	for _, kv := range cmd.Env {
		name, val, _ := strings.Cut(kv, "=")
		names = append(names, name)
		if strings.Contains(val, "planted") || strings.Contains(val, "elsewhere") || strings.Contains(val, "relative/bin") {
			t.Errorf("%s reached git", kv)
		}
		if !(name == "PATH" || name == "HOME" || name == "LANG" || name == "TZ" || strings.HasPrefix(name, "LC_") ||
			strings.HasPrefix(name, "GIT_")) {
			t.Errorf("%s reached git", name)
		}
	}
	for _, want := range []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL", "LC_ALL"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s not set; env %v", want, names)
		}
	}
	if _, err := (git{}).command(t.Context(), "status"); err == nil {
		t.Error("a git command without a git directory was built")
	}
}
