package workspace

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// revProcessArg makes the test binary the long-running filter process
// revProcessFilter (TestMain).
const revProcessArg = "-troupe-rev-process"

// revProcessFilter is a long-running filter process (git's protocol,
// version 2) whose clean and smudge reverse each line, as rev does. Like
// the script of newFilterCase, it first tries what a compromised filter
// would: a write outside its TMPDIR (a file in HOME) and a read of the
// user's key (its contents would show in the output).
func revProcessFilter() int {
	home := os.Getenv("HOME")
	_ = os.WriteFile(filepath.Join(home, "escaped-process"), nil, 0o644)
	secret, _ := os.ReadFile(filepath.Join(home, ".ssh", "id_test"))
	r, w := bufio.NewReader(os.Stdin), bufio.NewWriterSize(os.Stdout, pktMax+4)
	if hello, err := readList(r); err != nil || !hello["git-filter-client"] || !hello["version=2"] {
		return 1
	}
	if writePkts(w, "git-filter-server\n", "version=2\n", "") != nil {
		return 1
	}
	if _, err := readList(r); err != nil {
		return 1
	}
	if writePkts(w, "capability=clean\n", "capability=smudge\n", "") != nil {
		return 1
	}
	for {
		if _, err := readList(r); err != nil {
			return 0 // git closed the pipe: done
		}
		var content bytes.Buffer
		for {
			p, err := readPkt(r)
			if err != nil {
				return 1
			}
			if p == nil {
				break
			}
			content.Write(p)
		}
		out := []byte(revLines(content.String()) + string(secret))
		if writePkts(w, "status=success\n", "") != nil {
			return 1
		}
		for len(out) > 0 {
			n := min(len(out), pktMax)
			if writePkt(w, out[:n]) != nil {
				return 1
			}
			out = out[n:]
		}
		if writePkts(w, "", "") != nil {
			return 1
		}
	}
}

// A filter of the user's global config with only a long-running process
// command (git-lfs's usual form) runs, in the sandbox: a worker's
// one-line edit merges with the user's and the file keeps its on-disk
// form. The filter process is a real program speaking git's protocol
// (the user's own git checks the file out through it first); it could
// neither write outside its TMPDIR nor read the user's key.
func TestLandRunsAProcessFilterConfined(t *testing.T) {
	needSandbox(t)
	self, err := os.Executable()
	must(t, err)
	process := self + " " + revProcessArg
	home := t.TempDir()
	c := newFilterCaseConf(t, home, "[filter \"rev\"]\n\tprocess = "+process+"\n\trequired\n",
		map[string]string{"filter.rev.process": process, "filter.rev.required": "true"}, nil)
	c.check(t)
	if got := read(t, c.root, "f.rev"); strings.Contains(got, "SECRET") {
		t.Errorf("f.rev = %q: the filter read the key", got)
	}
	if _, err := os.Stat(filepath.Join(home, "escaped-process")); err == nil {
		t.Error("the filter process wrote outside its sandbox")
	}
}

// revFilteredWorktree is a repository whose f.rev goes through the
// user's filter rev (executable when exec says so), checked out through
// it, and a worktree of its snapshot, whose f.rev is checked to be in
// the smudged form.
func revFilteredWorktree(t *testing.T, exec bool) (string, *Worktree) {
	t.Helper()
	needSandbox(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	userGlobalConfig(t, "[filter \"rev\"]\n\tclean = rev\n\tsmudge = rev\n\trequired\n")
	root := newRepo(t, map[string]string{".gitattributes": "*.rev filter=rev\n", "f.rev": seven, ".troupe/.gitignore": "*\n"})
	if exec {
		sh(t, root, "update-index", "--chmod=+x", "f.rev")
		sh(t, root, "commit", "-q", "-m", "executable")
	}
	checkoutFiltered(t, root)
	r, snap := openSnap(t, root)
	w, err := r.NewWorktree(t.Context(), snap, "w")
	must(t, err)
	if got := read(t, w.Root(), "f.rev"); got != revLines(seven) {
		t.Fatalf("the worktree's f.rev = %q, want the smudged form", got)
	}
	return root, w
}

// A worktree checked out through the user's filter and left as it was
// captures no change (its smudged files are cleaned back), and one
// edited captures the clean form of the edit.
func TestCheckoutThroughTheFilterRoundTrips(t *testing.T) {
	root, w := revFilteredWorktree(t, false)
	cs, err := w.Capture(t.Context())
	must(t, err)
	if !cs.Empty() {
		t.Errorf("an untouched filtered file captured as a change: %+v", cs.Files)
	}
	write(t, w.Root(), map[string]string{"f.rev": revLines(strings.Replace(seven, "six", "SIX", 1))})
	cs, err = w.Capture(t.Context())
	must(t, err)
	if got := sh(t, root, "cat-file", "-p", cs.Tree+":f.rev"); got+"\n" != strings.Replace(seven, "six", "SIX", 1) {
		t.Errorf("captured blob %q, want the clean form of the edit", got)
	}
}

// An executable file checked out through the user's filter stays
// executable in the worktree, and an untouched one captures no mode
// change (which would land as the user's file losing its x bit).
func TestFilteredExecutableKeepsItsMode(t *testing.T) {
	_, w := revFilteredWorktree(t, true)
	fi, err := os.Stat(filepath.Join(w.Root(), "f.rev"))
	must(t, err)
	if fi.Mode().Perm()&0o100 == 0 {
		t.Errorf("the worktree's f.rev has mode %v, want it executable", fi.Mode())
	}
	cs, err := w.Capture(t.Context())
	must(t, err)
	if !cs.Empty() {
		t.Errorf("an untouched executable filtered file captured as a change: %+v", cs.Files)
	}
}

// Whatever a filter process answers, speaking the protocol to it ends
// with contents or an error, never a panic, a hang or output over the
// limit.
func FuzzFilterProcessAnswer(f *testing.F) {
	var ok bytes.Buffer
	w := bufio.NewWriter(&ok)
	_ = writePkts(w, "git-filter-server\n", "version=2\n", "", "capability=clean\n", "", "status=success\n", "")
	_ = writePkt(w, []byte("cleaned\n"))
	_ = writePkts(w, "", "")
	f.Add(ok.Bytes())
	f.Add([]byte("0004000"))
	f.Add([]byte("ffff"))
	f.Fuzz(func(t *testing.T, answer []byte) {
		var out bytes.Buffer
		err := speakFilter(io.Discard, bufio.NewReader(bytes.NewReader(answer)), filterJob{"clean", "f.txt", patchBytes([]byte("data\n")), &out, 64})
		if err == nil && out.Len() > 64 {
			t.Fatalf("output of %d bytes over the limit", out.Len())
		}
	})
}
