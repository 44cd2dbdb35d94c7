package applypatch

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// linkRig is a workspace with links rel and abs to its folder real and a
// link out to a folder outside it.
func linkRig(t *testing.T) (root, outside string, run func(patch string) (string, bool)) {
	t.Helper()
	s := newTestSession(t)
	root, outside = s.Workspace.Root(), t.TempDir()
	writeFile(t, s, "real/f.txt", "needle one\n")
	for link, target := range map[string]string{"rel": "real", "abs": filepath.Join(root, "real"), "out": outside} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	return root, outside, func(patch string) (string, bool) {
		r := runPatch(t, s, patch)
		return r.Text, !r.IsError
	}
}

// apply_patch follows links that stay in the workspace, naming the real
// path, and refuses one that leads out, writing nothing there (these were
// apply_patch's rows of TestSymlinksInsideAndOut in package tools).
func TestApplyPatchThroughLinks(t *testing.T) {
	_, outside, run := linkRig(t)
	for _, link := range []string{"rel", "abs"} {
		text, ok := run("*** Begin Patch\n*** Update File: " + link + "/f.txt\n@@\n-needle one\n+needle one\n*** Add File: " + link + "/p-" + link + ".txt\n+p\n*** End Patch")
		if want := "real/p-" + link + ".txt"; !ok || !strings.Contains(text, want) {
			t.Errorf("through %s: %q, want %q", link, text, want)
		}
	}
	if text, ok := run("*** Begin Patch\n*** Add File: out/new.txt\n+x\n*** End Patch"); ok || !strings.Contains(text, "path is outside the workspace") {
		t.Errorf("through a link out: %q, want the outside-the-workspace error", text)
	}
	if entries, err := os.ReadDir(outside); err != nil || len(entries) != 0 {
		t.Errorf("outside folder holds %v, %v", entries, err)
	}
}

// Files whose names take 233 to 255 bytes can be added and updated: the
// temporary file beside them has a short name of its own (apply_patch's
// rows of TestWriteLongFileNames in package tools).
func TestApplyPatchLongFileNames(t *testing.T) {
	s := newTestSession(t)
	for n := 233; n <= 255; n++ {
		prefix := fmt.Sprintf("p-%d-", n)
		p := prefix + strings.Repeat("n", n-len(prefix)-len(".txt")) + ".txt"
		for _, patch := range []string{
			"*** Begin Patch\n*** Add File: long/" + p + "\n+one\n*** End Patch",
			"*** Begin Patch\n*** Update File: long/" + p + "\n@@\n-one\n+two\n*** End Patch",
		} {
			if r := runPatch(t, s, patch); r.IsError {
				t.Fatalf("%d bytes: %s", n, r.Text)
			}
		}
		if got := patchFile(t, s, "long/"+p); got != "two\n" {
			t.Errorf("%d bytes: holds %q, want \"two\\n\"", n, got)
		}
	}
	entries, err := os.ReadDir(filepath.Join(s.Workspace.Root(), "long"))
	if err != nil {
		t.Fatal(err)
	}
	if want := 255 - 233 + 1; len(entries) != want {
		t.Errorf("long/ holds %d entries, want %d (a temporary file left behind?)", len(entries), want)
	}
}

// FuzzApplyPatchPath gives arbitrary paths to apply_patch's Add File over
// a workspace with links in and out: nothing outside is created, and no
// call returns a Go error (apply_patch's part of FuzzWorkspacePath in
// package tools). OUT stands for the outside folder's absolute path.
func FuzzApplyPatchPath(f *testing.F) {
	for _, seed := range []string{"a.txt", "rel/a.txt", "abs/new.txt", "out/a.txt", "out", "..", "../x",
		"/etc/passwd", "OUT/a.txt", "rel/../../x", "new/dir/file.txt", "a\x00b", "real/f.txt/x"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if strings.ContainsAny(p, "\n\r") {
			return
		}
		_, outside, run := linkRig(t)
		p = strings.ReplaceAll(p, "OUT", outside)
		run("*** Begin Patch\n*** Add File: " + p + ".p\n+fuzz\n*** End Patch")
		if entries, err := os.ReadDir(outside); err != nil || len(entries) != 0 {
			t.Fatalf("path %q: outside folder holds %v, %v", p, entries, err)
		}
	})
}
