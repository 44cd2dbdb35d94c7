package changes

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/workspace"
)

// Remote is what a remote child's result says of its changes.
type Remote struct {
	Node      string              // the node that ran it
	Changeset *messages.Changeset // its changes, their snapshot the one the run sent it
	// Changes, when set with status error and no changeset, is the
	// transport's refusal of the changes (cluster's proof failed).
	Changes *messages.ChangeOutcome
	// Err says why the node could not capture or send the changes, and
	// where it kept them.
	Err string
	// Nested are the changesets of its descendants that did not merge
	// into their parents' directories on the node (their patches
	// fetched); NestedErr says why others could not be brought.
	Nested    []messages.NestedChanges
	NestedErr string
}

// bringRemote takes in a remote child's changes and returns what became
// of them, and, when they were refused, the sentence the child's result
// fails with (it then carries no changes). The changeset is derived here,
// from the snapshot the requester sent the task (the transport sets
// Changeset.Snapshot and SnapshotTree to it, never to the node's word)
// and the patch alone: the tree it merges and the files it shows are
// computed, and a result that names another end state than its patch
// makes is refused. Derived, it is merged as a local child's would be:
// completed, as the run's changes mode says; otherwise only as a patch
// file. A refusal (here, or by the transport) applies nothing, emits
// changes.refused and is recorded with the run's changes.
func (r *Run) bringRemote(emit Emit, run, agent string, completed bool, rc Remote) (out *messages.ChangeOutcome, refused string) {
	cs := rc.Changeset
	if cs != nil && cs.PatchFile != "" {
		defer os.Remove(cs.PatchFile) // spooled by the transport; derived, it is in the object store
	}
	if cs == nil && rc.Err != "" && rc.Changes == nil {
		return r.unsent(agent, rc), ""
	}
	if cs.Empty() && cs != nil && len(cs.Oversize) > 0 && r != nil {
		return r.onlyOversize(agent, *cs, nil), ""
	}
	if cs.Empty() {
		if out := rc.Changes; out != nil && out.Status == messages.ChangeStatusError {
			r.refused(emit, agent, rc.Node, *out)
		}
		return rc.Changes, ""
	}
	if r == nil {
		return &messages.ChangeOutcome{Agent: agent, Status: messages.ChangeStatusError,
			Error: "this process keeps no workspace to apply a remote agent's changes to"}, ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), landTimeout)
	defer cancel()
	snap := workspace.Snapshot{Commit: cs.Snapshot, Tree: cs.SnapshotTree}
	if repo, err := r.open(ctx); err == nil {
		snap.Base = repo.SnapshotBase(ctx, cs.Snapshot) // the run's own snapshot commit (the transport proved it)
	}
	derived, err := r.derive(ctx, snap, *cs)
	if err != nil {
		why := fmt.Sprintf("the changes of %s were refused and nothing of them applied: %v", agent, err)
		if rc.Node != "" {
			why = fmt.Sprintf("the changes of %s (from node %s) were refused and nothing of them applied: %v", agent, rc.Node, err)
		}
		out := &messages.ChangeOutcome{Agent: agent, Status: messages.ChangeStatusError, Error: why}
		r.refused(emit, agent, rc.Node, *out)
		return out, why
	}
	if out := r.lfsRefused(ctx, emit, run, agent, rc.Node, snap, derived); out != nil {
		return out, out.Error
	}
	mode := r.changes
	if !completed {
		mode = workspace.ModePatch
	}
	derived.Oversize = cs.Oversize
	return r.bring(ctx, emit, run, agent, snap, derived, mode, nil), ""
}

// lfsRefused refuses a derived changeset whose pointers name git lfs
// objects the workspace's storage does not hold (they did not arrive
// with it): nothing is applied, its patch is kept and the outcome (status
// error) says which objects and where the patch is. nil when it may land.
func (r *Run) lfsRefused(ctx context.Context, emit Emit, run, agent, node string, snap workspace.Snapshot,
	cs messages.Changeset) *messages.ChangeOutcome {
	repo, err := r.open(ctx)
	if err == nil {
		err = lfsArrived(ctx, repo, snap, cs)
	}
	if err == nil {
		return nil
	}
	why := fmt.Sprintf("the changes of %s (from node %s) were refused and nothing of them applied: %v", agent, node, err)
	out := &messages.ChangeOutcome{Agent: agent, Status: messages.ChangeStatusError, Error: why}
	for _, f := range cs.Files {
		out.Files = append(out.Files, f.Path)
	}
	if path, kerr := r.keepChangeset(ctx, repo, run, agent, snap, cs); kerr == nil {
		out.Patch = path
		out.Error += "; its patch is kept at " + path
	} else {
		r.log.Error().Err(kerr).Str("agent", agent).Msg("keep the patch of changes refused")
	}
	r.refused(emit, agent, node, *out)
	return out
}

// derive is the changeset cs's patch makes of snap, computed by the
// workspace's repository; a tree cs names that differs from it is an
// error (nothing is applied).
func (r *Run) derive(ctx context.Context, snap workspace.Snapshot, cs messages.Changeset) (messages.Changeset, error) {
	repo, err := r.open(ctx)
	if err != nil {
		return cs, err
	}
	var derived messages.Changeset
	if cs.Pack {
		derived, err = r.derivePack(ctx, repo, snap, cs)
	} else if cs.PatchFile != "" {
		derived, err = repo.DeriveFile(ctx, snap, workspace.PatchFile{Path: cs.PatchFile, SHA256: cs.PatchSHA256})
	} else {
		derived, err = repo.Derive(ctx, snap, cs.Patch)
	}
	if err != nil {
		return cs, fmt.Errorf("its patch does not apply to the snapshot %.12s the run sent it: %w", snap.Commit, err)
	}
	if !cs.Pack && cs.Tree != "" && cs.Tree != derived.Tree {
		return cs, fmt.Errorf("its result names %.12s as the tree of its end state, and its patch applied to the snapshot %.12s the run sent it makes %.12s",
			cs.Tree, snap.Commit, derived.Tree)
	}
	return derived, nil
}

// derivePack is derive of a changeset that came as a pack: inline, or
// spooled to a file by the transport.
func (r *Run) derivePack(ctx context.Context, repo *workspace.Repo, snap workspace.Snapshot, cs messages.Changeset) (messages.Changeset, error) {
	var pack io.Reader = bytes.NewReader(cs.Patch)
	if cs.PatchFile != "" {
		f, err := os.Open(cs.PatchFile)
		if err != nil {
			return cs, err
		}
		defer f.Close()
		pack = f
	}
	return repo.DerivePack(ctx, snap, cs.Tree, pack)
}

// refused reports a remote child's changes that were not taken in: a
// warning, changes.refused through emit, and the outcome in the run's
// changes.
func (r *Run) refused(emit Emit, agent, node string, out messages.ChangeOutcome) {
	if emit != nil {
		emit(messages.EvtChangesRefused, messages.ChangesRefused{Agent: agent, Node: node, Reason: out.Error})
	}
	if r == nil {
		return
	}
	r.log.Warn().Str("agent", agent).Str("node", node).Str("error", out.Error).Msg("a remote agent's changes refused")
	r.record(out)
}

// unsent is the outcome of a remote agent whose node could not capture
// or send its changes (rc.Err, which says where the node kept them):
// status error, recorded with the run's changes, nothing applied.
func (r *Run) unsent(agent string, rc Remote) *messages.ChangeOutcome {
	out := &messages.ChangeOutcome{Agent: agent, Status: messages.ChangeStatusError,
		Error: "its changes did not come back from node " + rc.Node + ": " + rc.Err}
	if r != nil {
		r.log.Warn().Str("agent", agent).Str("node", rc.Node).Str("error", rc.Err).Msg("a remote agent's changes did not come back")
		r.record(*out)
	}
	return out
}
