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
	ws, err := tools.NewWorkspace(root)
	if err != nil {
		return nil, fmt.Errorf("start agent: %w", err)
	}
	ah, err := h.startAgent(trace, task, svc, artifacts, ws)
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

// bringRemote merges a remote child's changeset (r.Changeset) into the
// workspace as a local child's would be: completed, as the run's changes
// mode says; otherwise only as a patch file. It emits the changes events
// through ev and returns what became of the changes.
func (is *isolation) bringRemote(ev *agentEvents, run, agent string, r AgentResult) *messages.ChangeOutcome {
	cs := r.Changeset
	if is == nil {
		return &messages.ChangeOutcome{Agent: agent, Status: messages.ChangeStatusError,
			Error: "this process keeps no workspace to apply a remote agent's changes to"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	mode := is.changes
	if r.Status != StatusCompleted {
		mode = workspace.ModePatch
	}
	snap := workspace.Snapshot{Commit: cs.Snapshot, Tree: cs.SnapshotTree}
	return is.bring(ctx, ev, run, agent, snap, *cs, mode)
}
