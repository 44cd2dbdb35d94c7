//go:build linux

package applypatch

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/troupe-ai/troupe/internal/testfiles"
	"github.com/troupe-ai/troupe/tools"
	"golang.org/x/sys/unix"
)

// raceIterations is how many calls each tool makes while a directory of
// the workspace is swapped with a symlink to an outside directory: 2000,
// or 300 under the race detector (which slows each call some twentyfold),
// a fifth of that with -short, or TROUPE_RACE_ITERATIONS for a longer
// stress run.
func raceIterations(t *testing.T) int {
	if v := os.Getenv("TROUPE_RACE_ITERATIONS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("TROUPE_RACE_ITERATIONS=%q is not a positive number", v)
		}
		return n
	}
	n := 2000
	if raceDetector {
		n = 300
	}
	if testing.Short() {
		n /= 5
	}
	return n
}

// raceMinSuccesses is how many calls of each tool must succeed through
// the race for the run to count.
const raceMinSuccesses = 5

// raceRig is a workspace whose directory d is swapped, in a tight loop,
// with the symlink "swap" pointing to a directory outside the workspace
// that holds the same names with canary content. Every tool call through
// d then races the swap: a call that resolves its path and then opens it
// by name would read, list or write outside.
type raceRig struct {
	s       *tools.Session
	root    string
	outside string
	canary  string
	before  map[string]string // the outside tree: path → content ("/" for a directory)
	swaps   atomic.Int64
	stop    chan struct{}
	stopped chan struct{}
}

func newRaceRig(t *testing.T) *raceRig {
	t.Helper()
	s := newTestSession(t)
	r := &raceRig{s: s, root: s.Workspace.Root(), outside: t.TempDir(),
		canary: fmt.Sprintf("CANARY%d", os.Getpid()), stop: make(chan struct{}), stopped: make(chan struct{})}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// Inside and outside hold the same names; only the outside ones say
	// the canary.
	for dir, word := range map[string]string{filepath.Join(r.root, "d"): "inside", r.outside: r.canary} {
		must(os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
		must(os.WriteFile(filepath.Join(dir, "f.txt"), []byte("needle "+word+"\n"), 0o644))
		must(os.WriteFile(filepath.Join(dir, "sub", "g.txt"), []byte("needle "+word+" deeper\n"), 0o644))
		must(os.WriteFile(filepath.Join(dir, "edit.txt"), []byte("x\n"), 0o644))
	}
	must(os.WriteFile(filepath.Join(r.outside, r.canary+".txt"), []byte("needle "+r.canary+"\n"), 0o644))
	must(os.Symlink(r.outside, filepath.Join(r.root, "swap")))
	r.before = testfiles.Snapshot(t, r.outside)
	return r
}

// attack swaps d and swap until stop is closed.
func (r *raceRig) attack(t *testing.T) {
	t.Helper()
	d, swap := filepath.Join(r.root, "d"), filepath.Join(r.root, "swap")
	go func() {
		defer close(r.stopped)
		for {
			select {
			case <-r.stop:
				return
			default:
			}
			if err := unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, swap, unix.RENAME_EXCHANGE); err != nil {
				t.Errorf("swap: %v", err)
				return
			}
			r.swaps.Add(1)
		}
	}()
	t.Cleanup(r.end)
}

// end stops the attacker and leaves d a real directory again.
func (r *raceRig) end() {
	select {
	case <-r.stop:
		return
	default:
	}
	close(r.stop)
	<-r.stopped
	d := filepath.Join(r.root, "d")
	if fi, err := os.Lstat(d); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		_ = unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, filepath.Join(r.root, "swap"), unix.RENAME_EXCHANGE)
	}
}

// race runs op n times under attack and fails the test for every result
// that shows the canary or for any change outside the workspace. op
// returns the text the model would see and whether the call succeeded.
func (r *raceRig) race(t *testing.T, n int, op func(i int) (string, bool)) {
	t.Helper()
	r.attack(t)
	escapes, ok, caught := 0, 0, 0
	// At least n calls, and on until a few have succeeded (a write through
	// the swapped folder succeeds only when every step of it finds the
	// folder in place, a few percent of calls), within a bound.
	calls := 0
	for ; calls < n || (ok < raceMinSuccesses && calls < 50*n); calls++ {
		i := calls
		text, good := op(i)
		// The root refused a component that was a symlink out when it was
		// opened, though it was a folder when the path was resolved: a
		// race that resolve-then-open lost.
		if strings.Contains(text, "leads out of it through a symbolic link") {
			caught++
		}
		if strings.Contains(text, r.canary) {
			if escapes++; escapes <= 3 {
				t.Errorf("call %d showed outside content: %s", i, text)
			}
		}
		if good {
			ok++
		}
	}
	r.end()
	if escapes > 0 {
		t.Errorf("%d of %d calls showed content from outside the workspace", escapes, calls)
	}
	after := testfiles.Snapshot(t, r.outside)
	for p, c := range after {
		if was, ok := r.before[p]; !ok {
			t.Errorf("created outside the workspace: %s", p)
		} else if was != c {
			t.Errorf("changed outside the workspace: %s (%q, was %q)", p, c, was)
		}
	}
	for p := range r.before {
		if _, ok := after[p]; !ok {
			t.Errorf("removed outside the workspace: %s", p)
		}
	}
	// The race must have happened, and the tool must have worked through
	// it, or the test proves nothing.
	if r.swaps.Load() < 10 || ok < raceMinSuccesses {
		t.Errorf("no real race: %d swaps, %d of %d calls succeeded", r.swaps.Load(), ok, calls)
	}
	t.Logf("%d calls: %d succeeded, %d stopped by the root mid-race, %d swaps, %d escapes", calls, ok, caught, r.swaps.Load(), escapes)
}

func (r *raceRig) call(t *testing.T, tool tools.Tool, args any) (string, bool) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tool.Run(t.Context(), r.s, raw)
	if err != nil {
		t.Fatalf("%s: Go error %v", tool.Spec().Name, err)
	}
	return res.Text, !res.IsError
}

// TestConfinementUnderRace races every file tool (the framework's and
// apply_patch) against a directory swapped with a symlink to outside the
// workspace. It lives here because tools' own tests cannot import this
// package.
func TestConfinementUnderRace(t *testing.T) {
	n := raceIterations(t)
	type args = map[string]any
	cases := []struct {
		name string
		op   func(t *testing.T, r *raceRig, i int) (string, bool)
	}{
		{"read_file", func(t *testing.T, r *raceRig, i int) (string, bool) {
			p := []string{"d/f.txt", "d/sub/g.txt", "d/edit.txt"}[i%3]
			return r.call(t, tools.ReadFile(), args{"path": p})
		}},
		{"grep_files", func(t *testing.T, r *raceRig, i int) (string, bool) {
			p := []string{".", "d", "d/sub", "d/f.txt"}[i%4]
			return r.call(t, tools.Grep(), args{"pattern": "needle", "path": p})
		}},
		{"grep_content", func(t *testing.T, r *raceRig, i int) (string, bool) {
			p := []string{".", "d", "d/sub", "d/f.txt"}[i%4]
			return r.call(t, tools.Grep(), args{"pattern": "needle", "path": p, "mode": "content", "context_lines": 1})
		}},
		{"find_files", func(t *testing.T, r *raceRig, i int) (string, bool) {
			p := []string{".", "d", "d/sub"}[i%3]
			return r.call(t, tools.FindFiles(), args{"pattern": "*", "path": p})
		}},
		{"list_dir", func(t *testing.T, r *raceRig, i int) (string, bool) {
			p := []string{".", "d", "d/sub"}[i%3]
			return r.call(t, tools.ListDir(), args{"path": p, "depth": 3})
		}},
		{"write_file", func(t *testing.T, r *raceRig, i int) (string, bool) {
			p := []string{fmt.Sprintf("d/w%d.txt", i), fmt.Sprintf("d/sub/new%d/w.txt", i), "d/w.txt"}[i%3]
			return r.call(t, tools.WriteFile(), args{"path": p, "content": fmt.Sprintf("written %d\n", i)})
		}},
		{"edit_file", func(t *testing.T, r *raceRig, i int) (string, bool) {
			if i%2 == 1 {
				return r.call(t, tools.EditFile(), args{"path": fmt.Sprintf("d/e%d.txt", i), "old_string": "", "new_string": "created\n"})
			}
			text, ok := r.call(t, tools.ReadFile(), args{"path": "d/edit.txt"})
			if !ok {
				return text, false
			}
			old, repl := "x", "y"
			if strings.Contains(text, "L1: y") {
				old, repl = "y", "x"
			}
			return r.call(t, tools.EditFile(), args{"path": "d/edit.txt", "old_string": old, "new_string": repl})
		}},
		{"apply_patch", func(t *testing.T, r *raceRig, i int) (string, bool) {
			patch := fmt.Sprintf("*** Begin Patch\n*** Add File: d/p%d.txt\n+patched %d\n*** End Patch", i, i)
			if i%2 == 1 {
				text, ok := r.call(t, tools.ReadFile(), args{"path": "d/edit.txt"})
				if !ok {
					return text, false
				}
				old, repl := "x", "y"
				if strings.Contains(text, "L1: y") {
					old, repl = "y", "x"
				}
				patch = fmt.Sprintf("*** Begin Patch\n*** Update File: d/edit.txt\n@@\n-%s\n+%s\n*** Add File: d/sub/q%d.txt\n+patched\n*** End Patch", old, repl, i)
			}
			return r.call(t, ApplyPatch(), args{"patch": patch})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRaceRig(t)
			r.race(t, n, func(i int) (string, bool) { return c.op(t, r, i) })
		})
	}
}
