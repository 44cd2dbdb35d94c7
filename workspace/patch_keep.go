package workspace

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/troupe-ai/troupe/messages"
)

// keepPatch writes what patch writes to <state dir>/runs/<run>/changes/<agent>.patch
// (the data dir without a state dir), streaming, and returns the path
// (see KeepPatch).
func (r *Repo) keepPatch(run, agent string, patch patchWriter) (string, error) {
	dir := r.opts.StateDir
	if dir == "" {
		dir = r.dataDir
	}
	return keepPatchFrom(r.root, dir, run, agent, patch)
}

// changesetPatch is cs's patch: its own bytes when it carries them,
// else git's diff from the snapshot's tree to theirs (a tree this
// repository holds: theirTree), streamed from git straight to the file
// it is written to, so no buffer of ours ever holds the changeset.
func (r *Repo) changesetPatch(ctx context.Context, snap Snapshot, theirs string, cs messages.Changeset) patchWriter {
	if len(cs.Patch) > 0 {
		return patchBytes(cs.Patch)
	}
	return func(w io.Writer) error { return r.writeDiff(ctx, snap.Tree, theirs, w) }
}

// writeDiff writes the binary-safe patch from tree a to tree b to w as
// git diff-tree makes it (the patch a capture carries); an *os.File
// gets git's output directly.
func (r *Repo) writeDiff(ctx context.Context, a, b string, w io.Writer) error {
	cmd, err := r.g.command(ctx, "diff-tree", "-r", "--no-renames", "-p", "--binary", "--full-index", a, b)
	if err != nil {
		return err
	}
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = w, &limitedWriter{w: &stderr, n: 4 << 10}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("git diff-tree %.12s %.12s: %w: %s", a, b, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// limitedWriter keeps the first n bytes written to it and drops the rest.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if k := min(len(p), l.n); k > 0 {
		l.n -= k
		_, _ = l.w.Write(p[:k])
	}
	return len(p), nil
}

// KeepPatch writes patch as dir/runs/<run>/changes/<agent>.patch and
// returns its path: the one place troupe keeps a patch (the Repo's
// applies, the isolation's errors and nested carries). run and agent
// must each name a file: no separator, no leading dot, an ID the wire
// takes (messages.PathSafeID). Nothing below the trusted directory it is reached
// from is followed if it is a symlink (an error then, nothing written):
// the workspace root when dir is inside the workspace at root, else dir
// itself. A file at the patch's path is replaced, not written through.
// The folders runs, <run> and changes are the user's alone (0700), the
// patch too (0600): it holds what the agent wrote.
func KeepPatch(root, dir, run, agent string, patch []byte) (string, error) {
	return keepPatchFrom(root, dir, run, agent, patchBytes(patch))
}

// keepPatchFrom is KeepPatch with the patch written by patch, streaming,
// fsynced before it replaces what was at its path.
func keepPatchFrom(root, dir, run, agent string, patch patchWriter) (string, error) {
	if !pathSafe(run) || !pathSafe(agent) || !messages.PathSafeID(run) || !messages.PathSafeID(agent) {
		return "", fmt.Errorf("keep patch: bad run %q or agent %q", run, agent)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("keep patch: %w", err)
	}
	base, at := anchor(root, dir)
	if err := keepPrivate(base, at, []string{"runs", run, "changes"}, agent+".patch", patch); err != nil {
		return "", fmt.Errorf("keep patch: %w", err)
	}
	path := filepath.Join(dir, "runs", run, "changes", agent+".patch")
	return path, nil
}

// pathSafe reports whether s may name a file: not empty, no separator,
// not starting with a dot.
func pathSafe(s string) bool {
	return s != "" && !strings.ContainsAny(s, `/\`+"\x00") && !strings.HasPrefix(s, ".")
}

// KeepChangeset keeps cs's patch as <state dir>/runs/<run>/changes/<agent>.patch
// and returns its path: its own bytes when it carries them, else
// streamed from git's diff of the snapshot's tree to cs's (a tree this
// repository holds: a changeset of CaptureTree).
func (r *Repo) KeepChangeset(ctx context.Context, run, agent string, snap Snapshot, cs messages.Changeset) (string, error) {
	if len(cs.Patch) == 0 && cs.Tree == "" {
		return "", fmt.Errorf("keep patch of %s: the changeset carries neither a patch nor a tree", agent)
	}
	return r.keepPatch(run, agent, r.changesetPatch(ctx, snap, cs.Tree, cs))
}

// ChangesetPatch is cs's patch as bytes, for a changeset that must
// travel as bytes (a nested carry): its own, else git's diff of the
// snapshot's tree to cs's.
func (r *Repo) ChangesetPatch(ctx context.Context, snap Snapshot, cs messages.Changeset) ([]byte, error) {
	if len(cs.Patch) > 0 || cs.Tree == "" {
		return cs.Patch, nil
	}
	var b bytes.Buffer
	if err := r.writeDiff(ctx, snap.Tree, cs.Tree, &b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
