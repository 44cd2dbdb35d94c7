package actors

import (
	"context"
	"fmt"
	"sync"

	"github.com/troupe-ai/troupe/changes"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/tools"
)

// An agent that may change files works in a worktree of its own or in
// the workspace as package changes decides; it owns the whole lifecycle
// (snapshot, worktree, capture, landing, what is kept on an error,
// nested carry). The agent calls it in three places: when a child starts
// (enter), when it ends (land) and when the run ends (Team: Results,
// Close); a remote child's changes come back through bringRemote.

// isolated is one agent's worktree and the tools' view of it.
type isolated struct {
	*changes.Isolated
	ws *tools.Workspace
}

// enter gives the child spec describes its worktree when is (its
// parent's isolation for its children) says so (nil: it works in its
// parent's directory); leave is to be called once it has ended.
func enter(ctx context.Context, is *changes.Run, spec agentSpec) (*isolated, func(), error) {
	ci, leave, err := is.Enter(ctx, spec.kind.ReadOnly, spec.id, spec.background)
	if err != nil || ci == nil {
		return nil, leave, err
	}
	ws, err := openWorkspace(ci.Root(), ci.View())
	if err != nil {
		ci.Drop()
		leave()
		return nil, func() {}, fmt.Errorf("isolate %s: %w", spec.id, err)
	}
	return &isolated{Isolated: ci, ws: ws}, leave, nil
}

// openWorkspace is the tools' workspace at root: a view's (an overlay
// worktree's merged view, never resolved) when v says how its commands
// see it, else a plain one.
func openWorkspace(root string, v changes.View) (*tools.Workspace, error) {
	if v.Inside == "" {
		return tools.NewWorkspace(root)
	}
	return tools.NewWorkspaceView(root, tools.View{Inside: v.Inside, Enter: v.Enter})
}

// land brings the ended agent's changes back (changes.Isolated.Land),
// telling its parent's events, and closes its tools' view.
func (iso *isolated) land(ev *agentEvents, run, agent string, completed bool) *messages.ChangeOutcome {
	defer func() { _ = iso.ws.Close() }()
	return iso.Land(emitTo(ev), run, agent, completed)
}

// emitTo is ev's emit (nil for no events).
func emitTo(ev *agentEvents) changes.Emit {
	if ev == nil {
		return nil
	}
	return ev.emit
}

// nestedIsolation is an agent's isolation for its children, opened on
// the first delegation. Tool goroutines use it, hence its own mutex.
type nestedIsolation struct {
	mu sync.Mutex
	is *changes.Run
}

// dir is the directory the agent works in when it is not the run's
// workspace (nil: the run's).
func (s agentSpec) dir() *tools.Workspace {
	if s.iso != nil {
		return s.iso.ws
	}
	return s.ws
}

// childIsolation is the isolation the agent's children enter: the run's
// when the agent works in the run's workspace, else its own, rooted at
// its directory (changes.Run.Nested).
func (a *agent) childIsolation(ctx context.Context) (*changes.Run, error) {
	dir := a.spec.dir()
	if dir == nil || a.rt.iso == nil {
		return a.rt.iso, nil
	}
	n := &a.nested
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.is == nil {
		is, err := a.rt.iso.Nested(ctx, dir.Root(), a.rt.run, a.spec.id, a.rt.carry, a.log)
		if err != nil {
			return nil, err
		}
		n.is = is
	}
	return n.is, nil
}

// closeNested removes what the agent's isolation for its children kept;
// its children have ended.
func (a *agent) closeNested() {
	n := &a.nested
	n.mu.Lock()
	is := n.is
	n.is = nil
	n.mu.Unlock()
	is.EndNested()
}

// bringRemote takes in a remote child's changes (changes.Run.BringRemote),
// setting r.Changes to what became of them; refused, r fails with the
// reason and carries no changes. The nested changesets its result
// carries are kept too (r.NestedChanges).
func (rt *runtime) bringRemote(ev *agentEvents, agent string, r *AgentResult) {
	out, why := rt.iso.BringRemote(emitTo(ev), rt.run, agent, changes.Remote{Node: r.Node, Completed: r.Status == StatusCompleted,
		Changeset: r.Changeset, Changes: r.Changes, Err: r.ChangesErr})
	r.Changes = out
	if why != "" {
		r.Status, r.Reason, r.Err = StatusFailed, ReasonError, joinText(r.Err, why)
		r.Changeset, r.Nested, r.NestedErr = nil, nil, ""
	}
	if len(r.Nested) > 0 || r.NestedErr != "" {
		r.NestedChanges = rt.iso.BringNested(emitTo(ev), rt.run, agent, r.Node, r.Nested, r.NestedErr)
	}
}

// joinText appends more to an error text.
func joinText(err, more string) string {
	if err == "" {
		return more
	}
	return err + "; " + more
}

// discard removes the worktree of a child that did not start and counts
// it as ended.
func (s agentSpec) discard() {
	s.dropWorktree()
	if s.leave != nil {
		s.leave()
	}
}

// dropWorktree removes the child's worktree, if it has one.
func (s agentSpec) dropWorktree() {
	if s.iso != nil {
		_ = s.iso.ws.Close()
		s.iso.Drop()
	}
}

// mayChangeFiles reports whether a kind other than the root may change
// files: a run of such kinds may need worktrees.
func mayChangeFiles(kinds map[string]Kind) bool {
	for name, k := range kinds {
		if name != KindRoot && !k.ReadOnly {
			return true
		}
	}
	return false
}
