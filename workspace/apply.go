package workspace

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/troupe-ai/troupe/messages"
)

// Mode says what Apply does with a changeset.
type Mode string

// The apply modes.
const (
	// ModeApply merges the changeset into the working tree.
	ModeApply Mode = "apply"
	// ModeBranch commits it on troupe/<run8>/<agent> (branch.go); the working tree is untouched.
	ModeBranch Mode = "branch"
	// ModePatch only writes the patch file.
	ModePatch Mode = "patch"
)

// ParseMode checks a mode's name ("" is ModeApply).
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case "", ModeApply:
		return ModeApply, nil
	case ModeBranch, ModePatch:
		return Mode(s), nil
	}
	return "", fmt.Errorf("%w: %q (want apply, branch or patch)", ErrBadMode, s)
}

// Outcome is what Apply did with a changeset.
type Outcome = messages.ChangeOutcome

// Apply brings an agent's changeset into the workspace, as mode says. It
// is serialised per repository: changesets land in the order Apply is
// called. With ModeApply each file is merged three ways (the snapshot's
// version, the workspace's current one, the agent's); when any file
// conflicts nothing is written but the patch file
// <data dir>/runs/<run>/changes/<agent>.patch, and the outcome's status
// is conflict, with a nil error. An error means the changeset could not
// be read or the workspace not written.
func (r *Repo) Apply(ctx context.Context, snap Snapshot, cs messages.Changeset, mode Mode, run, agent string) (Outcome, error) {
	out := Outcome{Agent: agent}
	for _, f := range cs.Files {
		out.Files = append(out.Files, f.Path)
	}
	if cs.Empty() {
		out.Status = messages.ChangeStatusApplied
		return out, nil
	}
	unlock, err := r.lock("apply")
	if err != nil {
		return out, fmt.Errorf("apply changes of %s: %w", agent, err)
	}
	defer unlock()
	if err := r.recoverLands(); err != nil {
		return out, fmt.Errorf("apply changes of %s: %w", agent, err)
	}
	theirs, err := r.theirTree(ctx, snap, cs)
	if err != nil {
		return out, fmt.Errorf("apply changes of %s: %w", agent, err)
	}
	patch := r.changesetPatch(ctx, snap, theirs, cs)
	switch mode {
	case ModePatch:
		out.Status = messages.ChangeStatusPatch
		out.Patch, err = r.keepPatch(run, agent, patch)
	case ModeBranch:
		out.Status = messages.ChangeStatusBranch
		out.Branch, err = r.branch(ctx, snap, theirs, run, agent)
	case ModeApply, "":
		var m merged
		journaled := patch
		if len(cs.Patch) == 0 && r.bigLand(ctx, snap.Tree, theirs) {
			journaled = nil // the land's journal names the trees
		}
		if m, err = r.merge(ctx, snap, theirs, run, agent, journaled); err != nil {
			return r.keepOnError(out, run, agent, patch, err)
		}
		if len(m.conflicts) > 0 {
			out.Status, out.Conflicts, out.Reason = messages.ChangeStatusConflict, m.conflicts, m.reason()
			if outside := r.outsideCone(ctx, m.conflicts); len(outside) > 0 {
				out.Reason = strings.TrimPrefix(out.Reason+"; "+coneReason(outside), "; ")
			}
			out.Patch, err = r.keepPatch(run, agent, patch)
		} else {
			out.Status = messages.ChangeStatusApplied
		}
	default:
		err = fmt.Errorf("%w: %q", ErrBadMode, mode)
	}
	if err != nil {
		return out, fmt.Errorf("apply changes of %s: %w", agent, err)
	}
	return out, nil
}

// keepOnError is the outcome of a land that failed with err (rolled
// back, the workspace as it was): status error, the patch kept and
// named.
func (r *Repo) keepOnError(out Outcome, run, agent string, patch patchWriter, err error) (Outcome, error) {
	err = fmt.Errorf("apply changes of %s: %w", agent, err)
	out.Status, out.Error = messages.ChangeStatusError, err.Error()
	if path, kerr := r.keepPatch(run, agent, patch); kerr == nil {
		out.Patch = path
	} else {
		err = errors.Join(err, kerr)
	}
	return out, err
}

// theirTree is the tree of the agent's end state: the changeset's own
// when this repository holds it, else the snapshot with the patch applied.
func (r *Repo) theirTree(ctx context.Context, snap Snapshot, cs messages.Changeset) (string, error) {
	if cs.Tree != "" {
		typ, _, err := r.objects().read(ctx, cs.Tree)
		if err == nil && typ == "tree" {
			return cs.Tree, nil
		}
		if err != nil && !errors.Is(err, errMissing) {
			return "", err
		}
	}
	idx, done, err := r.tempIndex()
	if err != nil {
		return "", err
	}
	defer done()
	g := r.g.withIndex(idx)
	if _, err := g.run(ctx, nil, "read-tree", snap.Tree); err != nil {
		return "", err
	}
	if _, err := g.run(ctx, cs.Patch, "apply", "--cached", "--binary", "--whitespace=nowarn", "-"); err != nil {
		return "", fmt.Errorf("%w: %w", ErrBadChangeset, err)
	}
	return g.line(ctx, "write-tree")
}

// errOutside is returned for a changed path that would leave the work tree.
var errOutside = errors.New("path outside the work tree")
