package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// bigKillSize is the size of the big files of a bigLandCase: just over
// the threshold above which a file is merged by object IDs and streams
// (mergeInMemory) and a changeset's land journals its trees rather than
// a patch (packOver).
const bigKillSize = 8<<20 + 4096

// bigText is n bytes of lines naming tag: contents unique to tag that
// compress well (the object store stays small).
func bigText(tag string, n int) string {
	var b strings.Builder
	b.Grow(n + 64)
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%s line %07d\n", tag, i)
	}
	return b.String()[:n]
}

// sum is the SHA-256 of s, in hex.
func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// newBigLandCase is a landCase whose changeset carries big files and no
// patch (CaptureTree): a tracked big file modified, a big one deleted,
// a new big one in a new directory, and small files modified, added
// and deleted. before and after hold the files' sums.
func newBigLandCase(t *testing.T) landCase {
	t.Helper()
	if os.Getenv(TestWorktreesEnv) == WorktreesOverlay {
		// tests/run.sh runs the suite again with overlays: a land does
		// not depend on the worktree kind, and these cost seconds each.
		t.Skip("a land's kill points are tested with the suite's default worktrees")
	}
	c := landCase{root: newRepo(t, map[string]string{
		"a.txt": "a\n", "big.bin": bigText("base", bigKillSize), "gone.bin": bigText("gone", bigKillSize),
		"keep.txt": "keep\n", "z.txt": "z\n",
	})}
	write(t, c.root, map[string]string{".troupe/.gitignore": "*\n"})
	c.r, c.snap = openSnap(t, c.root)
	w, err := c.r.NewWorktree(t.Context(), c.snap, "w")
	must(t, err)
	base := bigText("base", bigKillSize)
	edited := base[:bigKillSize/2] + "the agent's line\n" + base[bigKillSize/2:] // a diff git makes quickly
	agent := map[string]string{"a.txt": "a2\n", "big.bin": edited,
		"n/new.bin": bigText("new", bigKillSize), "n/s.txt": "s\n"}
	write(t, w.Root(), agent)
	must(t, os.Remove(filepath.Join(w.Root(), "gone.bin")))
	must(t, os.Remove(filepath.Join(w.Root(), "z.txt")))
	c.cs, err = w.CaptureTree(t.Context())
	must(t, err)
	must(t, w.Remove(t.Context()))
	if len(c.cs.Files) != 6 || len(c.cs.Patch) != 0 || c.cs.Tree == "" {
		t.Fatalf("changeset: %d files %v, %d patch bytes, tree %q", len(c.cs.Files), c.cs.Files, len(c.cs.Patch), c.cs.Tree)
	}
	if !c.r.bigLand(t.Context(), c.snap.Tree, c.cs.Tree) {
		t.Fatal("the changeset is not a big land: its journal would carry a patch")
	}
	c.before = diskSums(t, c.root)
	c.after = map[string]string{"keep.txt": sum("keep\n"), "n": "<dir>"}
	for p, s := range agent {
		c.after[p] = sum(s)
	}
	patch := filepath.Join(t.TempDir(), "cs.patch")
	f, err := os.Create(patch)
	must(t, err)
	must(t, c.r.writeDiff(t.Context(), c.snap.Tree, c.cs.Tree, f))
	must(t, f.Close())
	c.checkPatchGives(t, patch)
	c.patchSum = fileSum(t, patch)
	return c
}

// diskSums is diskFiles with each file's SHA-256 for its contents.
func diskSums(t *testing.T, root string) map[string]string {
	t.Helper()
	files := map[string]string{}
	must(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case rel == ".":
		case (rel == ".git" || rel == ".troupe") && d.IsDir():
			return filepath.SkipDir
		case rel == ".git" || rel == ".troupe": // a worktree's .git file
		case d.IsDir():
			files[filepath.ToSlash(rel)] = "<dir>"
		default:
			files[filepath.ToSlash(rel)] = fileSum(t, p)
		}
		return nil
	}))
	return files
}

// bigKill is a point a land of a bigLandCase is killed at: a land step
// (landHook) or an fsync (syncHook, by prefix), and whether the land
// was then done.
type bigKill struct {
	name, step string
	n          int
	sync       string
	all        bool
}

// bigKills are the interesting points of a land of a bigLandCase's six
// files (a.txt, big.bin, gone.bin, n/new.bin, n/s.txt, z.txt).
func bigKills() []bigKill {
	k := []bigKill{
		{name: "journal_written", sync: "journal *.json"},
		{name: "planned", step: landPlanned},
		{name: "new_contents_written", sync: "file *"},
		{name: "prepared", step: "prepared"},
		{name: "marking_committing", sync: "marker " + landCommitting},
	}
	for n := 1; n <= 6; n++ {
		k = append(k, bigKill{name: "renamed_" + strconv.Itoa(n), step: "renamed", n: n})
	}
	return append(k, bigKill{name: "marking_done", sync: "marker " + landDone, all: true},
		bigKill{name: "done", step: landDone, n: 6, all: true})
}

// A land of big files (a changeset without a patch, journaled as its
// trees) killed with SIGKILL at each interesting point leaves, once
// the workspace is opened again, all of its files or none, byte-exact,
// with the patch kept when none (git's diff of the journaled trees,
// which applies to the snapshot and gives the agent's files exactly).
// One case serves every kill point (the workspace put back as before
// between them): its big files cost seconds to make.
func TestBigLandKilledMidway(t *testing.T) {
	c := newBigLandCase(t)
	for _, k := range bigKills() {
		t.Run(k.name, func(t *testing.T) {
			c.reset(t)
			killChild(t, landChild{Root: c.root, Snap: c.snap, CS: c.cs, Step: k.step, N: k.n, Sync: k.sync})
			c.checkBigJournal(t)
			if k.step == "renamed" && maps.Equal(diskSums(t, c.root), c.before) {
				t.Fatalf("killed after %d renames, the tree is as before: the kill point was not reached", k.n)
			}
			c.checkRecovered(t, k.all)
		})
	}
}

// A recovery killed itself (SIGKILL, in a child) after putting back
// each of the files of a big land killed after four renames, and after
// keeping its patch, is finished by the next process's Open: none of
// the files, the patch kept.
func TestBigLandRecoveryKilled(t *testing.T) {
	points := []bigKill{{name: "keeping_the_patch", sync: "patch *"}, {name: "kept", step: "kept"}}
	for n := 1; n <= 6; n++ {
		points = append(points, bigKill{name: "undone_" + strconv.Itoa(n), step: "undone", n: n})
	}
	c := newBigLandCase(t)
	for _, k := range points {
		t.Run(k.name, func(t *testing.T) {
			c.reset(t)
			killChild(t, landChild{Root: c.root, Snap: c.snap, CS: c.cs, Step: "renamed", N: 4})
			killChild(t, landChild{Root: c.root, Step: k.step, N: k.n, Sync: k.sync, Recover: true})
			c.checkBigJournal(t)
			c.checkRecovered(t, false)
		})
	}
}

// reset puts the workspace back as it was before the land (git's reset
// and clean, the user's ignored files kept) and removes the patches
// kept, for the next kill point.
func (c landCase) reset(t *testing.T) {
	t.Helper()
	sh(t, c.root, "reset", "-q", "--hard")
	sh(t, c.root, "clean", "-q", "-fd")
	must(t, os.RemoveAll(filepath.Join(c.root, ".troupe", "runs")))
	if got := diskSums(t, c.root); !maps.Equal(got, c.before) {
		t.Fatalf("the workspace, reset, holds %v, want %v", got, c.before)
	}
}

// checkBigJournal checks that the killed land left one journal, naming
// its trees and holding no patch (a big land's).
func (c landCase) checkBigJournal(t *testing.T) {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(c.r.home.dir, "land", "*.json"))
	if len(names) != 1 {
		t.Fatalf("journals of the killed land: %v", names)
	}
	data, err := os.ReadFile(names[0])
	must(t, err)
	var j landJournal
	must(t, json.Unmarshal(data, &j))
	if j.Base != c.snap.Tree || j.Theirs != c.cs.Tree {
		t.Errorf("the journal names trees %q %q, want the snapshot's and the changeset's", j.Base, j.Theirs)
	}
	if st, err := os.Stat(strings.TrimSuffix(names[0], ".json") + ".patch"); err == nil && st.Size() != 0 {
		t.Errorf("a big land's journal holds a %d-byte patch", st.Size())
	}
}

// checkRecovered opens the workspace (the next run, which recovers the
// killed land) and checks it holds all of the changeset (all) or none,
// byte-exact, with its patch kept when none and nothing of the land's
// left.
func (c landCase) checkRecovered(t *testing.T, all bool) {
	t.Helper()
	r := open(t, c.root)
	defer r.Close(t.Context())
	want := c.before
	if all {
		want = c.after
	}
	if got := diskSums(t, c.root); !maps.Equal(got, want) {
		t.Errorf("after the next Open the workspace holds %v, want %v", got, want)
	}
	kept := filepath.Join(c.root, ".troupe", "runs", "run1", "changes", "w.patch")
	if _, err := os.Stat(kept); (err == nil) == all {
		t.Fatalf("patch kept: %v, want %v", err == nil, !all)
	}
	if !all {
		c.checkPatchIs(t, kept)
	}
	if names, _ := os.ReadDir(filepath.Join(c.r.home.dir, "land")); len(names) != 0 {
		t.Errorf("journal left: %v", names)
	}
	changes, _ := os.ReadDir(filepath.Dir(kept))
	for _, e := range changes {
		if e.Name() != "w.patch" {
			t.Errorf("left in the patches' directory: %s", e.Name())
		}
	}
	if st := sh(t, c.root, "status", "--porcelain"); !all && st != "" {
		t.Errorf("git status after recovery:\n%s", st)
	}
}

// checkPatchIs checks that the patch at path is git's diff of the
// snapshot's tree and the changeset's, which checkPatchGives showed
// gives the changeset's files.
func (c landCase) checkPatchIs(t *testing.T, path string) {
	t.Helper()
	if got := fileSum(t, path); got != c.patchSum {
		t.Errorf("the kept patch (sum %s) is not the changeset's (%s)", got, c.patchSum)
	}
}

// checkPatchGives checks that the patch at path applies to the
// snapshot and gives the changeset's files, byte-exact.
func (c landCase) checkPatchGives(t *testing.T, path string) {
	t.Helper()
	w, err := c.r.NewWorktree(t.Context(), c.snap, "check")
	must(t, err)
	defer w.Remove(t.Context())
	sh(t, w.Dir(), "apply", path)
	got := diskSums(t, w.Dir())
	want := maps.Clone(c.after)
	maps.DeleteFunc(got, func(p, v string) bool { return v == "<dir>" || slices.Contains([]string{".troupe", ".gitignore"}, p) })
	maps.DeleteFunc(want, func(_, v string) bool { return v == "<dir>" })
	if !maps.Equal(got, want) {
		t.Errorf("the kept patch gives %v, want %v", got, want)
	}
}
