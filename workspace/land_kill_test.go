package workspace

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
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
	// Sync, when set, is the fsync (syncHook's what, a filepath.Match pattern) the
	// child is killed at instead of a step.
	Sync string `json:"sync,omitempty"`
	// Recover: the child only opens the workspace, recovering a killed
	// land, and is killed at its recovery's step Step (recoverStep).
	Recover bool `json:"recover,omitempty"`
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
	stop := func() {
		os.Stdout.WriteString("\n" + landingMark + "\n")
		_, _ = io.Copy(io.Discard, os.Stdin) // until killed: the parent never closes it
	}
	syncHook = func(what string) error {
		if ok, _ := filepath.Match(c.Sync, what); ok && c.Sync != "" {
			stop()
		}
		return nil
	}
	if c.Recover {
		recoverStep = func(step string, n int) {
			if c.Sync == "" && step == c.Step && n == c.N {
				stop()
			}
		}
		_, err := Open(context.Background(), c.Root, Options{})
		t.Fatalf("the recovery ended before its step %s %d: %v", c.Step, c.N, err)
	}
	landHook = func(step string, n int) error {
		if c.Sync == "" && step == c.Step && n == c.N {
			stop()
		}
		return nil
	}
	r, err := Open(context.Background(), c.Root, Options{})
	must(t, err)
	out, err := r.Apply(context.Background(), c.Snap, c.CS, ModeApply, "run1", "w")
	t.Fatalf("the land ended before its step %s %d (sync %q): %+v %v", c.Step, c.N, c.Sync, out, err)
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
			killChild(t, landChild{Root: c.root, Snap: c.snap, CS: c.cs, Step: tc.step, N: tc.n})
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

// killChild runs the test binary as a child landing (or recovering) as
// spec says, waits for it to reach its step, and kills it with SIGKILL.
func killChild(t *testing.T, spec landChild) {
	t.Helper()
	data, err := json.Marshal(spec)
	must(t, err)
	specFile := filepath.Join(t.TempDir(), "child.json")
	must(t, os.WriteFile(specFile, data, 0o600))
	killTestChild(t, "TestLandChild", fmt.Sprintf("step %s %d (sync %q)", spec.Step, spec.N, spec.Sync), "TROUPE_TEST_LAND_CHILD="+specFile)
}

// killTestChild runs the test binary's test name as a child with env
// added, waits for it to print landingMark (at the point what says),
// and kills it with SIGKILL.
func killTestChild(t *testing.T, name, what string, env ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
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
		t.Fatalf("the child ended before %s: %v", what, lines)
	}
}
