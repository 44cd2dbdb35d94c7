package changes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/configs"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/workspace"
)

// Run gives a run's agents that may change files worktrees of their own
// (package workspace) and brings their changes back. Its methods are
// safe for concurrent use: callers run them on tool and end-of-agent
// goroutines. A nil *Run is a run without a workspace: it isolates no
// one and its results are none.
type Run struct {
	ctx      context.Context // the run's, for background work
	mode     string          // configs.Isolation*
	changes  workspace.Mode  // what becomes of the changes
	root     string          // the workspace root
	dataDir  string          // worktrees (agent-visible)
	stateDir string          // kept patches (troupe's own)
	maxFile  int64           // agent.max_change_bytes
	settings configs.Agent   // for the runs of nested agents
	log      zerolog.Logger

	live   atomic.Int32 // agents that may change files, running now (the root aside)
	peak   atomic.Int32 // the most of them seen running at once
	warm   sync.WaitGroup
	warmed atomic.Bool // worktrees were prepared ahead (prewarm)

	// home, for an agent's run for its children (Nested), takes the
	// changesets that do not merge into the agent's directory (nil: this
	// is the run's, where they are kept).
	home keeper
	// anchor is, for an agent's run for its children, the run's
	// workspace, beneath which its data directory is removed (endNested).
	anchor string

	mu       sync.Mutex
	repo     *workspace.Repo // opened on first need
	outcomes []messages.ChangeOutcome
}

// Dirs are where a run keeps what it makes: the workspace's root, the
// agent-visible data directory (worktrees) and troupe's own state
// directory (kept patches).
type Dirs struct {
	Root, Data, State string
}

// Open prepares a run's isolation and removes the worktrees a killed
// process left under the data directory. When every agent that may
// change files gets a worktree (isolation: worktree) and the run has
// such a kind (mutating), worktrees are made in the background from now
// on, so the first ones do not wait for a checkout of every file.
func Open(ctx context.Context, s configs.Agent, d Dirs, mutating bool, log zerolog.Logger) (*Run, error) {
	mode, err := workspace.ParseMode(s.ChangesMode())
	if err != nil {
		return nil, fmt.Errorf("run: agent.changes: %w", err)
	}
	r := &Run{mode: s.IsolationMode(), changes: mode, root: d.Root, dataDir: d.Data, stateDir: d.State,
		maxFile: s.ChangeByteLimit(), settings: s, log: log, ctx: context.WithoutCancel(ctx)}
	if err := pruneNested(d.Root, d.Data); err != nil {
		log.Warn().Err(err).Msg("prune nested worktrees left by a killed process")
	}
	if _, err := os.Stat(filepath.Join(d.Data, "worktrees")); err == nil {
		if repo, err := r.open(ctx); err == nil {
			if err := repo.Prune(ctx); err != nil {
				log.Warn().Err(err).Msg("prune worktrees left by a killed process")
			}
		}
	}
	if mutating && r.mode == configs.IsolationWorktree {
		r.prewarm(prewarmWorktrees)
	}
	return r, nil
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
func (r *Run) keepIdle() int {
	return int(min(max(r.peak.Load(), minKeepIdle), maxKeepIdle))
}

// prewarm makes n worktrees of a snapshot of the workspace now, in the
// background (once per run).
func (r *Run) prewarm(n int) {
	if r.warmed.Swap(true) {
		return
	}
	r.warm.Add(1)
	go func() {
		defer r.warm.Done()
		ctx, cancel := context.WithTimeout(r.ctx, time.Minute)
		defer cancel()
		repo, err := r.open(ctx)
		var snap workspace.Snapshot
		if err == nil {
			snap, err = repo.Snapshot(ctx)
		}
		if err != nil {
			r.log.Warn().Err(err).Msg("prepare worktrees ahead")
			return
		}
		repo.Prewarm(snap, n)
	}()
}

// open returns the workspace's Repo, opening it the first time.
func (r *Run) open(ctx context.Context) (*workspace.Repo, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.repo == nil {
		repo, err := workspace.Open(ctx, r.root, workspace.Options{DataDir: r.dataDir, StateDir: r.stateDir, KeepIdle: r.keepIdle(),
			MaxChangeBytes: r.maxFile, Worktrees: r.settings.Worktrees})
		if err != nil {
			return nil, err
		}
		if note := repo.Note(); note != "" {
			r.log.Info().Msg(note)
		}
		if r.mode != configs.IsolationShared {
			if _, note, _ := repo.Worktrees(); note != "" {
				r.log.Info().Msg(note)
			}
		}
		r.repo = repo
	}
	return r.repo, nil
}

// record adds an outcome to the run's changes (run --json).
func (r *Run) record(out messages.ChangeOutcome) {
	r.mu.Lock()
	r.outcomes = append(r.outcomes, out)
	r.mu.Unlock()
}

// close removes the worktrees kept for reuse; the run has ended.
func (r *Run) close() {
	if r == nil {
		return
	}
	r.warm.Wait()
	r.mu.Lock()
	repo := r.repo
	r.mu.Unlock()
	if repo == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := repo.Close(ctx); err != nil {
		r.log.Warn().Err(err).Msg("remove idle worktrees")
	}
}

// results are the outcomes of the run's changesets, in the order they
// were applied (run --json's changes).
func (r *Run) results() []messages.ChangeOutcome {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.outcomes)
}
