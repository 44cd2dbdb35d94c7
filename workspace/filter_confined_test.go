package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/messages"
)

// revLines is s with each line's characters reversed (what rev does):
// the "on-disk" form of the test's filter, its own inverse.
func revLines(s string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		body := strings.TrimSuffix(l, "\n")
		r := []rune(body)
		for a, b := 0, len(r)-1; a < b; a, b = a+1, b-1 {
			r[a], r[b] = r[b], r[a]
		}
		lines[i] = string(r) + l[len(body):]
	}
	return strings.Join(lines, "")
}

// filterCase is a workspace whose f.rev goes through the filter rev of
// the user's global config (a real script in the user's HOME, a temp
// directory: clean and smudge reverse each line), checked out as git
// would (the smudged form on disk); the worker edits line two of the
// form it sees, the user line five of theirs.
type filterCase struct {
	root, home string
	r          *Repo
	out        Outcome
}

// newFilterCase makes a filterCase, the repository's own config
// defining what repoConf says (an agent could have written it), and
// applies the worker's changes.
func newFilterCase(t *testing.T, repoConf map[string]string) filterCase {
	t.Helper()
	home := t.TempDir()
	// The filter tries what a compromised filter would, then does its job:
	// a write outside its TMPDIR and a read of a key would show in its
	// output or leave a file.
	script := filepath.Join(home, "revfilter.sh")
	must(t, os.WriteFile(script, []byte("#!/bin/sh\n"+
		"echo escaped > \"$HOME/escaped-$1\" 2>/dev/null\n"+
		"cat \"$HOME/.ssh/id_test\" 2>/dev/null\n"+
		"echo ran > \"$TMPDIR/ran\" || echo NO-TMPDIR\n"+
		"exec rev\n"), 0o755))
	return newFilterCaseConf(t, home, "[filter \"rev\"]\n\tclean = "+script+" clean %f\n\tsmudge = "+script+" smudge %f\n\trequired\n",
		map[string]string{"filter.rev.smudge": "rev", "filter.rev.clean": "rev"}, repoConf)
}

// newFilterCaseConf is newFilterCase with the user's HOME at home, its
// global config global, the user's checkout made with the filter
// settings checkout (rev, run by the user's git).
func newFilterCaseConf(t *testing.T, home, global string, checkout, repoConf map[string]string) filterCase {
	t.Helper()
	c := filterCase{home: home}
	t.Setenv("HOME", c.home)
	userGlobalConfig(t, global)
	c.root = newRepo(t, map[string]string{".gitattributes": "*.rev filter=rev\n", "f.rev": seven, ".troupe/.gitignore": "*\n"})
	checkoutFilteredWith(t, c.root, checkout)
	// The user's key, there once the user's own checkout is done.
	must(t, os.MkdirAll(filepath.Join(c.home, ".ssh"), 0o700))
	must(t, os.WriteFile(filepath.Join(c.home, ".ssh", "id_test"), []byte("SECRET KEY\n"), 0o600))
	_ = os.Remove(filepath.Join(c.home, "escaped-process")) // the user's git ran it unconfined
	for k, v := range repoConf {
		sh(t, c.root, "config", k, v)
	}
	var snap Snapshot
	c.r, snap = openSnap(t, c.root)
	w, err := c.r.NewWorktree(t.Context(), snap, "w")
	must(t, err)
	// The worker sees the file as the user does, smudged, and edits that.
	seen := read(t, w.Root(), "f.rev")
	if seen != revLines(seven) {
		t.Errorf("the worktree's f.rev = %q, want its smudged form %q", seen, revLines(seven))
	}
	write(t, w.Root(), map[string]string{"f.rev": strings.Replace(seen, "owt", "OWT", 1)})
	cs, err := w.Capture(t.Context())
	must(t, err)
	must(t, w.Remove(t.Context()))
	write(t, c.root, map[string]string{"f.rev": revLines(strings.Replace(seven, "five", "FIVE", 1))})
	c.out, err = c.r.Apply(t.Context(), snap, cs, ModeApply, "run1", "w")
	if err != nil {
		t.Fatalf("apply: %+v %v", c.out, err)
	}
	return c
}

// checkoutFiltered checks f.rev out at root as the user's git does, with
// the filter (rev itself, run by the user's git) (smudged, the index knowing its stat, from a minute ago so
// it is not racily clean), then leaves the filter defined in the user's
// global config only.
func checkoutFiltered(t *testing.T, root string) {
	t.Helper()
	checkoutFilteredWith(t, root, map[string]string{"filter.rev.smudge": "rev", "filter.rev.clean": "rev"})
}

// checkoutFilteredWith is checkoutFiltered with the filter settings conf.
func checkoutFilteredWith(t *testing.T, root string, conf map[string]string) {
	t.Helper()
	for k, v := range conf {
		sh(t, root, "config", k, v)
	}
	must(t, os.Remove(filepath.Join(root, "f.rev")))
	sh(t, root, "checkout", "--", "f.rev")
	if got := read(t, root, "f.rev"); got != revLines(seven) {
		t.Fatalf("checked out with the filter: %q", got)
	}
	past := time.Now().Add(-time.Minute)
	must(t, os.Chtimes(filepath.Join(root, "f.rev"), past, past))
	sh(t, root, "update-index", "--refresh")
	sh(t, root, "config", "--remove-section", "filter.rev")
	if st := sh(t, root, "status", "--porcelain"); st != "" {
		t.Fatalf("git status after the checkout: %s", st)
	}
}

// check checks that the edit landed in the file's on-disk form and the
// filter stayed in its sandbox: nothing written outside its TMPDIR, the
// key unread.
func (c filterCase) check(t *testing.T) {
	t.Helper()
	if c.out.Status != messages.ChangeStatusApplied {
		t.Fatalf("outcome %+v", c.out)
	}
	want := revLines(strings.Replace(strings.Replace(seven, "two", "TWO", 1), "five", "FIVE", 1))
	if got := read(t, c.root, "f.rev"); got != want {
		t.Errorf("f.rev on disk = %q, want %q (both edits, in the filter's form)", got, want)
	}
	names, _ := filepath.Glob(filepath.Join(c.home, "escaped-*"))
	if len(names) != 0 {
		t.Errorf("the filter wrote outside its sandbox: %v", names)
	}
}

// The user's global clean/smudge filter runs, in the sandbox: a worker's
// one-line edit merges with the user's and the file keeps its on-disk
// (smudged) form; the filter could neither write outside its TMPDIR nor
// read the user's keys (either would show in the file).
func TestLandRunsTheUsersFilterConfined(t *testing.T) {
	needSandbox(t)
	c := newFilterCase(t, nil)
	c.check(t)
	if got := read(t, c.root, "f.rev"); strings.Contains(got, "SECRET") || strings.Contains(got, "NO-TMPDIR") {
		t.Errorf("f.rev = %q", got)
	}
}

// Issue 28, attack 1, with a filter troupe runs: the repository's own
// config (agent-writable) redefines the user's filter rev and adds one
// of its own; only the user's commands run, confined, and the
// repository's never: not at the worktree's checkout (through the
// filter), its capture or the land.
func TestLandRunsOnlyTheUsersFilterCommands(t *testing.T) {
	needSandbox(t)
	marks := t.TempDir()
	evil := func(what string) string {
		return "touch " + filepath.Join(marks, what) + "; cat"
	}
	c := newFilterCase(t, map[string]string{"filter.rev.clean": evil("repo-clean"), "filter.rev.smudge": evil("repo-smudge"),
		"filter.rev.process": evil("repo-process"), "filter.evil.clean": evil("evil-clean")})
	c.check(t)
	if names, _ := os.ReadDir(marks); len(names) != 0 {
		t.Errorf("the repository's filter commands ran: %v", names)
	}
}

// needSandbox skips (fails in CI) where the sandbox a filter runs in
// cannot be enforced.
func needSandbox(t *testing.T) {
	t.Helper()
	if why := filterUnsupported(); why != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the sandbox cannot be enforced: %s", why)
		}
		t.Skip("the sandbox cannot be enforced: " + why)
	}
}

// A filtered file the user had changed when the snapshot was taken is
// held by the snapshot as it was on disk, not in git's clean form: it
// cannot be merged through the filter, so it conflicts with a reason
// and nothing is written.
func TestLandRefusesAFilteredFileChangedBeforeTheSnapshot(t *testing.T) {
	needSandbox(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	script := filepath.Join(home, "revfilter.sh")
	must(t, os.WriteFile(script, []byte("#!/bin/sh\nexec rev\n"), 0o755))
	userGlobalConfig(t, "[filter \"rev\"]\n\tclean = "+script+"\n\tsmudge = "+script+"\n")
	root := newRepo(t, map[string]string{".gitattributes": "*.rev filter=rev\n", "f.rev": seven, ".troupe/.gitignore": "*\n"})
	checkoutFiltered(t, root)
	changed := revLines(strings.Replace(seven, "one", "ONE", 1))
	write(t, root, map[string]string{"f.rev": changed})
	r, snap := openSnap(t, root)
	w, err := r.NewWorktree(t.Context(), snap, "w")
	must(t, err)
	seen := read(t, w.Root(), "f.rev")
	write(t, w.Root(), map[string]string{"f.rev": seen + "added\n"})
	cs, err := w.Capture(t.Context())
	must(t, err)
	must(t, w.Remove(t.Context()))
	out, err := r.Apply(t.Context(), snap, cs, ModeApply, "run1", "w")
	if err != nil || out.Status != messages.ChangeStatusConflict || !strings.Contains(out.Reason, "was changed in the workspace when the snapshot was taken") {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	if got := read(t, root, "f.rev"); got != changed {
		t.Errorf("f.rev = %q, want the user's %q", got, changed)
	}
}
