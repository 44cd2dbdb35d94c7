package actors

import (
	"context"
	"fmt"
	"github.com/troupe-ai/troupe/changes"

	"github.com/troupe-ai/troupe/budget"
	"github.com/troupe-ai/troupe/tools"
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
	return h.StartAgentInView(trace, task, svc, artifacts, root, changes.View{}, events)
}

// StartAgentInView is StartAgentWith whose root is a view (an overlay
// worktree's, tools.NewWorkspaceView) when v names how its commands see
// it (v.Inside not empty).
func (h *Host) StartAgentInView(trace context.Context, task ChildTask, svc budget.Service, artifacts tools.ArtifactStore, root string,
	v changes.View, events Emitter) (*AgentHandle, error) {
	if root == "" {
		return h.startAgent(trace, task, svc, artifacts, nil, events)
	}
	ws, err := openWorkspace(root, v)
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
