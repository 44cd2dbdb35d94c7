package ignore

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestDirAgreesWithMatch checks, on every tree of the git cases, that
// matching an entry through its directory's Dir (primed from a listing,
// as a walker does) gives what Match gives for its full path.
func TestDirAgreesWithMatch(t *testing.T) {
	t.Parallel()
	for _, tc := range gitCases {
		root := writeTree(t, tc.files)
		if err := os.MkdirAll(filepath.Join(root, ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
		primed, plain := NewMatcher(root), NewMatcher(root)
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			ents, err := os.ReadDir(p)
			if err != nil {
				return err
			}
			var pr Presence
			for _, e := range ents {
				switch e.Name() {
				case ".gitignore":
					pr.Gitignore = true
				case ".ignore":
					pr.Ignore = true
				case ".git":
					pr.Git = true
				}
			}
			primed.Prime(p, pr)
			dir := primed.Dir(p)
			for _, e := range ents {
				full := filepath.Join(p, e.Name())
				if got, want := dir.Match(e.Name(), e.IsDir()), plain.Match(full, e.IsDir()); got != want {
					t.Errorf("%s: %s: Dir.Match = %v, Match = %v", tc.name, full[len(root):], got, want)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestDirOutsideRoot(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{".gitignore": "*\n"})
	if NewMatcher(root).Dir(filepath.Dir(root)).Match("x", false) {
		t.Error("a directory outside the root got the root's rules")
	}
}
