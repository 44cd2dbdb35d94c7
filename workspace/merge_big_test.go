package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/troupe-ai/troupe/messages"
)

// The sizes of the files of TestCaptureAndLandOfBigFilesKeepMemoryBounded.
const (
	bigChanged = 64 << 20 // random bytes the agent rewrites
	bigNew     = 72 << 20 // random bytes the agent adds
	bigLines   = 1_700_000
	bigHuge    = 1 << 30 // over agent.max_change_bytes
)

// landReport is what the capturing and landing child process says.
type landReport struct {
	Agent      map[string]string       `json:"agent"` // the agent's files' sums, read in the child (an overlay's view ends with it)
	Status     string                  `json:"status"`
	Conflicts  []string                `json:"conflicts"`
	Oversize   []messages.OversizeFile `json:"oversize"`
	PatchBytes int                     `json:"patch_bytes"`
	CaptureKB  int64                   `json:"capture_max_rss_kb"`
	LandKB     int64                   `json:"land_max_rss_kb"`
}

// A worker changing files of 64-72 MiB each (under agent.max_change_bytes)
// and writing a 1 GiB one (over it) is captured and landed with the
// process's peak RSS under 300 MB: the blobs are streamed into the
// object store, the changeset carries no patch (CaptureTree), the merge
// compares the big files by object ID and streams them into the
// workspace, and the text file both sides changed is merged by git
// merge-file on files (git's memory). The landed files are
// byte-identical to the agent's (and the merge's), the 1 GiB file is
// named, not carried. Capture and land run in a child process whose
// peak RSS (getrusage, git's processes apart) is measured after each.
func TestCaptureAndLandOfBigFilesKeepMemoryBounded(t *testing.T) {
	needGit(t)
	dir := t.TempDir()
	var rep landReport
	childReport(t, "TestLandRSSChild", dir, &rep, "TROUPE_LAND_RSS_CHILD="+dir)
	t.Logf("peak RSS: capture %d MB, capture + land %d MB (inline patch %d bytes)", rep.CaptureKB/1024, rep.LandKB/1024, rep.PatchBytes)
	if rep.Status != messages.ChangeStatusApplied || len(rep.Conflicts) > 0 {
		t.Fatalf("status %s, conflicts %v", rep.Status, rep.Conflicts)
	}
	if want := []messages.OversizeFile{{Path: "huge.bin", Bytes: bigHuge}}; len(rep.Oversize) != 1 || rep.Oversize[0] != want[0] {
		t.Errorf("oversize %v, want %v", rep.Oversize, want)
	}
	if rep.CaptureKB > 300*1024 || rep.LandKB > 300*1024 {
		t.Errorf("peak RSS capture %d MB, land %d MB: want under 300 MB", rep.CaptureKB/1024, rep.LandKB/1024)
	}
	root := filepath.Join(dir, "repo")
	for _, name := range []string{"changed.bin", "new.bin", "a.txt"} {
		if got, want := fileSum(t, filepath.Join(root, name)), rep.Agent[name]; got != want {
			t.Errorf("%s landed as %s, the agent's is %s", name, got, want)
		}
	}
	h := sha256.New()
	writeLines(h, "user\n", "agent\n")
	if got, want := fileSum(t, filepath.Join(root, "text.txt")), hex.EncodeToString(h.Sum(nil)); got != want {
		t.Errorf("text.txt merged to %s, want both edits (%s)", got, want)
	}
	if _, err := os.Lstat(filepath.Join(root, "huge.bin")); err == nil {
		t.Error("huge.bin, over the limit, landed")
	}
}

// TestLandRSSChild is the capturing and landing process of the test
// above (run only as its child).
func TestLandRSSChild(t *testing.T) {
	dir := os.Getenv("TROUPE_LAND_RSS_CHILD")
	if dir == "" {
		t.Skip("the child of TestCaptureAndLandOfBigFilesKeepMemoryBounded")
	}
	root := filepath.Join(dir, "repo")
	must(t, os.Mkdir(root, 0o755))
	sh(t, root, "init", "-q", "-b", "main")
	write(t, root, map[string]string{"a.txt": "a\n", ".gitignore": ".troupe/\n"})
	writeRandom(t, filepath.Join(root, "changed.bin"), bigChanged, 1)
	writeFile(t, filepath.Join(root, "text.txt"), func(w io.Writer) { writeLines(w, "", "") })
	sh(t, root, "add", "-A")
	sh(t, root, "commit", "-q", "-m", "first")
	r, err := Open(t.Context(), root, Options{DataDir: filepath.Join(dir, "data")})
	must(t, err)
	defer r.Close(context.Background())
	snap, err := r.Snapshot(t.Context())
	must(t, err)
	w, err := r.NewWorktree(t.Context(), snap, "w")
	must(t, err)
	write(t, w.Dir(), map[string]string{"a.txt": "agent\n"})
	writeRandom(t, filepath.Join(w.Dir(), "changed.bin"), bigChanged, 2)
	writeRandom(t, filepath.Join(w.Dir(), "new.bin"), bigNew, 3)
	writeFile(t, filepath.Join(w.Dir(), "text.txt"), func(w io.Writer) { writeLines(w, "", "agent\n") })
	f, err := os.Create(filepath.Join(w.Dir(), "huge.bin"))
	must(t, err)
	must(t, f.Truncate(bigHuge))
	must(t, f.Close())
	// The user edits the first line meanwhile: text.txt merges three ways.
	writeFile(t, filepath.Join(root, "text.txt"), func(w io.Writer) { writeLines(w, "user\n", "") })

	capture := w.CaptureTree
	if os.Getenv("TROUPE_LAND_RSS_OLD") != "" { // the way before: for the figures only
		capture, mergeInMemory = w.Capture, 1<<62
	}
	cs, err := capture(t.Context())
	must(t, err)
	rep := landReport{Agent: map[string]string{}, Oversize: cs.Oversize, PatchBytes: len(cs.Patch), CaptureKB: maxRSS(t)}
	out, err := r.Apply(t.Context(), snap, cs, ModeApply, "run1", "w")
	must(t, err)
	rep.LandKB, rep.Status, rep.Conflicts = maxRSS(t), out.Status, out.Conflicts
	for _, name := range []string{"changed.bin", "new.bin", "a.txt"} {
		rep.Agent[name] = fileSum(t, filepath.Join(w.Dir(), name))
	}
	data, err := json.Marshal(rep)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "report.json"), data, 0o644))
}

// maxRSS is the process's peak RSS so far, in KB.
func maxRSS(t *testing.T) int64 {
	var ru syscall.Rusage
	must(t, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return ru.Maxrss
}

// writeLines writes bigLines numbered lines, the first replaced by
// first and the last by last when not "".
func writeLines(w io.Writer, first, last string) {
	buf := make([]byte, 0, 1<<20)
	for i := range bigLines {
		switch {
		case i == 0 && first != "":
			buf = append(buf, first...)
		case i == bigLines-1 && last != "":
			buf = append(buf, last...)
		default:
			buf = strconv.AppendInt(buf, int64(i), 10)
			buf = append(buf, " of the lines of a big text file\n"...)
		}
		if len(buf) > 1<<20-100 {
			_, _ = w.Write(buf)
			buf = buf[:0]
		}
	}
	_, _ = w.Write(buf)
}

// writeFile writes the file at abs with what fill writes.
func writeFile(t *testing.T, abs string, fill func(io.Writer)) {
	f, err := os.Create(abs)
	must(t, err)
	fill(f)
	must(t, f.Close())
}

// writeRandom writes n random bytes (seeded) to the file at abs.
func writeRandom(t *testing.T, abs string, n int64, seed byte) {
	writeFile(t, abs, func(w io.Writer) {
		_, err := io.CopyN(w, rand.NewChaCha8([32]byte{seed}), n)
		must(t, err)
	})
}

// fileSum is the SHA-256 of the file at abs, read in pieces.
func fileSum(t *testing.T, abs string) string {
	f, err := os.Open(abs)
	must(t, err)
	defer f.Close()
	h := sha256.New()
	_, err = io.Copy(h, f)
	must(t, err)
	return fmt.Sprintf("%x", h.Sum(nil))
}
