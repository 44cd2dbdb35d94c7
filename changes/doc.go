// Package changes owns the workspace lifecycle of a run's agents:
// Snapshot → Worktree → Capture → Land, and what becomes of the
// outcome. Package workspace holds the mechanics (snapshots, worktrees,
// capture, the three-way merge-back, keeping a patch, and which of them
// is Go and which is git: see its documentation); this package holds the
// policy, and actors calls it in three places, passing what it knows:
// when an agent starts (Run.Enter, with its parent's Child: it returns
// the agent's Child), when it ends, local or remote (Child.End, with
// what a remote result says of its changes: it returns the Outcome) and
// when the run ends (Run.Finish: the run's outcomes). An agent placed
// on a node is entered as such (Entry.Elsewhere): no worktree is made
// for it here.
//
//   - Who gets a worktree (Enter): nobody with isolation: shared; every
//     agent that may change files with isolation: worktree; with auto,
//     an agent alone and in the foreground works in the workspace and
//     one that runs beside another (or in the background, or when the
//     changes mode is branch or patch) gets a worktree. The worktrees of
//     ended agents are kept for reuse, as many as the most agents seen
//     running at once (2 to 16), and two are made ahead when every
//     agent gets one.
//   - Landing (End): the worktree is captured, then its changeset
//     applied to the workspace, committed on a branch or written as a
//     patch, as the run's changes mode says (only a patch for an agent
//     that did not complete). On any error, the capture's or the
//     apply's, and when files were left out for their size, the
//     worktree is kept whole (renamed kept-*, never reset, parked or
//     removed) and the changeset's patch kept under the state directory;
//     the outcome, recorded with the run's changes (run --json), names
//     both. Otherwise the worktree goes back for reuse.
//   - Remote agents (End with Ending.Remote): a node's changeset is derived again
//     from the snapshot the run sent and the patch alone, then landed as
//     a local agent's; a patch that does not apply, or an end state the
//     result misstates, is refused, nothing applied.
//   - Nested agents (Enter with a parent's Child): an agent
//     working outside the run's workspace (in a worktree, or on a node:
//     Entry.Task) is the workspace of its own children; what does not
//     merge into its directory goes home: to the run, which keeps the
//     patch, or on a node into the task's result (Outcome.Carried),
//     which the requester keeps (the remote agent's End).
//   - Snapshots for remote tasks (Sender): each taken after its task was
//     placed, the tasks placed during one take sharing the next, a state
//     sent before answered with its first snapshot; the transport stores
//     a new one's objects.
//   - On a node (Node): a task carrying its requester's snapshot runs in
//     a worktree of it, its objects brought by the Transport (cluster's,
//     over NATS), captured for the result when the agent ends.
package changes
