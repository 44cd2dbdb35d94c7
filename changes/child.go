package changes

import (
	"context"
	"os"
	"sync"

	"github.com/troupe-ai/troupe/messages"
)

// Entry is what an agent's parent knows of a child about to start.
type Entry struct {
	Run, ID    string // the run's and the child's IDs
	ReadOnly   bool   // its kind may not change files
	Background bool   // it runs beside its parent (delegated in the background)
	// Task marks the first agent of a task sent by another process (on
	// a node): it works in Dir, its requester's snapshot checked out
	// there ("": the process's workspace), is not isolated here, and
	// what its descendants do not merge into Dir leaves with its result
	// (Outcome.Carried).
	Task bool
	Dir  string
	// Elsewhere marks a child placed on another node: no worktree is
	// made for it here (it works in its node's worktree of the snapshot
	// its task carries), it counts as running until it ends, and its
	// changes come with its result (End with Ending.Remote).
	Elsewhere bool
}

// Ending is what the actor knows of a child's end.
type Ending struct {
	Emit      Emit // its parent's events (nil: none)
	Completed bool // it completed (else its changes are kept only as a patch)
	// NotStarted: it never ran (its start failed); its worktree is
	// removed, nothing captured.
	NotStarted bool
	// Remote is, for a child that ran on a node, what its result says of
	// its changes (nil: it ran here).
	Remote *Remote
}

// Outcome is what became of a child's changes.
type Outcome struct {
	// Changes is what became of its own changeset (nil: it changed
	// nothing, or had no worktree).
	Changes *messages.ChangeOutcome
	// Refused is, when a remote child's changes were refused (nothing of
	// them applied), the sentence its result fails with.
	Refused string
	// Nested are the changesets of a remote child's descendants that its
	// result carried, as this run keeps them.
	Nested []messages.ChangeOutcome
	// Carried are, for a task's first agent (Entry.Task), its
	// descendants' changesets that did not merge into its directory: they
	// leave with its result (messages.NestedChanges).
	Carried []messages.NestedChanges
}

// Child is one agent's part in the run's workspace lifecycle, from Enter
// to End: its worktree, if it got one, the directory it works in, and its
// isolation for its own children, opened when the first of them enters.
// Its methods are safe for concurrent use; a nil *Child (a run without a
// workspace, or the run's root agent) works in the run's workspace and
// ends with nothing.
type Child struct {
	top   *Run       // the run's (Enter's receiver)
	in    *Run       // the isolation it entered: top, or its parent's for its children
	run   string     // the run's ID
	id    string     // the agent's
	dir   string     // the directory it works in when not the run's workspace ("": the run's)
	carry *taskCarry // on a node, where its task's descendants' changesets that do not merge go
	task  bool       // it is a task's first agent (Entry.Task)
	leave func()

	mu     sync.Mutex
	iso    *Isolated // its worktree (nil: none, or dropped)
	nested *Run      // its isolation for its children
	ended  bool
}

// Enter is called before an agent other than the run's root starts, with
// its parent's Child (nil for the root's children). It decides where the
// child works: in a worktree of its own (Isolated, when the isolation
// mode says so for an agent that may change files), or in its parent's
// directory. An agent that works outside the run's workspace (in its own
// worktree, or a node's task) is the workspace of its children: they
// enter its isolation, rooted at its directory, whose changesets that do
// not merge there go home (to the run, or on a node into the task's
// result). End must be called once the child has ended or did not start.
func (r *Run) Enter(ctx context.Context, parent *Child, e Entry) (*Child, error) {
	if r == nil {
		return nil, nil
	}
	c := &Child{top: r, in: r, run: e.Run, id: e.ID, leave: func() {}}
	if e.Task {
		c.dir, c.task, c.carry = e.Dir, true, &taskCarry{dir: r.spoolDir()}
		return c, nil
	}
	if parent != nil {
		in, err := parent.isolationForChildren(ctx)
		if err != nil {
			return nil, err
		}
		c.in, c.dir, c.carry = in, parent.dir, parent.carry
	}
	iso, leave, err := c.in.enter(ctx, e)
	if err != nil {
		return nil, err
	}
	c.iso, c.leave = iso, leave
	if iso != nil {
		c.dir = iso.Root()
	}
	return c, nil
}

// isolationForChildren is the isolation c's children enter: the run's
// when c works in the run's workspace, else its own, rooted at its
// directory (opened the first time).
func (c *Child) isolationForChildren(ctx context.Context) (*Run, error) {
	if c.dir == "" {
		return c.top, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nested == nil {
		n, err := c.top.nestedFor(ctx, c.dir, c.run, c.id, c.carry)
		if err != nil {
			return nil, err
		}
		c.nested = n
	}
	return c.nested, nil
}

// Isolated is the child's worktree (nil: it works in its parent's
// directory, or the run's workspace).
func (c *Child) Isolated() *Isolated {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.iso
}

// Root is the directory the child works in when it is not the run's
// workspace: its worktree's, its parent's or its task's ("": the run's
// workspace).
func (c *Child) Root() string {
	if c == nil {
		return ""
	}
	return c.dir
}

// drop removes the child's worktree, if it still has one, capturing
// nothing.
func (c *Child) drop() {
	c.mu.Lock()
	iso := c.iso
	c.iso = nil
	c.mu.Unlock()
	iso.Drop()
}

// End is called once the child has ended (or did not start): its
// children have ended too, so its isolation for them is closed; then
// what it changed is brought back as the run's changes mode says (a
// local child's worktree landed; a remote child's changes, and those of
// its descendants its result carries, taken in or refused) and it no
// longer counts as running. A second call returns nothing.
func (c *Child) End(ctx context.Context, e Ending) Outcome {
	if c == nil {
		return Outcome{}
	}
	c.mu.Lock()
	ended := c.ended
	c.ended = true
	nested := c.nested
	c.nested = nil
	c.mu.Unlock()
	if ended {
		return Outcome{}
	}
	defer c.leave()
	nested.endNested()
	var out Outcome
	switch {
	case e.NotStarted:
		c.drop()
	case e.Remote != nil:
		c.drop() // nothing, when it entered Elsewhere
		out = c.top.bringBack(e, c.run, c.id)
	default:
		if iso := c.Isolated(); iso != nil {
			out.Changes = iso.land(ctx, e.Emit, c.run, c.id, e.Completed)
		}
	}
	if c.task {
		out.Carried = c.carry.take()
	}
	return out
}

// bringBack takes in a remote child's changes (bringRemote) and, unless
// they were refused, the changesets of its descendants its result
// carries (bringNested).
func (r *Run) bringBack(e Ending, run, agent string) Outcome {
	rc := *e.Remote
	var out Outcome
	out.Changes, out.Refused = r.bringRemote(e.Emit, run, agent, e.Completed, rc)
	switch {
	case out.Refused != "":
		dropNestedSpools(rc.Nested) // never brought: their spooled patches go with the refusal
	case len(rc.Nested) > 0 || rc.NestedErr != "":
		out.Nested = r.bringNested(e.Emit, run, agent, rc.Node, rc.Nested, rc.NestedErr)
	}
	return out
}

// dropNestedSpools removes the patches the transport spooled for
// nested changesets that are not brought.
func dropNestedSpools(nested []messages.NestedChanges) {
	for _, n := range nested {
		if n.PatchFile != "" {
			_ = os.Remove(n.PatchFile)
		}
	}
}

// Finish is called once when the run has ended: it removes the worktrees
// kept for reuse and returns the outcomes of the run's changesets, in
// the order they were brought back (run --json's changes).
func (r *Run) Finish() []messages.ChangeOutcome {
	if r == nil {
		return nil
	}
	r.close()
	return r.results()
}
