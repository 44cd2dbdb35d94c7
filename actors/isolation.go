package actors

import (
	"context"
	"fmt"

	"github.com/troupe-ai/troupe/changes"
	"github.com/troupe-ai/troupe/tools"
)

// An agent that may change files works in a worktree of its own or in
// the workspace as package changes decides; it owns the whole lifecycle
// (snapshot, worktree, capture, landing, what is kept on an error,
// nested agents and their carry). The agents call it in three places:
// when a child starts (enter: changes.Run.Enter), when it ends, local
// or remote (end: changes.Child.End), and when the run ends (Team:
// changes.Run.Finish).

// isolated is one agent's part in the workspace lifecycle and the tools'
// view of its worktree.
type isolated struct {
	*changes.Child
	ws *tools.Workspace // its worktree's (nil: it works in its parent's directory)
}

// enter enters the child spec describes, its parent's part parent (nil
// for the root's children), into the run's isolation is: it gets its own
// worktree when is says so and it runs here (not elsewhere, on a node),
// else it works in its parent's directory. It must end (end) once it has
// ended or did not start.
func enter(ctx context.Context, is *changes.Run, parent *isolated, run string, spec agentSpec, elsewhere bool) (*isolated, error) {
	ch, err := is.Enter(ctx, parent.child(), changes.Entry{Run: run, ID: spec.id, ReadOnly: spec.kind.ReadOnly,
		Background: spec.background, Elsewhere: elsewhere})
	if err != nil || ch == nil {
		return nil, err
	}
	ci := ch.Isolated()
	if ci == nil {
		return &isolated{Child: ch}, nil
	}
	ws, err := openWorkspace(ci.Root(), ci.View())
	if err != nil {
		ch.End(ctx, changes.Ending{NotStarted: true})
		return nil, fmt.Errorf("isolate %s: %w", spec.id, err)
	}
	return &isolated{Child: ch, ws: ws}, nil
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

// child is iso's part in the lifecycle (nil for none).
func (iso *isolated) child() *changes.Child {
	if iso == nil {
		return nil
	}
	return iso.Child
}

// end ends the agent's part in the lifecycle (changes.Child.End), what
// became of its changes told to its parent's events ev, and closes its
// tools' view.
func (iso *isolated) end(ev *agentEvents, e changes.Ending) changes.Outcome {
	if iso == nil {
		return changes.Outcome{}
	}
	defer iso.closeView()
	e.Emit = emitTo(ev)
	return iso.End(context.Background(), e)
}

// closeView closes the tools' view of the agent's worktree.
func (iso *isolated) closeView() {
	if iso != nil && iso.ws != nil {
		_ = iso.ws.Close()
	}
}

// emitTo is ev's emit (nil for no events).
func emitTo(ev *agentEvents) changes.Emit {
	if ev == nil {
		return nil
	}
	return ev.emit
}

// dir is the directory the agent works in when it is not the run's
// workspace (nil: the run's).
func (s agentSpec) dir() *tools.Workspace {
	if s.iso != nil && s.iso.ws != nil {
		return s.iso.ws
	}
	return s.ws
}

// endRemote ends a remote child's part in the lifecycle with its result
// r (err: it could not be started at all): its changes, and those of its
// descendants the result carries, are taken in or refused (refused, r
// fails with the reason and carries no changes).
func endRemote(iso *isolated, ev *agentEvents, r *AgentResult, err error) {
	if iso == nil {
		return
	}
	if err != nil {
		iso.end(ev, changes.Ending{NotStarted: true})
		return
	}
	out := iso.end(ev, changes.Ending{Completed: r.Status == StatusCompleted, Remote: &changes.Remote{Node: r.Node,
		Changeset: r.Changeset, Changes: r.Changes, Err: r.ChangesErr, Nested: r.Nested, NestedErr: r.NestedErr}})
	r.Changes, r.NestedChanges = out.Changes, out.Nested
	if out.Refused != "" {
		r.Status, r.Reason, r.Err = StatusFailed, ReasonError, joinText(r.Err, out.Refused)
		r.Changeset, r.Nested, r.NestedErr = nil, nil, ""
	}
}

// joinText appends more to an error text.
func joinText(err, more string) string {
	if err == "" {
		return more
	}
	return err + "; " + more
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
