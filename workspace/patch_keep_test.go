package workspace

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/messages"
)

// keptPatchReport is what the applying child process says.
type keptPatchReport struct {
	Status string `json:"status"`
	Patch  string `json:"patch"`
	MaxRSS int64  `json:"max_rss_kb"`
}

// keptPatchBound is the peak RSS the applying process must stay under
// while it keeps a patch larger than it.
const keptPatchBound = 64 << 20

// A changeset whose patch is larger than the bound, carried without an
// inline patch (its tree held by the repository), is kept as a patch
// (ModePatch) by a process whose peak RSS stays under the bound: the
// patch goes from git diff-tree to its file, never through a buffer of
// ours; the kept patch applies to the snapshot with git apply --check.
func TestKeptPatchOfALargeChangesetIsStreamed(t *testing.T) {
	needGit(t)
	root := newRepo(t, map[string]string{"a.txt": "a\n", ".troupe/.gitignore": "*\n"})
	r, snap := openSnap(t, root)
	w, err := r.NewWorktree(t.Context(), snap, "w")
	must(t, err)
	rnd := rand.NewChaCha8([32]byte{1})
	for i := range 3 {
		data := make([]byte, 24<<20) // incompressible: the patch is larger still
		_, _ = rnd.Read(data)
		must(t, os.WriteFile(filepath.Join(w.Root(), "big"+strconv.Itoa(i)+".bin"), data, 0o644))
	}
	cs, err := w.Capture(t.Context())
	must(t, err)
	must(t, w.Remove(context.Background()))
	inline := len(cs.Patch)
	cs.Patch = nil
	dir := t.TempDir()
	data, err := json.Marshal(landChild{Root: root, Snap: snap, CS: cs})
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "child.json"), data, 0o600))
	cmd := exec.Command(os.Args[0], "-test.run=^TestKeptPatchChild$", "-test.v")
	cmd.Env = append(os.Environ(), "TROUPE_KEPT_PATCH_CHILD="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var rep keptPatchReport
	data, err = os.ReadFile(filepath.Join(dir, "report.json"))
	must(t, err)
	must(t, json.Unmarshal(data, &rep))
	st, err := os.Stat(rep.Patch)
	must(t, err)
	t.Logf("patch %d MB (inline it was %d MB), applying process peak RSS %d MB", st.Size()>>20, inline>>20, rep.MaxRSS>>10)
	if rep.Status != messages.ChangeStatusPatch || st.Size() <= keptPatchBound {
		t.Fatalf("status %s, patch of %d bytes: want a kept patch over %d", rep.Status, st.Size(), keptPatchBound)
	}
	if rep.MaxRSS<<10 >= keptPatchBound {
		t.Errorf("peak RSS %d MB while keeping the patch, want under %d MB", rep.MaxRSS>>10, keptPatchBound>>20)
	}
	check, err := r.NewWorktree(t.Context(), snap, "check")
	must(t, err)
	defer check.Remove(context.Background())
	sh(t, check.Dir(), "apply", "--check", rep.Patch)
}

// peakRSS is this process's peak RSS in KiB, VmHWM of /proc/self/status:
// its own memory's high-water mark since it started, where getrusage's
// ru_maxrss also counts the memory of the process that started it
// (Linux keeps it across exec).
func peakRSS(t *testing.T) int64 {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	must(t, err)
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			must(t, err)
			return kb
		}
	}
	t.Fatal("no VmHWM in /proc/self/status")
	return 0
}

// TestKeptPatchChild is the applying process of the test above (run
// only as its child).
func TestKeptPatchChild(t *testing.T) {
	dir := os.Getenv("TROUPE_KEPT_PATCH_CHILD")
	if dir == "" {
		t.Skip("the child of TestKeptPatchOfALargeChangesetIsStreamed")
	}
	data, err := os.ReadFile(filepath.Join(dir, "child.json"))
	must(t, err)
	var c landChild
	must(t, json.Unmarshal(data, &c))
	r, err := Open(context.Background(), c.Root, Options{})
	must(t, err)
	defer r.Close(context.Background())
	out, err := r.Apply(context.Background(), c.Snap, c.CS, ModePatch, "run1", "w")
	must(t, err)
	data, err = json.Marshal(keptPatchReport{Status: out.Status, Patch: out.Patch, MaxRSS: peakRSS(t)})
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "report.json"), data, 0o644))
}
