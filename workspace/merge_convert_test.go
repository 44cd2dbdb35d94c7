package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/messages"
)

// seven is a text file of seven lines, LF.
const seven = "one\ntwo\nthree\nfour\nfive\nsix\nseven\n"

// crlf is s with CRLF line ends.
func crlf(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }

// userGlobalConfig makes the user's global git config hold conf for
// the test (the file GIT_CONFIG_GLOBAL names).
func userGlobalConfig(t *testing.T, conf string) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "gitconfig")
	must(t, os.WriteFile(path, []byte(conf), 0o644))
	t.Setenv("GIT_CONFIG_GLOBAL", path)
	return dir
}

// Where git writes a file in another form than its blob, a worker's
// one-line edit lands cleanly, merged with the user's own edit of
// another line, and the file keeps its form on disk (CRLF); a new file
// lands as git would check it out (CRLF): with *.txt eol=crlf, and with
// text=auto and the user's global core.autocrlf=true.
func TestLandKeepsTheFormOnDisk(t *testing.T) {
	for _, tc := range []struct {
		name, attrs, global string
	}{
		{"eol=crlf", "*.txt eol=crlf\n", ""},
		{"text=auto with the user's core.autocrlf", "* text=auto\n", "[core]\n\tautocrlf = true\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			userGlobalConfig(t, tc.global)
			root := newRepo(t, map[string]string{".gitattributes": tc.attrs, "f.txt": seven, ".troupe/.gitignore": "*\n"})
			// The file as git checks it out for the user: CRLF.
			autocrlf := map[bool]string{true: "true", false: "false"}[tc.global != ""]
			must(t, os.Remove(filepath.Join(root, "f.txt")))
			sh(t, root, "-c", "core.autocrlf="+autocrlf, "checkout", "--", "f.txt")
			if got := read(t, root, "f.txt"); got != crlf(seven) {
				t.Fatalf("git checked out %q", got)
			}
			r, snap := openSnap(t, root)
			w, err := r.NewWorktree(t.Context(), snap, "w")
			must(t, err)
			write(t, w.Root(), map[string]string{
				"f.txt":   strings.Replace(read(t, w.Root(), "f.txt"), "two", "TWO", 1),
				"new.txt": "n1\nn2\n",
			})
			cs, err := w.Capture(t.Context())
			must(t, err)
			must(t, w.Remove(t.Context()))
			write(t, root, map[string]string{"f.txt": crlf(strings.Replace(seven, "five", "FIVE", 1))}) // the user's edit meanwhile
			out, err := r.Apply(t.Context(), snap, cs, ModeApply, "run1", "w")
			if err != nil || out.Status != messages.ChangeStatusApplied {
				t.Fatalf("outcome %+v, %v", out, err)
			}
			want := crlf(strings.Replace(strings.Replace(seven, "two", "TWO", 1), "five", "FIVE", 1))
			if got := read(t, root, "f.txt"); got != want {
				t.Errorf("f.txt = %q, want %q", got, want)
			}
			if got := read(t, root, "new.txt"); got != "n1\r\nn2\r\n" {
				t.Errorf("new.txt = %q, want it as git checks it out (CRLF)", got)
			}
		})
	}
}

// Issue 28, attack 1, through the merge-back: the repository's own
// config (agent-writable) defines a filter and the changeset brings the
// attribute that names it. The driver does not exist for troupe's git:
// the files land as they are and the filter never runs.
func TestLandNeverRunsARepositorysFilter(t *testing.T) {
	userGlobalConfig(t, "")
	marks := t.TempDir()
	root := newRepo(t, map[string]string{"f.txt": seven, ".troupe/.gitignore": "*\n"})
	for _, side := range []string{"clean", "smudge"} {
		sh(t, root, "config", "filter.evil."+side, "touch "+filepath.Join(marks, side+"-ran")+"; env > "+filepath.Join(marks, side+"-env")+"; cat")
	}
	write(t, root, map[string]string{".gitattributes": "*.txt filter=evil\n"})
	r, snap := openSnap(t, root)
	w, err := r.NewWorktree(t.Context(), snap, "w")
	must(t, err)
	write(t, w.Root(), map[string]string{"f.txt": strings.Replace(seven, "two", "TWO", 1), "new.txt": "n\n"})
	cs, err := w.Capture(t.Context())
	must(t, err)
	must(t, w.Remove(t.Context()))
	write(t, root, map[string]string{"f.txt": strings.Replace(seven, "five", "FIVE", 1)})
	out, err := r.Apply(t.Context(), snap, cs, ModeApply, "run1", "w")
	if err != nil || out.Status != messages.ChangeStatusApplied {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	if got := read(t, root, "f.txt"); got != strings.Replace(strings.Replace(seven, "two", "TWO", 1), "five", "FIVE", 1) {
		t.Errorf("f.txt = %q", got)
	}
	if names, _ := os.ReadDir(marks); len(names) != 0 {
		t.Errorf("the repository's filter ran: %v", names)
	}
}
