package workspace

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"

	"github.com/troupe-ai/troupe/messages"
)

// A file over Options.MaxChangeBytes, new or tracked, is left out of the
// changeset (a tracked one keeps its snapshot's contents) and named in
// Oversize, on the Go path and on git's; the files beside it are carried.
func TestCaptureLeavesOutOversizeFiles(t *testing.T) {
	for _, path := range []string{"go", "git"} {
		t.Run(path, func(t *testing.T) {
			root := newRepo(t, map[string]string{"a.txt": "a\n", "big.dat": "small\n"})
			r, err := Open(t.Context(), root, Options{MaxChangeBytes: 1000})
			must(t, err)
			t.Cleanup(func() { _ = r.Close(context.Background()) })
			snap, err := r.Snapshot(t.Context())
			must(t, err)
			w, err := r.NewWorktree(t.Context(), snap, "w")
			must(t, err)
			write(t, w.Dir(), map[string]string{"a.txt": "agent\n", "new.bin": string(make([]byte, 1001)),
				"big.dat": string(make([]byte, 5000)), "edge.bin": string(make([]byte, 1000))})
			if path == "git" {
				write(t, w.Dir(), map[string]string{".gitattributes": "*.txt text\n"})
			}
			cs, err := w.Capture(t.Context())
			must(t, err)
			if w.captured != path {
				t.Fatalf("captured by %s, want %s", w.captured, path)
			}
			want := []messages.OversizeFile{{Path: "big.dat", Bytes: 5000}, {Path: "new.bin", Bytes: 1001}}
			got := slices.Clone(cs.Oversize)
			slices.SortFunc(got, func(a, b messages.OversizeFile) int { return cmpString(a.Path, b.Path) })
			if !slices.Equal(got, want) {
				t.Errorf("oversize %v, want %v", got, want)
			}
			var files []string
			for _, f := range cs.Files {
				files = append(files, f.Path)
			}
			slices.Sort(files)
			wantFiles := []string{"a.txt", "edge.bin"}
			if path == "git" {
				wantFiles = []string{".gitattributes", "a.txt", "edge.bin"}
			}
			if !slices.Equal(files, wantFiles) {
				t.Errorf("files %v, want %v", files, wantFiles)
			}
			if got := sh(t, root, "cat-file", "-p", cs.Tree+":big.dat"); got != "small" {
				t.Errorf("big.dat in the captured tree is %q, want the snapshot's", got)
			}
		})
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// rssReport is what the capturing child process says.
type rssReport struct {
	Files    []string                `json:"files"`
	Oversize []messages.OversizeFile `json:"oversize"`
	Size     string                  `json:"size"` // the big file's blob size in the store, when carried
	MaxRSS   int64                   `json:"max_rss_kb"`
	Path     string                  `json:"path"` // go or git: the capture's path
}

// A worker's 1 GiB file never makes the capturing process read it into
// memory: carried (a limit above it), the capture streams it into the
// object store; over the default limit, it is only measured and named.
// The capture runs in a child process, whose peak RSS (its own rusage,
// git's processes apart) must stay under 300 MB.
func TestCaptureOfAGigabyteFileKeepsMemoryBounded(t *testing.T) {
	needGit(t)
	for _, tc := range []struct {
		name  string
		limit int64
	}{{"carried", 2 << 30}, {"over the default limit", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var rep rssReport
			childReport(t, "TestCaptureRSSChild", dir, &rep, "TROUPE_RSS_CHILD="+dir, "TROUPE_RSS_LIMIT="+strconv.FormatInt(tc.limit, 10))
			t.Logf("%s: capturing process peak RSS %d MB", tc.name, rep.MaxRSS/1024)
			if rep.Path != "go" {
				t.Errorf("captured by %s, want go", rep.Path)
			}
			if rep.MaxRSS > 300*1024 {
				t.Errorf("peak RSS %d MB, want under 300 MB", rep.MaxRSS/1024)
			}
			if tc.limit > 0 {
				if !slices.Contains(rep.Files, "big.bin") || len(rep.Oversize) != 0 || rep.Size != strconv.Itoa(1<<30) {
					t.Errorf("carried: files %v, oversize %v, blob size %s", rep.Files, rep.Oversize, rep.Size)
				}
				return
			}
			want := []messages.OversizeFile{{Path: "big.bin", Bytes: 1 << 30}}
			if slices.Contains(rep.Files, "big.bin") || !slices.Equal(rep.Oversize, want) || !slices.Contains(rep.Files, "a.txt") {
				t.Errorf("over the limit: files %v, oversize %v", rep.Files, rep.Oversize)
			}
		})
	}
}

// TestCaptureRSSChild is the capturing process of the test above (run
// only as its child).
func TestCaptureRSSChild(t *testing.T) {
	dir := os.Getenv("TROUPE_RSS_CHILD")
	if dir == "" {
		t.Skip("the child of TestCaptureOfAGigabyteFileKeepsMemoryBounded")
	}
	limit, err := strconv.ParseInt(os.Getenv("TROUPE_RSS_LIMIT"), 10, 64)
	must(t, err)
	root := filepath.Join(dir, "repo")
	must(t, os.Mkdir(root, 0o755))
	sh(t, root, "init", "-q", "-b", "main")
	write(t, root, map[string]string{"a.txt": "a\n"})
	sh(t, root, "add", "-A")
	sh(t, root, "commit", "-q", "-m", "first")
	r, err := Open(t.Context(), root, Options{MaxChangeBytes: limit, DataDir: filepath.Join(dir, "data")})
	must(t, err)
	defer r.Close(context.Background())
	snap, err := r.Snapshot(t.Context())
	must(t, err)
	w, err := r.NewWorktree(t.Context(), snap, "w")
	must(t, err)
	write(t, w.Dir(), map[string]string{"a.txt": "agent\n"})
	f, err := os.Create(filepath.Join(w.Dir(), "big.bin"))
	must(t, err)
	must(t, f.Truncate(1<<30)) // zeros, sparse: git and the capture still read every byte
	for _, at := range []int64{0, 1 << 20, 1<<30 - 4} {
		_, err = f.WriteAt([]byte("data"), at)
		must(t, err)
	}
	must(t, f.Close())
	cs, err := w.Capture(t.Context())
	must(t, err)
	var ru syscall.Rusage
	must(t, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	rep := rssReport{Oversize: cs.Oversize, MaxRSS: ru.Maxrss, Path: w.captured}
	for _, f := range cs.Files {
		rep.Files = append(rep.Files, f.Path)
	}
	if slices.Contains(rep.Files, "big.bin") {
		rep.Size = sh(t, root, "cat-file", "-s", fmt.Sprintf("%s:big.bin", cs.Tree))
	}
	data, err := json.Marshal(rep)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "report.json"), data, 0o644))
}
