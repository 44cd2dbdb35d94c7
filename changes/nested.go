package changes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/workspace"
)

// An agent that works in a directory other than the run's workspace (a
// worktree of its own, or a node's worktree of its requester's snapshot)
// is the workspace of the agents it starts: a child sees that directory
// as it is (shared, or in a worktree of a snapshot of it) and its
// changes are merged into it, so they leave with the agent's own. Its
// children's worktrees and patches live under the run's data directory,
// in nested/<pid>-<run>-<agent>.
//
// A changeset that does not merge into the directory of the agent whose
// child made it (a conflict there, or a child that did not complete) is
// not lost with that directory: it goes home, to the requester, which
// keeps its patch as runs/<run>/changes/<agent>.patch under its state
// directory and reports it like a changeset of its own children (event,
// summary, run --json). Locally the run is that home; on a node the
// task's result carries the changesets there (taskCarry,
// messages.NestedChanges).

// keeper receives the changesets that did not merge into an agent's
// directory (out's status conflict, patch or error; patch writes its
// patch, streaming, so that none is held whole in memory).
// keep returns the outcome as the changeset's parent is to read it, and
// whether the changes events are to be emitted now (false: the
// requester emits them once the result arrives). A Run and a taskCarry
// are keepers.
type keeper interface {
	keep(run string, out messages.ChangeOutcome, patch func(io.Writer) error) (messages.ChangeOutcome, bool)
}

// keep makes the run the home of a nested changeset: its patch is
// written where the run's own conflicts go, and it joins the run's
// changes.
func (r *Run) keep(run string, out messages.ChangeOutcome, patch func(io.Writer) error) (messages.ChangeOutcome, bool) {
	path, err := r.keepPatch(run, out.Agent, patch)
	if err != nil {
		r.log.Error().Err(err).Str("agent", out.Agent).Msg("keep a nested agent's patch")
		out.Status, out.Error, out.Patch = messages.ChangeStatusError, err.Error(), ""
	} else {
		out.Patch = path
	}
	r.record(out)
	return out, true
}

// keepPatch writes patch as <state dir>/runs/<run>/changes/<agent>.patch
// (troupe's own, out of the agents' reach) and returns its path,
// following no symlink on the way (workspace.KeepPatch).
func (r *Run) keepPatch(run, agent string, patch func(io.Writer) error) (string, error) {
	return workspace.KeepPatchFrom(r.root, r.stateDir, run, agent, patch)
}

// taskCarry collects, on a node, the changesets of one task's descendants
// that did not merge into their parents' directories; they leave with
// the task's result, their patches spooled to files under dir
// (NestedChanges.PatchFile, removed once shipped).
type taskCarry struct {
	dir  string // where patches are spooled (a state directory)
	mu   sync.Mutex
	sets []messages.NestedChanges
}

// keep takes a changeset for the task's result; the parent reads where
// the requester will keep it (a path relative to its state directory).
// A patch that cannot be spooled is an error of the changeset's, said
// now.
func (c *taskCarry) keep(run string, out messages.ChangeOutcome, patch func(io.Writer) error) (messages.ChangeOutcome, bool) {
	p, err := workspace.SpoolPatch(c.dir, patch)
	if err != nil {
		out.Status, out.Error, out.Patch = messages.ChangeStatusError, "carry the changes home: "+err.Error(), ""
		return out, true
	}
	c.mu.Lock()
	c.sets = append(c.sets, messages.NestedChanges{Agent: out.Agent, Status: out.Status, Files: slices.Clone(out.Files),
		Conflicts: slices.Clone(out.Conflicts), PatchFile: p.Path, PatchSHA256: p.SHA256})
	c.mu.Unlock()
	out.Patch = filepath.Join("runs", run, "changes", out.Agent+".patch")
	return out, false
}

// take returns what was collected and forgets it.
func (c *taskCarry) take() []messages.NestedChanges {
	c.mu.Lock()
	defer c.mu.Unlock()
	sets := c.sets
	c.sets = nil
	return sets
}

// nestedFor opens the isolation of the children of agent, which works
// in root (not the run's workspace): their worktrees are snapshots of
// root and their changes are merged into it, always applied (what the
// run's changes mode says is done with the agent's whole changeset).
// What does not merge goes to carry (on a node), else to r, the run's.
// endNested removes it once the agent's children have ended.
func (r *Run) nestedFor(ctx context.Context, root, run, agent string, carry *taskCarry) (*Run, error) {
	log := r.log.With().Str("agent", agent).Logger()
	s := r.settings
	s.Changes = string(workspace.ModeApply)
	data := filepath.Join(r.dataDir, nestedDir, strconv.Itoa(os.Getpid())+"-"+run+"-"+agent)
	n, err := Open(ctx, s, Dirs{Root: root, Data: data, State: r.stateDir}, false, log)
	if err != nil {
		return nil, fmt.Errorf("isolate the children of %s: %w", agent, err)
	}
	n.home, n.anchor = r, r.root
	if carry != nil {
		n.home = carry
	}
	return n, nil
}

// endNested closes an agent's isolation for its children (nestedFor)
// and removes what it kept; the children have ended.
func (r *Run) endNested() {
	if r == nil {
		return
	}
	r.close()
	if err := workspace.RemoveBeneath(r.anchor, r.dataDir); err != nil {
		r.log.Warn().Err(err).Msg("remove the children's worktrees")
	}
}

// nestedDir holds, under the run's data directory, the data of agents'
// isolations for their children.
const nestedDir = "nested"

// pruneNested removes what processes no longer running left in
// dataDir/nested (following no symlink below root, the workspace); the
// worktrees' git records go with the repository's own prune.
func pruneNested(root, dataDir string) error {
	dir := filepath.Join(dataDir, nestedDir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("prune nested worktrees: %w", err)
	}
	for _, e := range entries {
		pid, _, ok := strings.Cut(e.Name(), "-")
		n, err := strconv.Atoi(pid)
		if !ok || err != nil || n <= 0 || n == os.Getpid() || syscall.Kill(n, 0) != syscall.ESRCH {
			continue
		}
		if err := workspace.RemoveBeneath(root, filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("prune nested worktrees: %w", err)
		}
	}
	return nil
}

// bringNested keeps the nested changesets a remote agent's result
// carries (nested, their patches fetched) as the run's patch files,
// emits changes.conflict or changes.applied (status patch) for each
// through emit (the remote agent's parent's events) and records them
// with the run's changes. Changesets the result could not bring (why,
// from node) are recorded as an error of the remote agent's. It returns
// the outcomes.
func (r *Run) bringNested(emit Emit, run, agent, node string, nested []messages.NestedChanges, why string) []messages.ChangeOutcome {
	var outs []messages.ChangeOutcome
	for _, n := range nested {
		out := messages.ChangeOutcome{Agent: n.Agent, Status: n.Status, Files: n.Files, Conflicts: n.Conflicts}
		if r == nil {
			out.Status, out.Error = messages.ChangeStatusError, "this process keeps no workspace to keep a remote agent's changes in"
			outs = append(outs, out)
			dropNestedSpools([]messages.NestedChanges{n})
			continue
		}
		out, _ = r.keep(run, out, workspace.PatchFrom(n.Patch, n.PatchFile))
		if n.PatchFile != "" {
			_ = os.Remove(n.PatchFile) // spooled by the transport
		}
		emitKept(emit, out)
		outs = append(outs, out)
	}
	if why != "" {
		out := messages.ChangeOutcome{Agent: agent, Status: messages.ChangeStatusError,
			Error: "changes of agents started by " + agent + " on its node: " + why}
		if r != nil {
			r.log.Warn().Str("agent", agent).Str("node", node).Str("error", why).Msg("nested changes refused")
			r.record(out)
		}
		outs = append(outs, out)
	}
	return outs
}

// spoolDir is where the run spools the patches of its task's nested
// carries: its state directory (troupe's own), else its data directory.
func (r *Run) spoolDir() string {
	if r.stateDir != "" {
		return r.stateDir
	}
	if r.dataDir != "" {
		return r.dataDir
	}
	return os.TempDir()
}
