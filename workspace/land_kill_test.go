package workspace

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/troupe-ai/troupe/messages"
)

// landChild is what the test binary, run again as a child, lands and
// where it stops.
type landChild struct {
	Root string             `json:"root"`
	Snap Snapshot           `json:"snap"`
	CS   messages.Changeset `json:"cs"`
	Step string             `json:"step"`
	N    int                `json:"n"`
}

// landingMark is the line the child prints when it reached its step.
const landingMark = "troupe-test: landing, kill me now"

// TestLandChild is the child of TestLandKilledMidway: it lands the
// changeset its TROUPE_TEST_LAND_CHILD file names and, at the step
// named there, prints landingMark and waits for its SIGKILL. Run alone,
// it does nothing.
func TestLandChild(t *testing.T) {
	path := os.Getenv("TROUPE_TEST_LAND_CHILD")
	if path == "" {
		return
	}
	data, err := os.ReadFile(path)
	must(t, err)
	var c landChild
	must(t, json.Unmarshal(data, &c))
	landHook = func(step string, n int) error {
		if step == c.Step && n == c.N {
			os.Stdout.WriteString("\n" + landingMark + "\n")
			_, _ = io.Copy(io.Discard, os.Stdin) // until killed: the parent never closes it
		}
		return nil
	}
	r, err := Open(context.Background(), c.Root, Options{})
	must(t, err)
	out, err := r.Apply(context.Background(), c.Snap, c.CS, ModeApply, "run1", "w")
	t.Fatalf("the land ended before its step %s %d: %+v %v", c.Step, c.N, out, err)
}

// A land killed (SIGKILL, in a real child process) at any step leaves,
// once the workspace is opened again, either all of the changeset's
// files or none, and the patch kept when none: killed after the plan,
// after the new contents were written, after 1, 2 and 3 of its 4 files
// were committed (the tree then half-landed: checked), and once done.
func TestLandKilledMidway(t *testing.T) {
	for _, tc := range []struct {
		step string
		n    int
		all  bool
	}{
		{landPlanned, 0, false}, {"prepared", 0, false},
		{"renamed", 1, false}, {"renamed", 2, false}, {"renamed", 3, false},
		{landDone, 4, true},
	} {
		t.Run(tc.step+"_"+strconv.Itoa(tc.n), func(t *testing.T) {
			c := newLandCase(t)
			killChildAt(t, c, tc.step, tc.n)
			if tc.step == "renamed" {
				if got := diskFiles(t, c.root); maps.Equal(got, c.before) {
					t.Fatalf("killed after %d renames, the tree is as before: the kill point was not reached", tc.n)
				}
			}
			if names, _ := filepath.Glob(filepath.Join(c.r.home.dir, "land", "*.json")); len(names) != 1 {
				t.Fatalf("journals of the killed land: %v", names)
			}
			r := open(t, c.root) // the next run
			defer r.Close(t.Context())
			want, patch := c.before, true
			if tc.all {
				want, patch = c.after, false
			}
			got := diskFiles(t, c.root)
			if !tc.all && !maps.Equal(got, want) { // directories too
				t.Errorf("after the next Open the workspace holds %v, want %v", got, want)
			}
			sameFiles(t, "after the next Open", got, filesOnly(want))
			kept := filepath.Join(c.root, ".troupe", "runs", "run1", "changes", "w.patch")
			if _, err := os.Stat(kept); (err == nil) != patch {
				t.Errorf("patch kept: %v, want %v", err == nil, patch)
			}
			if patch {
				c.checkPatchKept(t, kept)
			}
			if names, _ := os.ReadDir(filepath.Join(c.r.home.dir, "land")); len(names) != 0 {
				t.Errorf("journal left: %v", names)
			}
			if st := sh(t, c.root, "status", "--porcelain"); !tc.all && st != "" {
				t.Errorf("git status after recovery:\n%s", st)
			}
		})
	}
}

// filesOnly is files without its directories.
func filesOnly(files map[string]string) map[string]string {
	files = maps.Clone(files)
	maps.DeleteFunc(files, func(_, v string) bool { return v == "<dir>" })
	return files
}

// killChildAt runs the test binary as a child landing c's changeset,
// waits for it to reach step n, and kills it with SIGKILL.
func killChildAt(t *testing.T, c landCase, step string, n int) {
	t.Helper()
	spec, err := json.Marshal(landChild{Root: c.root, Snap: c.snap, CS: c.cs, Step: step, N: n})
	must(t, err)
	specFile := filepath.Join(t.TempDir(), "child.json")
	must(t, os.WriteFile(specFile, spec, 0o600))
	cmd := exec.Command(os.Args[0], "-test.run=^TestLandChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "TROUPE_TEST_LAND_CHILD="+specFile)
	stdin, err := cmd.StdinPipe()
	must(t, err)
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	sc := bufio.NewScanner(stdout)
	reached := false
	var lines []string
	for sc.Scan() {
		if sc.Text() == landingMark {
			reached = true
			break
		}
		lines = append(lines, sc.Text())
	}
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	if !reached {
		t.Fatalf("the child ended before step %s %d: %v", step, n, lines)
	}
}
