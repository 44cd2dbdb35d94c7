package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/internal/peer"
	"github.com/troupe-ai/troupe/internal/testfiles"
	"github.com/troupe-ai/troupe/messages"
)

// convertRSSBound is the peak RSS the process capturing and landing a
// converted file of bigLines lines (about 68 MB) stays under: less than
// the file and the test binary's own, so a conversion that holds the
// file whole once (it held it two or three times) is over it.
const convertRSSBound = 64 << 10 // KiB

// convCase is a user's repository whose big file git converts between
// its blob and the disk.
type convCase struct {
	file   string
	attrs  string // .gitattributes ("": git lfs track *.bin writes it)
	global string // the user's ~/.gitconfig
	lfs    bool
	filter bool                // a clean/smudge filter runs (confined)
	both   bool                // the user edits the first line meanwhile: a three-way merge
	disk   func(string) string // a line's form on disk
}

// rot13 is s with its letters rotated by 13 (its own inverse).
func rot13(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z':
			b[i] = 'a' + (c-'a'+13)%26
		case c >= 'A' && c <= 'Z':
			b[i] = 'A' + (c-'A'+13)%26
		}
	}
	return string(b)
}

const rotTr = `tr A-Za-z N-ZA-Mn-za-m`

var convCases = map[string]convCase{
	"eol=crlf": {file: "big.txt", attrs: "*.txt text eol=crlf\n", both: true, disk: crlf},
	"autocrlf": {file: "big.txt", attrs: "* text=auto\n", global: "[core]\n\tautocrlf = true\n", both: true, disk: crlf},
	"filter": {file: "big.rot", attrs: "*.rot filter=rot\n", filter: true, both: true, disk: rot13,
		global: "[filter \"rot\"]\n\tclean = " + rotTr + "\n\tsmudge = " + rotTr + "\n\trequired\n"},
	"lfs": {file: "big.bin", lfs: true, filter: true, disk: func(s string) string { return s }},
}

// convReport is what the child capturing and landing a convCase says.
type convReport struct {
	Status    string   `json:"status"`
	Conflicts []string `json:"conflicts"`
	Landed    string   `json:"landed"` // the sum of the user's file after the land
	Want      string   `json:"want"`   // the sum of what it should be
	Blob      string   `json:"blob"`   // the changeset's blob of it, up to 200 bytes
	BlobSize  int64    `json:"blob_size"`
	CaptureKB int64    `json:"capture_kb"`
	LandKB    int64    `json:"land_kb"`
}

// A big file (about 68 MB) that git converts between its blob and the
// disk: under text eol=crlf, text=auto with the user's core.autocrlf,
// a clean/smudge filter of the user's (confined) and Git LFS. A worker
// appends a line to the form it sees; with the first three the user
// edits the first line meanwhile (a three-way merge of the clean
// forms). The change lands byte-exact in the user's on-disk form (CRLF
// kept, LFS's content on disk and its pointer in the changeset), and
// the process that checks out, captures and lands streams the
// conversions: its peak RSS (VmHWM) stays under convertRSSBound.
func TestBigConvertedFilesKeepMemoryBounded(t *testing.T) {
	if raceEnabled {
		t.Skip("memory is measured without the race detector (tests/run.sh's big files stage)")
	}
	needGit(t)
	for _, name := range []string{"eol=crlf", "autocrlf", "filter", "lfs"} {
		t.Run(name, func(t *testing.T) {
			c := convCases[name]
			if c.filter {
				needSandbox(t)
			}
			if c.lfs {
				peer.Need(t, "git-lfs")
			}
			dir := t.TempDir()
			var rep convReport
			childReport(t, "TestConvertRSSChild", dir, &rep, "TROUPE_CONVERT_RSS_CHILD="+dir, "TROUPE_CONVERT_CASE="+name)
			t.Logf("peak RSS: checkout + capture %d MB, + land %d MB", rep.CaptureKB>>10, rep.LandKB>>10)
			if rep.Status != messages.ChangeStatusApplied || len(rep.Conflicts) > 0 {
				t.Fatalf("status %s, conflicts %v", rep.Status, rep.Conflicts)
			}
			if rep.Landed != rep.Want {
				t.Errorf("%s landed as %s, want %s (both edits, in the form on disk)", c.file, rep.Landed, rep.Want)
			}
			if c.lfs && (rep.BlobSize > 200 || !strings.HasPrefix(rep.Blob, "version https://git-lfs.github.com/spec/v1\n")) {
				t.Errorf("the changeset's blob of %s (%d bytes) is not an LFS pointer: %q", c.file, rep.BlobSize, rep.Blob)
			}
			if !c.lfs && rep.BlobSize < bigLines*30 {
				t.Errorf("the changeset's blob of %s is %d bytes", c.file, rep.BlobSize)
			}
			if rep.CaptureKB > convertRSSBound || rep.LandKB > convertRSSBound {
				t.Errorf("peak RSS %d MB capturing, %d MB landing: want under %d MB", rep.CaptureKB>>10, rep.LandKB>>10, convertRSSBound>>10)
			}
		})
	}
}

// writeConvLines writes the bigLines numbered lines of a convCase's
// file in the form disk makes, the first replaced by first when not "",
// then the line last when not "".
func writeConvLines(w io.Writer, disk func(string) string, first, last string) {
	var b strings.Builder
	for i := range bigLines {
		if i == 0 && first != "" {
			b.WriteString(disk(first))
		} else {
			b.WriteString(disk(strconv.Itoa(i) + " of the lines of a big text file\n"))
		}
		if b.Len() > 1<<20 {
			_, _ = io.WriteString(w, b.String())
			b.Reset()
		}
	}
	if last != "" {
		b.WriteString(disk(last))
	}
	_, _ = io.WriteString(w, b.String())
}

// TestConvertRSSChild is the process of a case of the test above (run
// only as its child).
func TestConvertRSSChild(t *testing.T) {
	dir := os.Getenv("TROUPE_CONVERT_RSS_CHILD")
	if dir == "" {
		t.Skip("the child of TestBigConvertedFilesKeepMemoryBounded")
	}
	c := convCases[os.Getenv("TROUPE_CONVERT_CASE")]
	home, root := filepath.Join(dir, "home"), filepath.Join(dir, "repo")
	must(t, os.MkdirAll(home, 0o700))
	must(t, os.Mkdir(root, 0o755))
	t.Setenv("HOME", home)
	for _, name := range []string{"GIT_CONFIG_GLOBAL", "XDG_CONFIG_HOME"} {
		t.Setenv(name, "")
		os.Unsetenv(name)
	}
	must(t, os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(c.global), 0o644))
	testfiles.UserGit(t, root, "init", "-q", "-b", "main")
	if c.lfs {
		testfiles.UserGit(t, home, "lfs", "install")
		testfiles.UserGit(t, root, "lfs", "track", "*.bin")
	} else {
		write(t, root, map[string]string{".gitattributes": c.attrs})
	}
	write(t, root, map[string]string{".troupe/.gitignore": "*\n"})
	abs := filepath.Join(root, c.file)
	writeFile(t, abs, func(w io.Writer) { writeConvLines(w, c.disk, "", "") })
	testfiles.UserGit(t, root, "add", "-A")
	testfiles.UserGit(t, root, "commit", "-q", "-m", "first")
	past := time.Now().Add(-time.Minute) // not racily clean
	must(t, os.Chtimes(abs, past, past))
	testfiles.UserGit(t, root, "update-index", "--refresh")
	if st := testfiles.UserGit(t, root, "status", "--porcelain"); st != "" {
		t.Fatalf("git status after the commit: %s", st)
	}

	r, err := Open(t.Context(), root, Options{DataDir: filepath.Join(dir, "data")})
	must(t, err)
	defer r.Close(context.Background())
	snap, err := r.Snapshot(t.Context())
	must(t, err)
	w, err := r.NewWorktree(t.Context(), snap, "w")
	must(t, err)
	appendLine(t, w.Dir(), c)
	cs, err := w.CaptureTree(t.Context())
	must(t, err)
	rep := convReport{CaptureKB: peakRSS(t)}
	first := ""
	if c.both {
		first = "the user's first line\n"
		writeFile(t, abs, func(w io.Writer) { writeConvLines(w, c.disk, first, "") })
	}
	out, err := r.Apply(t.Context(), snap, cs, ModeApply, "run1", "w")
	must(t, err)
	rep.LandKB, rep.Status, rep.Conflicts = peakRSS(t), out.Status, out.Conflicts
	rep.Landed = fileSum(t, abs)
	h := sha256.New()
	writeConvLines(h, c.disk, first, "the agent's line\n")
	rep.Want = hex.EncodeToString(h.Sum(nil))
	rep.BlobSize, err = strconv.ParseInt(sh(t, root, "cat-file", "-s", cs.Tree+":"+c.file), 10, 64)
	must(t, err)
	if rep.BlobSize <= 200 {
		rep.Blob = sh(t, root, "cat-file", "blob", cs.Tree+":"+c.file) + "\n"
	}
	data, err := json.Marshal(rep)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "report.json"), data, 0o644))
}

// appendLine appends the agent's line to c's file in the worktree at
// dir, in the form the worktree holds it (its line ends as its first
// line's).
func appendLine(t *testing.T, dir string, c convCase) {
	abs := filepath.Join(dir, c.file)
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_APPEND, 0)
	must(t, err)
	defer func() { must(t, f.Close()) }()
	head := make([]byte, 256)
	n, err := f.ReadAt(head, 0)
	if n == 0 {
		t.Fatalf("the worktree's %s: %v", c.file, err)
	}
	seen := string(head[:n])
	if want := c.disk("0 of the lines of a big text file\n"); !strings.HasPrefix(seen, want) && !strings.HasPrefix(seen, strings.ReplaceAll(want, "\r\n", "\n")) {
		t.Fatalf("the worktree's %s begins %q, want its form on disk %q", c.file, seen, want)
	}
	line := c.disk("the agent's line\n")
	if !strings.Contains(seen, "\r\n") {
		line = strings.ReplaceAll(line, "\r\n", "\n")
	}
	_, err = f.WriteString(line)
	must(t, err)
}
