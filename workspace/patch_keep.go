package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/troupe-ai/troupe/messages"
)

// keepPatch writes patch to <state dir>/runs/<run>/changes/<agent>.patch
// (the data dir without a state dir) and returns the path (see
// KeepPatch).
func (r *Repo) keepPatch(run, agent string, patch []byte) (string, error) {
	dir := r.opts.StateDir
	if dir == "" {
		dir = r.dataDir
	}
	return KeepPatch(r.root, dir, run, agent, patch)
}

// KeepPatch writes patch as dir/runs/<run>/changes/<agent>.patch and
// returns its path: the one place troupe keeps a patch (the Repo's
// applies, the isolation's errors and nested carries). run and agent
// must each name a file: no separator, no leading dot, an ID the wire
// takes (messages.PathSafeID). Nothing below the trusted directory it is reached
// from is followed if it is a symlink (an error then, nothing written):
// the workspace root when dir is inside the workspace at root, else dir
// itself. A file at the patch's path is replaced, not written through.
func KeepPatch(root, dir, run, agent string, patch []byte) (string, error) {
	if !pathSafe(run) || !pathSafe(agent) || !messages.PathSafeID(run) || !messages.PathSafeID(agent) {
		return "", fmt.Errorf("keep patch: bad run %q or agent %q", run, agent)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("keep patch: %w", err)
	}
	rel := filepath.Join("runs", run, "changes", agent+".patch")
	base, at := anchor(root, dir)
	if err := writeBeneath(base, filepath.Join(at, rel), patch, 0o644); err != nil {
		return "", fmt.Errorf("keep patch: %w", err)
	}
	path := filepath.Join(dir, rel)
	if base == dir {
		// Outside the workspace (troupe's state directory): the patch is
		// troupe's alone, and nobody else's to write there.
		if err := os.Chmod(path, 0o600); err != nil {
			return "", fmt.Errorf("keep patch: %w", err)
		}
	}
	return path, nil
}

// pathSafe reports whether s may name a file: not empty, no separator,
// not starting with a dot.
func pathSafe(s string) bool {
	return s != "" && !strings.ContainsAny(s, `/\`+"\x00") && !strings.HasPrefix(s, ".")
}
