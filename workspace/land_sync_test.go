package workspace

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/messages"
)

// recordLand records, in order, what a land fsyncs ("sync <what>") and
// the steps it reaches ("step <step> <n>") while it runs.
func recordLand(t *testing.T) *[]string {
	t.Helper()
	var seen []string
	syncHook = func(what string) error { seen = append(seen, "sync "+what); return nil }
	landHook = func(step string, n int) error { seen = append(seen, fmt.Sprintf("step %s %d", step, n)); return nil }
	t.Cleanup(func() { syncHook, landHook = nil, nil })
	return &seen
}

// A land makes durable what its journal is about to say before it says
// it: the journal before the tree is touched, each new file's contents
// and every changed directory's names before "committing", every
// directory again after the renames and before "done".
func TestLandSyncsBeforeTheJournalSaysDone(t *testing.T) {
	c := newLandCase(t)
	seen := recordLand(t)
	out, err := c.r.Apply(t.Context(), c.snap, c.cs, ModeApply, "run1", "w")
	if err != nil || out.Status != messages.ChangeStatusApplied {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	at := func(s string, from int) int {
		i := slices.Index((*seen)[from:], s)
		if i < 0 {
			t.Fatalf("%q not seen after %d in %q", s, from, *seen)
		}
		return from + i
	}
	planned := at("step planned 0", 0)
	committing := at("sync marker committing", 0)
	lastRename := at("step renamed 4", 0)
	done := at("sync marker done", 0)
	if step := at("step done 4", 0); step < done {
		t.Errorf("the land went on as done before its marker was durable: %q", *seen)
	}
	journal := (*seen)[:planned]
	for _, want := range []string{".patch", ".json"} {
		if !slices.ContainsFunc(journal, func(s string) bool { return strings.HasPrefix(s, "sync journal ") && strings.HasSuffix(s, want) }) {
			t.Errorf("the journal's %s was not fsynced before the tree was touched: %q", want, journal)
		}
	}
	if !slices.Contains(journal, "sync journal land") {
		t.Errorf("the journals' directory was not fsynced before the tree was touched: %q", journal)
	}
	for _, f := range []string{"a.txt", "d/b.txt", "n/m/new.txt"} {
		if i := at("sync file "+f, planned); i > committing {
			t.Errorf("%s's new contents were fsynced after the journal said committing: %q", f, *seen)
		}
	}
	dirs := []string{"sync dir .", "sync dir d", "sync dir n", "sync dir n/m"}
	for _, d := range dirs {
		if i := at(d, planned); i > committing {
			t.Errorf("%s: the prepared names were not durable before committing: %q", d, *seen)
		}
		if i := at(d, lastRename); i > done {
			t.Errorf("%s: the renames were not durable before done: %q", d, *seen)
		}
	}
	if at("sync marker committing", 0) > at("step renamed 1", 0) {
		t.Errorf("a file was renamed before the journal durably said committing: %q", *seen)
	}
}

// A failed fsync anywhere in a land is an I/O error of the land: it
// rolls back (the workspace as it was, no journal left) and keeps the
// patch, which applies to the snapshot.
func TestLandFsyncFailureRollsBack(t *testing.T) {
	for _, tc := range []struct {
		what string
		nth  int // fail its nth fsync
	}{
		{"journal land", 1},
		{"file d/b.txt", 1},
		{"dir d", 1},
		{"marker committing", 1},
		{"dir d", 2},
		{"dir .", 2},
		{"marker done", 1},
	} {
		t.Run(fmt.Sprintf("%s_%d", tc.what, tc.nth), func(t *testing.T) {
			c := newLandCase(t)
			n := 0
			syncHook = func(what string) error {
				if what == tc.what {
					if n++; n == tc.nth {
						return errors.New("injected fsync failure (EIO)")
					}
				}
				return nil
			}
			defer func() { syncHook = nil }()
			out, err := c.r.Apply(t.Context(), c.snap, c.cs, ModeApply, "run1", "w")
			if n < tc.nth {
				t.Fatalf("the land fsynced %q %d times, want at least %d", tc.what, n, tc.nth)
			}
			if err == nil || out.Status != messages.ChangeStatusError || !strings.Contains(out.Error, "injected fsync failure") {
				t.Fatalf("outcome %+v, %v", out, err)
			}
			if got := diskFiles(t, c.root); !maps.Equal(got, c.before) {
				t.Errorf("after the failed fsync the workspace holds %v, want %v", got, c.before)
			}
			c.checkPatchKept(t, out.Patch)
			if names, _ := os.ReadDir(filepath.Join(c.r.home.dir, "land")); len(names) != 0 {
				t.Errorf("journal left after the rollback: %v", names)
			}
			if st := sh(t, c.root, "status", "--porcelain"); st != "" {
				t.Errorf("git status after the rollback:\n%s", st)
			}
		})
	}
}
