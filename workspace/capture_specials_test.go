package workspace

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/messages"
)

// An agent that leaves fifos where git reads (a .gitignore at the top, a
// .gitattributes below) cannot stall its own capture or its salvage:
// they are removed first, and the agent's file is captured. (Before, git
// add waited on the fifo until the capture's deadline.) The deadline here
// only turns a hang into a failure.
func TestCaptureIsNotStalledByTheAgentsFifos(t *testing.T) {
	for _, salvage := range []bool{false, true} {
		r, _ := benchRepo(t, 20, Options{})
		snap, err := r.Snapshot(t.Context())
		must(t, err)
		w, err := r.NewWorktree(t.Context(), snap, "w")
		must(t, err)
		must(t, os.WriteFile(filepath.Join(w.Dir(), "new.txt"), []byte("x\n"), 0o644))
		fifos := []string{".gitignore", "pkg00/.gitattributes"}
		for _, f := range fifos {
			must(t, syscall.Mkfifo(filepath.Join(w.Dir(), f), 0o644))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		var cs messages.Changeset
		if salvage {
			cs, _, err = w.Salvage(ctx)
		} else {
			cs, err = w.CaptureTree(ctx)
		}
		cancel()
		if err != nil {
			t.Fatalf("salvage %v: %v", salvage, err)
		}
		if !slices.ContainsFunc(cs.Files, func(f messages.FileChange) bool { return f.Path == "new.txt" }) {
			t.Errorf("salvage %v: files %+v, want new.txt", salvage, cs.Files)
		}
		for _, f := range fifos {
			if _, err := os.Lstat(filepath.Join(w.Dir(), f)); err == nil {
				t.Errorf("salvage %v: the fifo %s is still there", salvage, f)
			}
		}
		must(t, w.Remove(t.Context()))
	}
}
