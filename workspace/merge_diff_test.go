package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/messages"
)

// genText is a text file of n lines of words drawn by rnd, ending in
// eol.
func genText(rnd *rand.Rand, n int, eol string) []byte {
	words := []string{"alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta"}
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%d %s %s%s", i, words[rnd.IntN(len(words))], words[rnd.IntN(len(words))], eol)
	}
	return []byte(b.String())
}

// genSide is one side's change of base, drawn by rnd: none, a line
// edited or added or removed (where in the file decides whether both
// sides' edits overlap), line endings turned to CRLF, the executable
// bit flipped, binary contents, a symlink, or the file deleted; an
// absent base is added, as text or binary, or stays absent.
func genSide(rnd *rand.Rand, base version) version {
	if !base.exists() {
		switch rnd.IntN(4) {
		case 0:
			return version{}
		case 1:
			return version{mode: "100644", data: []byte("\x00bin" + strconv.Itoa(rnd.IntN(3)))}
		default:
			return version{mode: "100644", data: genText(rnd, 3+rnd.IntN(2), "\n")}
		}
	}
	v := version{mode: base.mode, data: slices.Clone(base.data)}
	if !base.regular() {
		if rnd.IntN(2) == 0 {
			return v
		}
		return version{mode: "100644", data: []byte("was a link\n")}
	}
	lines := strings.SplitAfter(string(v.data), "\n")
	switch k := rnd.IntN(len(lines)); rnd.IntN(11) {
	case 0, 1:
		return v
	case 2, 3:
		lines[k] = "edited " + strconv.Itoa(rnd.IntN(2)) + " " + lines[k]
	case 4:
		lines = slices.Insert(lines, k, "inserted "+strconv.Itoa(rnd.IntN(2))+"\n")
	case 5:
		lines = slices.Delete(lines, k, k+1)
	case 6:
		return version{mode: v.mode, data: []byte(strings.ReplaceAll(string(v.data), "\n", "\r\n"))}
	case 7:
		v.mode = map[string]string{"100644": "100755", "100755": "100644"}[v.mode]
		return v
	case 8:
		return version{mode: v.mode, data: append([]byte("\x00\x01binary "+strconv.Itoa(rnd.IntN(2))), v.data...)}
	case 9:
		return version{mode: "120000", data: []byte("target-" + strconv.Itoa(rnd.IntN(2)))}
	default:
		return version{}
	}
	v.data = []byte(strings.Join(lines, ""))
	return v
}

// genCases draws n cases with seed: paths f<i>.txt at the top and in
// d/, each with a base (a text file of LF or CRLF lines, sometimes
// executable, binary, a symlink, or absent) and two sides of it.
func genCases(seed uint64, n int) []mergeCase {
	rnd := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var cases []mergeCase
	for i := range n {
		c := mergeCase{path: fmt.Sprintf("f%03d.txt", i)}
		if i%3 == 0 {
			c.path = "d/" + c.path
		}
		switch rnd.IntN(8) {
		case 0:
		case 1:
			c.base = version{mode: "100644", data: genText(rnd, 6, "\r\n")}
		case 2:
			c.base = version{mode: "100755", data: genText(rnd, 6, "\n")}
		case 3:
			c.base = version{mode: "100644", data: []byte("\x00\x02base binary")}
		case 4:
			c.base = version{mode: "120000", data: []byte("target-base")}
		default:
			c.base = version{mode: "100644", data: genText(rnd, 8, "\n")}
		}
		c.ours, c.theirs = genSide(rnd, c.base), genSide(rnd, c.base)
		cases = append(cases, c)
	}
	return cases
}

// putVersions makes the tree at root hold side which (base, ours or
// theirs) of each case: the file written (mode and symlinks too) at the
// side's path, the case's path and the side's removed.
func putVersions(t *testing.T, root string, cases []mergeCase, which string) {
	t.Helper()
	for _, c := range cases {
		p, v := c.side(which)
		for _, q := range []string{c.path, p} {
			if err := os.Remove(filepath.Join(root, filepath.FromSlash(q))); err != nil && !errors.Is(err, fs.ErrNotExist) {
				t.Fatal(err)
			}
		}
		if !v.exists() {
			continue
		}
		abs := filepath.Join(root, filepath.FromSlash(p))
		must(t, os.MkdirAll(filepath.Dir(abs), 0o755))
		if v.mode == "120000" {
			must(t, os.Symlink(string(v.data), abs))
			continue
		}
		perm := os.FileMode(0o644)
		if v.mode == "100755" {
			perm = 0o755
		}
		must(t, os.WriteFile(abs, v.data, perm))
		must(t, os.Chmod(abs, perm))
	}
}

// onDisk is the mode and blob ID of path in the tree at root (absent:
// ok false).
func onDisk(t *testing.T, root, path string) ([2]string, bool) {
	t.Helper()
	abs := filepath.Join(root, filepath.FromSlash(path))
	st, err := os.Lstat(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return [2]string{}, false
	}
	must(t, err)
	if st.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(abs)
		must(t, err)
		return [2]string{"120000", blobID([]byte(target))}, true
	}
	data, err := os.ReadFile(abs)
	must(t, err)
	mode := "100644"
	if st.Mode()&0o111 != 0 {
		mode = "100755"
	}
	return [2]string{mode, blobID(data)}, true
}

// goMerge runs the Go merge end to end on cases: a workspace holding
// the bases (committed), a worker's worktree of its snapshot writing
// theirs (captured), then the user's edits (ours) in the workspace, and
// Apply. It returns the outcome and the workspace's root.
func goMerge(t *testing.T, cases []mergeCase) (Outcome, string) {
	t.Helper()
	root := newRepo(t, map[string]string{".troupe/.gitignore": "*\n", "keep": "k\n"})
	putVersions(t, root, cases, "base")
	sh(t, root, "add", "-A")
	sh(t, root, "commit", "-q", "-m", "base")
	r, snap := openSnap(t, root)
	w, err := r.NewWorktree(t.Context(), snap, "w")
	must(t, err)
	putVersions(t, w.Root(), cases, "theirs")
	cs, err := w.Capture(t.Context())
	must(t, err)
	must(t, w.Remove(context.Background()))
	putVersions(t, root, cases, "ours")
	out, err := r.Apply(t.Context(), snap, cs, ModeApply, "run1", "w")
	if err != nil {
		t.Fatalf("apply: %+v %v", out, err)
	}
	return out, root
}

// The Go merge agrees with git merge-tree --write-tree, path by path,
// on generated three-way cases (text edits that overlap or not, LF and
// CRLF, executable bits, binary files, symlinks, adds and deletes on
// either side or both): it conflicts exactly where git does, and where
// nothing conflicts the workspace holds exactly git's merged tree.
//
// "streamed" merges every file as a big one (mergeBig: by object IDs,
// contents streamed, git merge-file on files), held to the same answers.
func TestMergeAgreesWithGitMergeTree(t *testing.T) {
	needGit(t)
	for _, streamed := range []bool{false, true} {
		name := "in memory"
		if streamed {
			name = "streamed"
		}
		t.Run(name, func(t *testing.T) {
			if streamed {
				old := mergeInMemory
				mergeInMemory = -1
				t.Cleanup(func() { mergeInMemory = old })
			}
			mergeAgreesWithGit(t)
		})
	}
}

// mergeAgreesWithGit is TestMergeAgreesWithGitMergeTree's check, over 6 seeds.
func mergeAgreesWithGit(t *testing.T) {
	for seed := range uint64(6) {
		t.Run("seed"+strconv.FormatUint(seed, 10), func(t *testing.T) {
			cases := genCases(seed, 40)
			ref := gitMergeTree(t, t.TempDir(), cases)
			out, _ := goMerge(t, cases)
			goConflicts := map[string]bool{}
			for _, p := range out.Conflicts {
				goConflicts[p] = true
			}
			for _, c := range cases {
				if goConflicts[c.path] != ref.conflicts[c.path] {
					t.Errorf("%s: Go conflict %v, git %v\n  base   %s\n  ours   %s\n  theirs %s", c.path, goConflicts[c.path], ref.conflicts[c.path],
						c.base.describe(), c.ours.describe(), c.theirs.describe())
				}
			}
			// Again with theirs only where git merged cleanly: the Go merge
			// must then write exactly git's result.
			var clean []mergeCase
			want := map[string][2]string{}
			for _, c := range cases {
				if ref.conflicts[c.path] || goConflicts[c.path] {
					c.theirs = c.base // the workspace keeps ours
					if c.ours.exists() {
						want[c.path] = [2]string{c.ours.mode, blobID(c.ours.data)}
					}
				} else if r, ok := ref.result[c.path]; ok {
					want[c.path] = r
				}
				clean = append(clean, c)
			}
			out, root := goMerge(t, clean)
			if len(out.Files) > 0 && out.Status != messages.ChangeStatusApplied {
				t.Fatalf("the cleanly merging cases did not apply: %+v", out)
			}
			for _, c := range clean {
				got, ok := onDisk(t, root, c.path)
				want, wok := want[c.path]
				if ok != wok || got != want {
					t.Errorf("%s: the workspace holds %v (present %v), git merged %v (present %v)\n  base   %s\n  ours   %s\n  theirs %s", c.path, got, ok, want, wok,
						c.base.describe(), c.ours.describe(), c.theirs.describe())
				}
			}
		})
	}
}
