package actors

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/workspace"
)

// A changeset that does not merge into the directory of the agent whose
// child made it (a conflict there, or a child that did not complete) is
// not lost with that directory: it goes home, to the requester, which
// keeps its patch as runs/<run>/changes/<agent>.patch under its data
// directory and reports it like a changeset of its own children (event,
// summary, run --json). Locally the run's isolation is that home; on a
// node the task's result carries the changesets there
// (AgentResult.Nested, messages.NestedChanges).

// nestedHome receives the changesets that did not merge into an agent's
// directory (out's status conflict or patch, patch its bytes). keep
// returns the outcome as the changeset's parent is to read it, and
// whether the changes events are to be emitted now (false: the requester
// emits them once the result arrives).
type nestedHome interface {
	keep(run string, out messages.ChangeOutcome, patch []byte) (messages.ChangeOutcome, bool)
}

// keep makes the run's isolation the home of a nested changeset: its
// patch is written where the run's own conflicts go, and it joins the
// run's changes.
func (is *isolation) keep(run string, out messages.ChangeOutcome, patch []byte) (messages.ChangeOutcome, bool) {
	path, err := is.keepPatch(run, out.Agent, patch)
	if err != nil {
		is.log.Error().Err(err).Str("agent", out.Agent).Msg("keep a nested agent's patch")
		out.Status, out.Error, out.Patch = messages.ChangeStatusError, err.Error(), ""
	} else {
		out.Patch = path
	}
	is.mu.Lock()
	is.outcomes = append(is.outcomes, out)
	is.mu.Unlock()
	return out, true
}

// keepPatch writes patch as <state dir>/runs/<run>/changes/<agent>.patch
// (troupe's own, out of the agents' reach) and returns its path,
// following no symlink on the way (workspace.KeepPatch).
func (is *isolation) keepPatch(run, agent string, patch []byte) (string, error) {
	return workspace.KeepPatch(is.root, is.stateDir, run, agent, patch)
}

// nestedCarry collects, on a node, the changesets of one task's
// descendants that did not merge into their parents' directories; they
// leave with the task's result. Its zero value is ready.
type nestedCarry struct {
	mu   sync.Mutex
	sets []messages.NestedChanges
}

// keep takes a changeset for the task's result; the parent reads where
// the requester will keep it (a path relative to its state directory).
func (c *nestedCarry) keep(run string, out messages.ChangeOutcome, patch []byte) (messages.ChangeOutcome, bool) {
	c.mu.Lock()
	c.sets = append(c.sets, messages.NestedChanges{Agent: out.Agent, Status: out.Status, Files: slices.Clone(out.Files),
		Conflicts: slices.Clone(out.Conflicts), Patch: slices.Clone(patch)})
	c.mu.Unlock()
	out.Patch = filepath.Join("runs", run, "changes", out.Agent+".patch")
	return out, false
}

// take returns what was collected and forgets it.
func (c *nestedCarry) take() []messages.NestedChanges {
	c.mu.Lock()
	defer c.mu.Unlock()
	sets := c.sets
	c.sets = nil
	return sets
}

// home is where the changesets that do not merge into an agent's
// directory go: the task's result on a node, else the run's isolation.
func (rt *runtime) home() nestedHome {
	if rt.carry != nil {
		return rt.carry
	}
	return rt.iso
}

// bringNested keeps the nested changesets a remote agent's result carries
// (r.Nested, their patches fetched) as the run's patch files, emits
// changes.conflict or changes.applied (status patch) for each through ev
// (the remote agent's parent's events) and records them with the run's
// changes. Changesets the result could not bring (r.NestedErr) are
// recorded as an error of the remote agent's. It returns the outcomes.
func (is *isolation) bringNested(ev *agentEvents, run, agent string, r AgentResult) []messages.ChangeOutcome {
	var outs []messages.ChangeOutcome
	for _, n := range r.Nested {
		out := messages.ChangeOutcome{Agent: n.Agent, Status: n.Status, Files: n.Files, Conflicts: n.Conflicts}
		if is == nil {
			out.Status, out.Error = messages.ChangeStatusError, "this process keeps no workspace to keep a remote agent's changes in"
			outs = append(outs, out)
			continue
		}
		out, _ = is.keep(run, out, n.Patch)
		emitKept(ev, out)
		outs = append(outs, out)
	}
	if r.NestedErr != "" {
		out := messages.ChangeOutcome{Agent: agent, Status: messages.ChangeStatusError,
			Error: "changes of agents started by " + agent + " on its node: " + r.NestedErr}
		if is != nil {
			is.log.Warn().Str("agent", agent).Str("node", r.Node).Str("error", r.NestedErr).Msg("nested changes refused")
			is.mu.Lock()
			is.outcomes = append(is.outcomes, out)
			is.mu.Unlock()
		}
		outs = append(outs, out)
	}
	return outs
}

// emitKept emits the event of a changeset kept as a patch file:
// changes.conflict, or changes.applied with status patch.
func emitKept(ev *agentEvents, out messages.ChangeOutcome) {
	if ev == nil {
		return
	}
	switch out.Status {
	case messages.ChangeStatusConflict:
		ev.emit(messages.EvtChangesConflict, messages.ChangesConflict{Agent: out.Agent, Files: out.Conflicts, Patch: out.Patch, Reason: out.Reason})
	case messages.ChangeStatusPatch:
		ev.emit(messages.EvtChangesApplied, messages.ChangesApplied{Agent: out.Agent, Status: out.Status, Files: out.Files, Patch: out.Patch})
	}
}

// nestedNote is what a parent reads about the changesets of its remote
// child's (agent's) descendants that the requester kept.
func nestedNote(agent string, outs []messages.ChangeOutcome) string {
	var b strings.Builder
	for _, c := range outs {
		if c.Agent == agent {
			fmt.Fprintf(&b, "\n[changes of the agents %s started on its node: could not be brought back: %s]", agent, c.Error)
			continue
		}
		b.WriteString(strings.Replace(changesNote(&c), "[changes:", "[changes of "+c.Agent+", started by "+agent+" on its node:", 1))
	}
	return b.String()
}

// onlyOversize is the outcome of a changeset that carries nothing but
// files left out for their size: status error, naming them (onError,
// when set, keeps the worktree that holds them); nil when there are none.
func (is *isolation) onlyOversize(agent string, cs messages.Changeset, onError func(*messages.ChangeOutcome)) *messages.ChangeOutcome {
	if len(cs.Oversize) == 0 {
		return nil
	}
	out := messages.ChangeOutcome{Agent: agent, Status: messages.ChangeStatusError, Oversize: cs.Oversize,
		Error: "every file it changed is over agent.max_change_bytes: " + oversizeList(cs.Oversize)}
	for _, f := range cs.Oversize {
		out.Files = append(out.Files, f.Path)
	}
	if onError != nil {
		onError(&out)
	}
	is.record(out)
	return &out
}

// oversizeList names files left out for their size, with their sizes.
func oversizeList(fs []messages.OversizeFile) string {
	var b strings.Builder
	for i, f := range fs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (%d bytes)", f.Path, f.Bytes)
	}
	return b.String()
}

// oversizeNote is what a parent reads of the files left out of its
// child's changes for their size ("" when none).
func oversizeNote(c *messages.ChangeOutcome) string {
	if len(c.Oversize) == 0 {
		return ""
	}
	where := "they stay only where the agent wrote them"
	if c.Worktree != "" {
		where = "its worktree is kept at " + c.Worktree
	}
	return fmt.Sprintf("\n[changes: NOT carried, over agent.max_change_bytes: %s; %s]", oversizeList(c.Oversize), where)
}
