package changes

import (
	"context"
	"time"

	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/workspace"
)

// Emit sends one event of the agent whose child's changes are landed
// (its parent's events); nil sends none.
type Emit func(typ string, data any)

// landTimeout bounds capturing and landing one agent's changes.
const landTimeout = 5 * time.Minute

// land captures an isolated agent's changes, brings them into the
// workspace (a completed agent's as the run's changes mode says;
// another's only as a patch file), emits changes.ready and
// changes.applied or changes.conflict through emit and ends the
// worktree's use. On any error (the capture's, the apply's) and when
// files were left out for their size, the worktree is kept whole (never
// reset, parked or removed), the changeset's patch is kept when there
// is one, and the outcome, recorded with the run's, names both. It
// returns nil when the agent changed nothing.
func (iso *Isolated) land(ctx context.Context, emit Emit, run, agent string, completed bool) *messages.ChangeOutcome {
	r := iso.from
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), landTimeout)
	defer cancel()
	keep := func(out *messages.ChangeOutcome) {
		path, err := iso.wt.Keep(ctx)
		if err != nil {
			r.log.Error().Err(err).Str("agent", agent).Msg("keep the worktree of changes not brought back")
			return
		}
		out.Worktree = path
	}
	cs, err := iso.wt.Capture(ctx)
	if err != nil {
		r.log.Error().Err(err).Str("agent", agent).Msg("capture an agent's changes")
		out := messages.ChangeOutcome{Agent: agent, Status: messages.ChangeStatusError, Error: err.Error()}
		keep(&out)
		r.record(out)
		return &out
	}
	mode := r.changes
	if !completed {
		mode = workspace.ModePatch
	}
	out := r.bring(ctx, emit, run, agent, iso.wt.Snapshot(), cs, mode, keep)
	if out == nil || (out.Status != messages.ChangeStatusError && len(out.Oversize) == 0) {
		if err := iso.wt.Remove(ctx); err != nil {
			r.log.Warn().Err(err).Str("agent", agent).Msg("remove worktree")
		}
	}
	return out
}

// bring applies a captured changeset and reports it (see land), calling
// onError (when set) with an outcome of status error, or one naming
// files left out for their size (agent.max_change_bytes), before it is
// reported: the changeset's patch is kept then too, and the outcome
// names it.
func (r *Run) bring(ctx context.Context, emit Emit, run, agent string, snap workspace.Snapshot, cs messages.Changeset,
	mode workspace.Mode, onError func(*messages.ChangeOutcome)) *messages.ChangeOutcome {
	if cs.Empty() {
		return r.onlyOversize(agent, cs, onError)
	}
	if emit != nil {
		emit(messages.EvtChangesReady, messages.ChangesReady{Agent: agent, Files: cs.Files})
	}
	repo, err := r.open(ctx)
	var out messages.ChangeOutcome
	if err == nil {
		out, err = repo.Apply(ctx, snap, cs, mode, run, agent)
	}
	if err != nil {
		r.log.Error().Err(err).Str("agent", agent).Msg("apply an agent's changes")
		out = messages.ChangeOutcome{Agent: agent, Status: messages.ChangeStatusError, Error: err.Error()}
		for _, f := range cs.Files {
			out.Files = append(out.Files, f.Path)
		}
		if onError != nil {
			onError(&out)
		}
	} else if out.Oversize = cs.Oversize; len(out.Oversize) > 0 && onError != nil {
		onError(&out)
	}
	kept := out.Status == messages.ChangeStatusConflict || out.Status == messages.ChangeStatusPatch ||
		(out.Status == messages.ChangeStatusError && len(cs.Patch) > 0)
	if kept && r.home != nil {
		// Its patch must outlive this agent's directory: it goes home.
		var here bool
		if out, here = r.home.Keep(run, out, cs.Patch); !here {
			emit = nil // the requester emits the events, once it has the patch
		}
	} else if out.Status == messages.ChangeStatusError {
		if path, err := r.keepPatch(run, agent, cs.Patch); err != nil {
			r.log.Error().Err(err).Str("agent", agent).Msg("keep the patch of changes not brought back")
		} else {
			out.Patch = path
		}
	}
	switch out.Status {
	case messages.ChangeStatusConflict, messages.ChangeStatusPatch:
		emitKept(emit, out)
	case messages.ChangeStatusApplied, messages.ChangeStatusBranch:
		if emit != nil {
			emit(messages.EvtChangesApplied, messages.ChangesApplied{Agent: agent, Status: out.Status, Files: out.Files,
				Branch: out.Branch, Patch: out.Patch})
		}
	}
	r.record(out)
	return &out
}

// onlyOversize is the outcome of a changeset that carries nothing but
// files left out for their size: status error, naming them (onError,
// when set, keeps the worktree that holds them); nil when there are none.
func (r *Run) onlyOversize(agent string, cs messages.Changeset, onError func(*messages.ChangeOutcome)) *messages.ChangeOutcome {
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
	r.record(out)
	return &out
}

// emitKept emits the event of a changeset kept as a patch file:
// changes.conflict, or changes.applied with status patch.
func emitKept(emit Emit, out messages.ChangeOutcome) {
	if emit == nil {
		return
	}
	switch out.Status {
	case messages.ChangeStatusConflict:
		emit(messages.EvtChangesConflict, messages.ChangesConflict{Agent: out.Agent, Files: out.Conflicts, Patch: out.Patch, Reason: out.Reason})
	case messages.ChangeStatusPatch:
		emit(messages.EvtChangesApplied, messages.ChangesApplied{Agent: out.Agent, Status: out.Status, Files: out.Files, Patch: out.Patch})
	}
}
