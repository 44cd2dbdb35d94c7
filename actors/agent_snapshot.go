package actors

import (
	"context"
	"fmt"
	"time"

	"github.com/troupe-ai/troupe/budget"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/workspace"
)

// StartAgentIn is StartAgentUnder with the agent working in the directory
// root instead of the host's workspace: a node runs a task that carries
// its requester's snapshot in a worktree of that snapshot. Its tools,
// sandbox included, are confined to root.
func (h *Host) StartAgentIn(trace context.Context, task ChildTask, svc budget.Service, artifacts tools.ArtifactStore, root string) (*AgentHandle, error) {
	return h.StartAgentWith(trace, task, svc, artifacts, root, nil)
}

// StartAgentWith is StartAgentIn (root "": the host's workspace) whose
// agent's events, and those of every agent it starts, go to events
// instead of the host's emitter (nil: the host's), with the host's
// secrets masked: a node gives each task an emitter that keeps them in
// the node and relays them to the run's requester under the proof of the
// task's delivery.
func (h *Host) StartAgentWith(trace context.Context, task ChildTask, svc budget.Service, artifacts tools.ArtifactStore, root string,
	events Emitter) (*AgentHandle, error) {
	if root == "" {
		return h.startAgent(trace, task, svc, artifacts, nil, events)
	}
	ws, err := tools.NewWorkspace(root)
	if err != nil {
		return nil, fmt.Errorf("start agent: %w", err)
	}
	ah, err := h.startAgent(trace, task, svc, artifacts, ws, events)
	if err != nil {
		_ = ws.Close()
		return nil, err
	}
	go func() {
		<-ah.done
		_ = ws.Close()
	}()
	return ah, nil
}

// bringRemote takes in a remote child's changes (r.Changeset), setting
// r.Changes to what became of them. The changeset is derived here, from
// the snapshot the requester sent the task (the RemoteChild sets
// Changeset.Snapshot and SnapshotTree to it, never to the node's word)
// and the patch alone: the tree it merges and the files it shows are
// computed, and a result that names another end state than its patch
// makes is refused. Derived, it is merged as a local child's would be:
// completed, as the run's changes mode says; otherwise only as a patch
// file. A refusal (here, or by the RemoteChild: r.Changes with status
// error and no changeset) applies nothing, fails r with a sentence,
// emits changes.refused through ev and is recorded with the run's
// changes.
func (is *isolation) bringRemote(ev *agentEvents, run, agent string, r *AgentResult) {
	cs := r.Changeset
	if cs.Empty() && cs != nil && len(cs.Oversize) > 0 && is != nil {
		r.Changes = is.onlyOversize(agent, *cs, nil)
		return
	}
	if cs.Empty() {
		if out := r.Changes; out != nil && out.Status == messages.ChangeStatusError {
			is.refused(ev, agent, r.Node, *out)
		}
		return
	}
	if is == nil {
		r.Changes = &messages.ChangeOutcome{Agent: agent, Status: messages.ChangeStatusError,
			Error: "this process keeps no workspace to apply a remote agent's changes to"}
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	snap := workspace.Snapshot{Commit: cs.Snapshot, Tree: cs.SnapshotTree}
	derived, err := is.derive(ctx, snap, *cs)
	if err != nil {
		why := fmt.Sprintf("the changes of %s were refused and nothing of them applied: %v", agent, err)
		if r.Node != "" {
			why = fmt.Sprintf("the changes of %s (from node %s) were refused and nothing of them applied: %v", agent, r.Node, err)
		}
		r.Status, r.Reason, r.Err = StatusFailed, ReasonError, joinText(r.Err, why)
		r.Changeset, r.Nested, r.NestedErr = nil, nil, ""
		r.Changes = &messages.ChangeOutcome{Agent: agent, Status: messages.ChangeStatusError, Error: why}
		is.refused(ev, agent, r.Node, *r.Changes)
		return
	}
	mode := is.changes
	if r.Status != StatusCompleted {
		mode = workspace.ModePatch
	}
	derived.Oversize = cs.Oversize
	r.Changes = is.bring(ctx, ev, run, agent, snap, derived, mode)
}

// derive is the changeset cs's patch makes of snap, computed by the
// workspace's repository; a tree cs names that differs from it is an
// error (nothing is applied).
func (is *isolation) derive(ctx context.Context, snap workspace.Snapshot, cs messages.Changeset) (messages.Changeset, error) {
	repo, err := is.open(ctx)
	if err != nil {
		return cs, err
	}
	derived, err := repo.Derive(ctx, snap, cs.Patch)
	if err != nil {
		return cs, fmt.Errorf("its patch does not apply to the snapshot %.12s the run sent it: %w", snap.Commit, err)
	}
	if cs.Tree != "" && cs.Tree != derived.Tree {
		return cs, fmt.Errorf("its result names %.12s as the tree of its end state, and its patch applied to the snapshot %.12s the run sent it makes %.12s",
			cs.Tree, snap.Commit, derived.Tree)
	}
	return derived, nil
}

// refused reports a remote child's changes that were not taken in: a
// warning, changes.refused through ev, and the outcome in the run's
// changes.
func (is *isolation) refused(ev *agentEvents, agent, node string, out messages.ChangeOutcome) {
	if ev != nil {
		ev.emit(messages.EvtChangesRefused, messages.ChangesRefused{Agent: agent, Node: node, Reason: out.Error})
	}
	if is == nil {
		return
	}
	is.log.Warn().Str("agent", agent).Str("node", node).Str("error", out.Error).Msg("a remote agent's changes refused")
	is.mu.Lock()
	is.outcomes = append(is.outcomes, out)
	is.mu.Unlock()
}

// joinText appends more to an error text.
func joinText(err, more string) string {
	if err == "" {
		return more
	}
	return err + "; " + more
}
