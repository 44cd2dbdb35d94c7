package actors

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/configs"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/workspace"
)

// isolation gives the run's agents that may change files worktrees of
// their own (package workspace) and brings their changes back. Its
// methods are safe for concurrent use: they run on tool and end-of-agent
// goroutines, never on a mailbox.
type isolation struct {
	ctx      context.Context // the run's, for background work
	mode     string          // configs.Isolation*
	changes  workspace.Mode  // what becomes of the changes
	root     string          // the workspace root
	dataDir  string          // worktrees (agent-visible)
	stateDir string          // kept patches (troupe's own)
	maxFile  int64           // agent.max_change_bytes
	log      zerolog.Logger

	live   atomic.Int32 // agents that may change files, running now (the root aside)
	peak   atomic.Int32 // the most of them seen running at once
	warm   sync.WaitGroup
	warmed atomic.Bool // worktrees were prepared ahead (prewarm)

	// home, for an agent's isolation for its children, takes the
	// changesets that do not merge into the agent's directory (nil: this
	// is the run's, where they are kept).
	home nestedHome

	mu       sync.Mutex
	repo     *workspace.Repo // opened on first need
	outcomes []messages.ChangeOutcome
}

// isolated is one agent's worktree and the tools' view of it.
type isolated struct {
	wt   *workspace.Worktree
	ws   *tools.Workspace
	from *isolation // the isolation that made it, which lands its changes
}

// newIsolation prepares a run's isolation and removes the worktrees a
// killed process left under dataDir; patches are kept under stateDir.
// When every agent that may change
// files gets a worktree (isolation: worktree) and the run has such a
// kind (mutating), worktrees are made in the background from now on, so
// the first ones do not wait for a checkout of every file.
func newIsolation(ctx context.Context, s Settings, root, dataDir, stateDir string, mutating bool, log zerolog.Logger) (*isolation, error) {
	mode, err := workspace.ParseMode(s.ChangesMode())
	if err != nil {
		return nil, fmt.Errorf("run: agent.changes: %w", err)
	}
	is := &isolation{mode: s.IsolationMode(), changes: mode, root: root, dataDir: dataDir, stateDir: stateDir,
		maxFile: s.ChangeByteLimit(), log: log, ctx: context.WithoutCancel(ctx)}
	if err := pruneNested(root, dataDir); err != nil {
		log.Warn().Err(err).Msg("prune nested worktrees left by a killed process")
	}
	if _, err := os.Stat(filepath.Join(dataDir, "worktrees")); err == nil {
		if repo, err := is.open(ctx); err == nil {
			if err := repo.Prune(ctx); err != nil {
				log.Warn().Err(err).Msg("prune worktrees left by a killed process")
			}
		}
	}
	if mutating && is.mode == configs.IsolationWorktree {
		is.prewarm(prewarmWorktrees)
	}
	return is, nil
}

// Worktrees kept for reuse: the most mutating agents seen running at
// once, within these bounds; prewarmWorktrees are made ahead.
const (
	minKeepIdle      = 2
	maxKeepIdle      = 16
	prewarmWorktrees = 2
)

// keepIdle is how many ended agents' worktrees the run keeps to reuse:
// the next agent's worktree then rewrites only the files that differ
// instead of every file of the checkout.
func (is *isolation) keepIdle() int {
	return int(min(max(is.peak.Load(), minKeepIdle), maxKeepIdle))
}

// prewarm makes n worktrees of a snapshot of the workspace now, in the
// background (once per run).
func (is *isolation) prewarm(n int) {
	if is.warmed.Swap(true) {
		return
	}
	is.warm.Add(1)
	go func() {
		defer is.warm.Done()
		ctx, cancel := context.WithTimeout(is.ctx, time.Minute)
		defer cancel()
		repo, err := is.open(ctx)
		var snap workspace.Snapshot
		if err == nil {
			snap, err = repo.Snapshot(ctx)
		}
		if err != nil {
			is.log.Warn().Err(err).Msg("prepare worktrees ahead")
			return
		}
		repo.Prewarm(snap, n)
	}()
}

// open returns the workspace's Repo, opening it the first time.
func (is *isolation) open(ctx context.Context) (*workspace.Repo, error) {
	is.mu.Lock()
	defer is.mu.Unlock()
	if is.repo == nil {
		repo, err := workspace.Open(ctx, is.root, workspace.Options{DataDir: is.dataDir, StateDir: is.stateDir, KeepIdle: is.keepIdle(),
			MaxChangeBytes: is.maxFile})
		if err != nil {
			return nil, err
		}
		if note := repo.Note(); note != "" {
			is.log.Info().Msg(note)
		}
		is.repo = repo
	}
	return is.repo, nil
}

// enter is called before a child starts: for a kind that may change
// files it counts the child as running and, when the mode asks for it,
// makes its worktree from a snapshot of the workspace as it is now. The
// returned leave must be called once the child has ended (or did not
// start).
func (is *isolation) enter(ctx context.Context, kind Kind, id string, background bool) (*isolated, func(), error) {
	if is == nil || kind.ReadOnly {
		return nil, func() {}, nil
	}
	others := is.live.Add(1) - 1
	is.seen(others + 1)
	var once sync.Once
	leave := func() { once.Do(func() { is.live.Add(-1) }) }
	switch {
	case is.mode == configs.IsolationShared:
		return nil, leave, nil
	case is.mode == configs.IsolationAuto && is.changes == workspace.ModeApply && !background && others == 0:
		// Alone and in the foreground, it may work in the workspace itself;
		// with --changes branch or patch every such agent's changes must
		// go there instead, so it gets a worktree.
		return nil, leave, nil
	}
	iso, err := is.worktree(ctx, id)
	if err != nil {
		leave()
		return nil, func() {}, fmt.Errorf("isolate %s: %w", id, err)
	}
	return iso, leave, nil
}

// seen records that n agents that may change files run at once, and
// keeps as many worktrees for reuse (within bounds).
func (is *isolation) seen(n int32) {
	for {
		p := is.peak.Load()
		if n <= p {
			return
		}
		if is.peak.CompareAndSwap(p, n) {
			break
		}
	}
	is.mu.Lock()
	repo := is.repo
	is.mu.Unlock()
	if repo != nil {
		repo.SetKeepIdle(is.keepIdle())
	}
}

// worktree snapshots the workspace and makes agent id's worktree of it.
// The first one made in auto mode (two agents that may change files run
// at once) has one more prepared for the next.
func (is *isolation) worktree(ctx context.Context, id string) (*isolated, error) {
	repo, err := is.open(ctx)
	if err != nil {
		return nil, err
	}
	defer is.prewarm(1)
	snap, err := repo.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	wt, err := repo.NewWorktree(ctx, snap, id)
	if err != nil {
		return nil, err
	}
	ws, err := tools.NewWorkspace(wt.Root())
	if err != nil {
		_ = wt.Remove(context.WithoutCancel(ctx))
		return nil, err
	}
	return &isolated{wt: wt, ws: ws, from: is}, nil
}

// land captures an isolated agent's changes, brings them into the
// workspace (a completed agent's as the run's changes mode says; another's
// only as a patch file), emits changes.ready and changes.applied or
// changes.conflict through ev (its parent's events) and ends the
// worktree's use. When the changes could not be captured or brought
// back, the worktree is kept whole (never reset or removed) and the
// outcome, recorded with the run's, names it and any patch written. It
// returns nil when the agent changed nothing.
func (is *isolation) land(ev *agentEvents, run, agent string, iso *isolated, completed bool) *messages.ChangeOutcome {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	defer func() { _ = iso.ws.Close() }()
	keep := func(out *messages.ChangeOutcome) {
		path, err := iso.wt.Keep(ctx)
		if err != nil {
			is.log.Error().Err(err).Str("agent", agent).Msg("keep the worktree of changes not brought back")
			return
		}
		out.Worktree = path
	}
	cs, err := iso.wt.Capture(ctx)
	if err != nil {
		is.log.Error().Err(err).Str("agent", agent).Msg("capture an agent's changes")
		out := messages.ChangeOutcome{Agent: agent, Status: messages.ChangeStatusError, Error: err.Error()}
		keep(&out)
		is.record(out)
		return &out
	}
	mode := is.changes
	if !completed {
		mode = workspace.ModePatch
	}
	out := is.bringKeeping(ctx, ev, run, agent, iso.wt.Snapshot(), cs, mode, keep)
	if out == nil || (out.Status != messages.ChangeStatusError && len(out.Oversize) == 0) {
		if err := iso.wt.Remove(ctx); err != nil {
			is.log.Warn().Err(err).Str("agent", agent).Msg("remove worktree")
		}
	}
	return out
}

// bring applies a captured changeset and reports it (see land).
func (is *isolation) bring(ctx context.Context, ev *agentEvents, run, agent string, snap workspace.Snapshot, cs messages.Changeset, mode workspace.Mode) *messages.ChangeOutcome {
	return is.bringKeeping(ctx, ev, run, agent, snap, cs, mode, nil)
}

// bringKeeping is bring, calling onError (when set) with an outcome of
// status error, or one naming files left out for their size
// (agent.max_change_bytes), before it is reported: the changeset's patch
// is kept then too, and the outcome names it.
func (is *isolation) bringKeeping(ctx context.Context, ev *agentEvents, run, agent string, snap workspace.Snapshot, cs messages.Changeset,
	mode workspace.Mode, onError func(*messages.ChangeOutcome)) *messages.ChangeOutcome {
	if cs.Empty() {
		return is.onlyOversize(agent, cs, onError)
	}
	emit := func(typ string, data any) {
		if ev != nil {
			ev.emit(typ, data)
		}
	}
	emit(messages.EvtChangesReady, messages.ChangesReady{Agent: agent, Files: cs.Files})
	repo, err := is.open(ctx)
	var out messages.ChangeOutcome
	if err == nil {
		out, err = repo.Apply(ctx, snap, cs, mode, run, agent)
	}
	if err != nil {
		is.log.Error().Err(err).Str("agent", agent).Msg("apply an agent's changes")
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
	if kept && is.home != nil {
		// Its patch must outlive this agent's directory: it goes home.
		var here bool
		if out, here = is.home.keep(run, out, cs.Patch); !here {
			ev = nil // the requester emits the events, once it has the patch
		}
	} else if out.Status == messages.ChangeStatusError {
		if path, err := is.keepPatch(run, agent, cs.Patch); err != nil {
			is.log.Error().Err(err).Str("agent", agent).Msg("keep the patch of changes not brought back")
		} else {
			out.Patch = path
		}
	}
	switch out.Status {
	case messages.ChangeStatusConflict, messages.ChangeStatusPatch:
		emitKept(ev, out)
	case messages.ChangeStatusApplied, messages.ChangeStatusBranch:
		emit(messages.EvtChangesApplied, messages.ChangesApplied{Agent: agent, Status: out.Status, Files: out.Files,
			Branch: out.Branch, Patch: out.Patch})
	}
	is.record(out)
	return &out
}

// record adds an outcome to the run's changes (run --json).
func (is *isolation) record(out messages.ChangeOutcome) {
	is.mu.Lock()
	is.outcomes = append(is.outcomes, out)
	is.mu.Unlock()
}

// close removes the worktrees kept for reuse; the run has ended.
func (is *isolation) close() {
	if is == nil {
		return
	}
	is.warm.Wait()
	is.mu.Lock()
	repo := is.repo
	is.mu.Unlock()
	if repo == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := repo.Close(ctx); err != nil {
		is.log.Warn().Err(err).Msg("remove idle worktrees")
	}
}

// results are the outcomes of the run's changesets, in the order they
// were applied.
func (is *isolation) results() []messages.ChangeOutcome {
	if is == nil {
		return nil
	}
	is.mu.Lock()
	defer is.mu.Unlock()
	return slices.Clone(is.outcomes)
}

// changesNote is what a parent reads about its child's changes, after
// the child's own text.
func changesNote(c *messages.ChangeOutcome) string {
	if c == nil {
		return ""
	}
	return changesNoteMain(c) + oversizeNote(c)
}

// changesNoteMain is changesNote's sentence on the changes carried.
func changesNoteMain(c *messages.ChangeOutcome) string {
	files := strings.Join(c.Files, ", ")
	switch c.Status {
	case messages.ChangeStatusApplied:
		return fmt.Sprintf("\n[changes: merged into the workspace: %s]", files)
	case messages.ChangeStatusConflict:
		why := "changed in the workspace since this agent started"
		if c.Reason != "" {
			why = c.Reason
		}
		return fmt.Sprintf("\n[changes: NOT applied: conflict in %s (%s). "+
			"The agent's whole changeset (%s) is kept as %s; it applies to the snapshot the agent started from with git apply]",
			strings.Join(c.Conflicts, ", "), why, files, keptAt(c.Patch))
	case messages.ChangeStatusBranch:
		return fmt.Sprintf("\n[changes: committed on branch %s (%s); the workspace is untouched]", c.Branch, files)
	case messages.ChangeStatusPatch:
		return fmt.Sprintf("\n[changes: written as the patch %s (%s); the workspace is untouched]", keptAt(c.Patch), files)
	}
	return fmt.Sprintf("\n[changes: could not be brought back (%s): %s]", files, c.Error)
}

// keptAt says where a kept patch is: a path, or, relative, where the
// requester keeps it (a node's agent's child's: see nestedCarry).
func keptAt(patch string) string {
	if patch == "" || filepath.IsAbs(patch) {
		return patch
	}
	return patch + " in the requester's data directory, where it goes with your own result"
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
		_ = s.iso.wt.Remove(context.Background())
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
