package changes

import (
	"context"
	"strings"
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
	cs, err := iso.wt.CaptureTree(ctx) // landed here: no patch in memory (Repo.Apply streams it)
	if err != nil {
		r.log.Error().Err(err).Str("agent", agent).Msg("capture an agent's changes")
		out := messages.ChangeOutcome{Agent: agent, Status: messages.ChangeStatusError, Error: err.Error()}
		r.salvage(ctx, iso.wt, run, &out)
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

// salvage keeps, for a capture that failed, the patch of what could
// still be captured (workspace.Worktree.Salvage), which applies to the
// snapshot: out names it, its files, and what it leaves out.
func (r *Run) salvage(ctx context.Context, wt *workspace.Worktree, run string, out *messages.ChangeOutcome) {
	cs, left, err := wt.Salvage(ctx)
	var repo *workspace.Repo
	if err == nil && !cs.Empty() {
		if repo, err = r.open(ctx); err == nil {
			out.Patch, err = repo.KeepChangeset(ctx, run, out.Agent, wt.Snapshot(), cs)
		}
	}
	if err != nil {
		r.log.Error().Err(err).Str("agent", out.Agent).Msg("keep the patch of what could be captured")
		return
	}
	for _, f := range cs.Files {
		out.Files = append(out.Files, f.Path)
	}
	out.Oversize = cs.Oversize
	switch {
	case out.Patch == "":
		out.Error += "; nothing else could be captured"
	case len(left) > 0:
		out.Error += "; the patch holds what could be captured, not: " + strings.Join(left, "; ")
	}
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
	opened := repo != nil
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
		(out.Status == messages.ChangeStatusError && (len(cs.Patch) > 0 || (opened && cs.Tree != "")))
	if kept && r.home != nil {
		// Its patch must outlive this agent's directory: it goes home,
		// as bytes (a nested carry travels).
		patch := cs.Patch
		if len(patch) == 0 && opened {
			if patch, err = repo.ChangesetPatch(ctx, snap, cs); err != nil {
				r.log.Error().Err(err).Str("agent", agent).Msg("make the patch of changes not brought back")
			}
		}
		var here bool
		if out, here = r.home.keep(run, out, patch); !here {
			emit = nil // the requester emits the events, once it has the patch
		}
	} else if out.Status == messages.ChangeStatusError {
		if path, err := r.keepChangeset(ctx, repo, run, agent, snap, cs); err != nil {
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

// keepChangeset keeps cs's patch as <state dir>/runs/<run>/changes/<agent>.patch:
// its bytes, or streamed from repo (nil when it could not be opened).
func (r *Run) keepChangeset(ctx context.Context, repo *workspace.Repo, run, agent string, snap workspace.Snapshot,
	cs messages.Changeset) (string, error) {
	if len(cs.Patch) > 0 || repo == nil {
		return r.keepPatch(run, agent, cs.Patch)
	}
	return repo.KeepChangeset(ctx, run, agent, snap, cs)
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
