package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/messages"
	gitws "github.com/troupe-ai/troupe/workspace"
)

// The requester's side of a remote result's changes. Nothing in them is
// taken on the node's word beyond the patch itself:
//
//   - a patch stored by reference in the changes bucket (which every node
//     may write) is used only if its bytes have the SHA-256 the proven
//     result names; so is an inline one that names its SHA-256;
//   - the snapshot the patch applies to is the one the run sent the task
//     (kept with the task, and in its record for a resumed run): a result
//     that names another is refused; the tree the patch makes and the
//     files it changes are derived from that snapshot and the patch by
//     the parent's side (actors, workspace.Repo.Derive), never read from
//     the result.
//
// A refusal fails the task with a sentence saying why; none of its
// changes is applied or kept, and the parent's side reports the refusal
// (changes.refused, and an error in the run's changes).

// receive checks and completes the changes of a result of the task agent,
// which the run sent the snapshot sent (nil: none). A patch that cannot
// be fetched is reported lost, as before; one that is not proven, or
// changes to a snapshot the run did not send, refuse the result's changes
// and fail the task.
func (r *Remote) receive(ctx context.Context, agent string, sent *messages.TaskSnapshot, res actors.AgentResult) actors.AgentResult {
	if res.Changeset == nil && len(res.Nested) == 0 {
		return res
	}
	if err := r.snaps.proveChanges(ctx, sent, &res); err != nil {
		r.refusedChanges.Add(1)
		r.o.Log.Warn().Err(err).Str("agent", agent).Str("node", res.Node).Msg("a remote agent's changes refused")
		return refuseChanges(agent, res, err)
	}
	return res
}

// proveChanges checks res's changeset against sent and fetches (proven)
// the patches stored by reference; see receive.
func (s *snapshotSender) proveChanges(ctx context.Context, sent *messages.TaskSnapshot, res *actors.AgentResult) error {
	if cs := res.Changeset; cs != nil {
		switch {
		case sent == nil:
			return fmt.Errorf("%w: the result carries changes to snapshot %.12s, and the run sent the task no snapshot", ErrForeignSnapshot, cs.Snapshot)
		case cs.Snapshot != sent.Commit || cs.SnapshotTree != "" && cs.SnapshotTree != sent.Tree:
			return fmt.Errorf("%w: the result names snapshot %.12s (tree %.12s) as the base of its changes; the run sent the task snapshot %.12s (tree %.12s)",
				ErrForeignSnapshot, cs.Snapshot, cs.SnapshotTree, sent.Commit, sent.Tree)
		}
		c := *cs
		c.SnapshotTree = sent.Tree // the run's own, never the wire's
		if err := s.receiveLFS(ctx, s.sentRepo(sent.Commit), &c); err != nil {
			return err
		}
		file, err := s.proven(ctx, "the changeset's patch", c.Patch, c.PatchRef, c.PatchSHA256)
		switch {
		case errors.Is(err, messages.ErrDigest):
			return err
		case err != nil:
			res.Changeset = nil
			res.Changes = &messages.ChangeOutcome{Agent: res.Agent, Status: messages.ChangeStatusError, Error: err.Error()}
		default:
			c.PatchFile, c.PatchRef = file, ""
			res.Changeset = &c
		}
	}
	var lost []string
	kept := make([]messages.NestedChanges, 0, len(res.Nested))
	for _, n := range res.Nested {
		file, err := s.proven(ctx, "the patch of "+n.Agent, n.Patch, n.PatchRef, n.PatchSHA256)
		switch {
		case errors.Is(err, messages.ErrDigest):
			removeSpooled(kept, res.Changeset)
			return err
		case err != nil:
			lost = append(lost, fmt.Sprintf("%s: %v", n.Agent, err))
			continue
		}
		n.PatchFile, n.PatchRef = file, ""
		kept = append(kept, n)
	}
	res.Nested = kept
	if len(lost) > 0 {
		res.NestedErr = joinErr(res.NestedErr, "get the patches of "+strings.Join(lost, "; "))
	}
	return nil
}

// proven checks a patch as the result names it: inline, against its
// SHA-256 when the result names one (it stays inline: file ""); or
// streamed from the changes bucket into a spooled file (returned; its
// user removes it), which must have the SHA-256 the result names
// (ErrDigest otherwise, nothing kept). No buffer holds a fetched patch
// whole.
func (s *snapshotSender) proven(ctx context.Context, what string, inline []byte, ref, digest string) (string, error) {
	if ref == "" {
		if digest != "" {
			if err := messages.CheckDigest(what, inline, digest); err != nil {
				return "", err
			}
		}
		return "", nil
	}
	what += " " + ref
	if digest == "" {
		// Checked before the fetch: a node of this troupe always names it.
		return "", messages.CheckDigest(what, nil, "")
	}
	if s == nil {
		return "", fmt.Errorf("get the patch %s: this run sends no snapshots and reads no changes bucket", ref)
	}
	ctx, cancel := context.WithTimeout(ctx, snapshotFetchTimeout)
	defer cancel()
	obs, err := s.r.o.Bus.JetStream().ObjectStore(ctx, s.r.o.Bus.Names().Changes)
	if err != nil {
		return "", fmt.Errorf("get the patch %s: %w", ref, err)
	}
	obj, err := obs.Get(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("get the patch %s: %w", ref, err)
	}
	defer obj.Close()
	p, err := gitws.SpoolReader(s.spool, what+" in the changes bucket", obj, digest)
	if errors.Is(err, messages.ErrDigest) {
		return "", fmt.Errorf("%w (another party wrote that object)", err)
	}
	if err != nil {
		return "", fmt.Errorf("get the patch %s: %w", ref, err)
	}
	return p.Path, nil
}

// sentRepo is the repository the run sent the snapshot commit from (nil
// when it sent none).
func (s *snapshotSender) sentRepo(commit string) *gitws.Repo {
	if s == nil {
		return nil
	}
	repo, ok := s.snd.Sent(commit)
	if !ok {
		return nil
	}
	return repo
}

// removeSpooled removes the patches proveChanges spooled for a result
// it then refused.
func removeSpooled(nested []messages.NestedChanges, cs *messages.Changeset) {
	for _, n := range nested {
		if n.PatchFile != "" {
			_ = os.Remove(n.PatchFile)
		}
	}
	if cs != nil && cs.PatchFile != "" {
		_ = os.Remove(cs.PatchFile)
	}
}

// refuseChanges fails the task whose result res is: none of its changes
// is applied or kept, and its changes outcome (status error) says why,
// for the parent's side to report.
func refuseChanges(agent string, res actors.AgentResult, err error) actors.AgentResult {
	why := fmt.Sprintf("the changes of %s were refused and nothing of them applied: %v", agent, err)
	if res.Node != "" {
		why = fmt.Sprintf("the changes of %s (from node %s) were refused and nothing of them applied: %v", agent, res.Node, err)
	}
	res.Status, res.Reason = actors.StatusFailed, actors.ReasonError
	res.Err = joinErr(res.Err, why)
	res.Changeset, res.Nested, res.NestedErr = nil, nil, ""
	res.Changes = &messages.ChangeOutcome{Agent: agent, Status: messages.ChangeStatusError, Error: why}
	return res
}
