package changes

import (
	"context"
	"fmt"
	"sync"

	"github.com/troupe-ai/troupe/configs"
	"github.com/troupe-ai/troupe/workspace"
)

// Isolated is one agent's worktree, made by a Run, which lands its
// changes when the agent ends (Child.End).
type Isolated struct {
	wt   *workspace.Worktree
	from *Run
}

// Root is the worktree's directory, the agent's workspace.
func (iso *Isolated) Root() string { return iso.wt.Root() }

// Drop removes the worktree of an agent that did not start: nothing of
// it is captured.
func (iso *Isolated) Drop() {
	if iso == nil {
		return
	}
	if err := iso.wt.Remove(context.Background()); err != nil {
		iso.from.log.Warn().Err(err).Msg("remove an unused worktree")
	}
}

// enter is called before an agent other than the root starts: for one
// that may change files (not e.ReadOnly) it counts the agent as running
// and, when the isolation mode asks for it and the agent runs here (not
// e.Elsewhere), makes its worktree from a snapshot of the workspace as
// it is now (nil: the agent works in the workspace, or on its node). The
// returned leave must be called once the agent has ended (or did not
// start).
func (r *Run) enter(ctx context.Context, e Entry) (*Isolated, func(), error) {
	if r == nil || e.ReadOnly {
		return nil, func() {}, nil
	}
	others := r.live.Add(1) - 1
	r.seen(others + 1)
	var once sync.Once
	leave := func() { once.Do(func() { r.live.Add(-1) }) }
	switch {
	case e.Elsewhere || r.mode == configs.IsolationShared:
		return nil, leave, nil
	case r.mode == configs.IsolationAuto && r.changes == workspace.ModeApply && !e.Background && others == 0:
		// Alone and in the foreground, it may work in the workspace itself;
		// with --changes branch or patch every such agent's changes must
		// go there instead, so it gets a worktree.
		return nil, leave, nil
	}
	iso, err := r.worktree(ctx, e.ID)
	if err != nil {
		leave()
		return nil, func() {}, fmt.Errorf("isolate %s: %w", e.ID, err)
	}
	return iso, leave, nil
}

// seen records that n agents that may change files run at once, and
// keeps as many worktrees for reuse (within bounds).
func (r *Run) seen(n int32) {
	for {
		p := r.peak.Load()
		if n <= p {
			return
		}
		if r.peak.CompareAndSwap(p, n) {
			break
		}
	}
	r.mu.Lock()
	repo := r.repo
	r.mu.Unlock()
	if repo != nil {
		repo.SetKeepIdle(r.keepIdle())
	}
}

// worktree snapshots the workspace and makes agent id's worktree of it.
// The first one made in auto mode (two agents that may change files run
// at once) has one more prepared for the next.
func (r *Run) worktree(ctx context.Context, id string) (*Isolated, error) {
	repo, err := r.open(ctx)
	if err != nil {
		return nil, err
	}
	defer r.prewarm(1)
	snap, err := repo.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	wt, err := repo.NewWorktree(ctx, snap, id)
	if err != nil {
		return nil, err
	}
	return &Isolated{wt: wt, from: r}, nil
}
