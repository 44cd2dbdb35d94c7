package changes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/workspace"
)

// Transport carries a task's snapshot to the node that runs it and the
// agent's changeset back. cluster's goes over NATS (the snapshot bucket,
// the requester's answer for a whole snapshot, the changes bucket);
// Local is the one for a requester and a node in one process.
type Transport interface {
	// Fetch brings the objects of snap, which repo (the node's store)
	// lacks, into repo.
	Fetch(ctx context.Context, repo *workspace.Repo, snap messages.TaskSnapshot) error
	// Ship makes cs fit a result: its patch, spooled to the file
	// cs.PatchFile (the caller's, with its SHA-256 in cs.PatchSHA256), is
	// read inline when small, else streamed elsewhere and cs names it
	// (PatchRef, Patch nil); PatchFile is cleared. The git lfs objects
	// cs.LFS names, in from's storage (the node's store), travel with it.
	Ship(ctx context.Context, from *workspace.Repo, cs *messages.Changeset) error
}

// nodeTimeout bounds fetching a snapshot and capturing a task's changes.
const nodeTimeout = 2 * time.Minute

// Node is a node's store of its requesters' snapshots: a task that
// carries one runs in a worktree of it, made under the node's data
// directory from a store that borrows the objects of the node's
// checkout (which is never written). It opens on the first task.
type Node struct {
	dirs    Dirs   // Root: the node's checkout; Data: the store; State: kept patches
	slots   int    // worktrees kept for reuse: one per slot
	maxFile int64  // agent.max_change_bytes
	kind    string // agent.worktrees ("": workspace's default)
	log     zerolog.Logger

	mu     sync.Mutex // one fetch at a time
	repo   *workspace.Repo
	keeper *workspace.StoreKeeper // the store's housekeeping, opened with it
	bounds workspace.StoreBounds  // what it keeps

	tidyMu  sync.Mutex // guards tidying, again and closed
	tidying bool       // a tidy runs in the background
	again   bool       // and runs once more when it ends
	closed  bool
	tidies  sync.WaitGroup
	tidyCtx context.Context // cancelled by Close
	stop    context.CancelFunc
	// beforeTidy, when set (tests), runs before each background tidy.
	beforeTidy func()
}

// NewNode is the store of a node with slots task slots: in d.Data,
// borrowing the objects of the node's checkout d.Root, keeping the
// patches of changes that cannot travel under d.State.
func NewNode(d Dirs, slots int, maxChangeBytes int64, log zerolog.Logger) *Node {
	ctx, stop := context.WithCancel(context.Background())
	return &Node{dirs: d, slots: slots, maxFile: maxChangeBytes, log: log, bounds: workspace.DefaultStoreBounds, tidyCtx: ctx, stop: stop}
}

// WithWorktrees makes the node's worktrees of kind (agent.worktrees:
// auto, overlay or checkout) and returns n; call it before the first task.
func (n *Node) WithWorktrees(kind string) *Node {
	n.kind = kind
	return n
}

// open returns the store, opening it (and pruning the worktrees a
// killed node left) the first time; n.mu is held.
func (n *Node) open(ctx context.Context) (*workspace.Repo, error) {
	if n.repo != nil {
		return n.repo, nil
	}
	// A worktree per slot is kept: the next task's rewrites only the
	// files that differ.
	repo, err := workspace.OpenStore(ctx, n.dirs.Data, n.dirs.Root, n.slots)
	if err != nil {
		return nil, err
	}
	repo.SetMaxChangeBytes(n.maxFile)
	repo.SetStateDir(n.dirs.State)
	repo.SetWorktrees(n.kind)
	if _, note, _ := repo.Worktrees(); note != "" {
		n.log.Info().Msg(note)
	}
	keeper := repo.Keeper(n.dirs.State, n.bounds)
	release := n.use(keeper)
	kept, err := repo.PruneKeep(ctx)
	release()
	if err != nil {
		n.log.Warn().Err(err).Msg("prune worktrees left by a killed node")
	}
	noteKept(n.log, kept)
	n.repo, n.keeper = repo, keeper
	return repo, nil
}

// KeepKilled opens the store when a killed node left worktrees in it:
// Prune keeps their agents' work and says where in the log. Call it
// when the node starts.
func (n *Node) KeepKilled(ctx context.Context) {
	if _, err := os.Lstat(filepath.Join(n.dirs.Data, "worktrees")); err != nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, err := n.open(ctx); err != nil {
		n.log.Warn().Err(err).Msg("open the snapshot store to keep a killed node's work")
	}
}

// Close removes the worktrees kept for reuse, once a tidy of the store
// running has stopped; the node has stopped.
func (n *Node) Close() {
	n.tidyMu.Lock()
	n.closed = true
	n.tidyMu.Unlock()
	n.stop()
	n.tidies.Wait()
	n.mu.Lock()
	repo := n.repo
	n.mu.Unlock()
	if repo == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := repo.Close(ctx); err != nil {
		n.log.Warn().Err(err).Msg("remove idle snapshot worktrees")
	}
}

// Hosted is a task's worktree on a node.
type Hosted struct {
	wt   *workspace.Worktree
	node *Node
}

// Root is the worktree's directory, the task's agent's workspace.
func (h *Hosted) Root() string { return h.wt.Root() }

// Start makes the worktree the task's agent works in (named name): the
// snapshot's objects fetched through t when the store lacks them.
func (n *Node) Start(ctx context.Context, t Transport, snap messages.TaskSnapshot, name string) (*Hosted, error) {
	ctx, cancel := context.WithTimeout(ctx, nodeTimeout)
	defer cancel()
	n.mu.Lock()
	repo, err := n.open(ctx)
	// In use from before it looks for the snapshot until its worktree
	// holds it: a tidy of the store runs before or after, never between.
	release := func() {}
	if err == nil {
		release = n.use(n.keeper)
	}
	if err == nil && !repo.Has(ctx, snap.Commit) {
		err = t.Fetch(ctx, repo, snap)
	}
	n.mu.Unlock()
	if err == nil {
		var wt *workspace.Worktree
		wt, err = repo.NewWorktree(ctx, workspace.Snapshot{Base: snap.Base, Tree: snap.Tree, Commit: snap.Commit, Prefix: snap.Prefix}, name)
		if err == nil {
			release()
			return &Hosted{wt: wt, node: n}, nil
		}
	}
	release()
	return nil, fmt.Errorf("materialise the requester's snapshot %.12s: %w", snap.Commit, err)
}

// Drop removes the worktree of a task whose agent did not start.
func (h *Hosted) Drop() {
	if err := h.wt.Remove(context.Background()); err != nil {
		h.node.log.Warn().Err(err).Msg("remove snapshot worktree")
	}
}

// End ends the worktree's use once the task's agent has ended and
// returns its changeset for the result (nil when it changed nothing, or
// may change nothing), shipped through t. On an error (the capture's,
// or the changeset's that cannot travel) the worktree is kept whole on
// the node, and the patch too when there is one; the error names where.
func (h *Hosted) End(ctx context.Context, t Transport, mayChange bool, run, agent string) (*messages.Changeset, error) {
	ctx, cancel := context.WithTimeout(ctx, nodeTimeout)
	defer cancel()
	// The capture's objects are reachable from no worktree until shipped:
	// the store is in use until then, and tidied after.
	release := h.node.use(h.node.keeper)
	defer h.node.tidyLater()
	defer release()
	if !mayChange {
		h.Drop()
		return nil, nil
	}
	cs, err := h.wt.CaptureTree(ctx)
	if err == nil && cs.Empty() && len(cs.Oversize) == 0 {
		h.Drop()
		return nil, nil
	}
	if err == nil {
		err = h.ship(ctx, t, &cs, run, agent)
	}
	if err != nil {
		if path, kerr := h.wt.Keep(ctx); kerr == nil {
			err = fmt.Errorf("%w; the worktree is kept on the node at %s", err, path)
		} else {
			h.node.log.Error().Err(kerr).Str("agent", agent).Msg("keep the worktree of changes not captured")
		}
		return nil, err
	}
	h.Drop()
	return &cs, nil
}

// ship spools the patch of cs (captured without one: its blobs are in
// the store; a pack of them when they are big, workspace.SpoolChanges) from git to a file under the node's state directory (out of
// the agents' reach), its
// SHA-256 taken on the way, and ships it through t; the file is removed
// once shipped, and kept as the task's patch when it could not be.
func (h *Hosted) ship(ctx context.Context, t Transport, cs *messages.Changeset, run, agent string) error {
	cs.SnapshotTree = h.wt.Snapshot().Tree
	if cs.Empty() { // only files left out for their size
		cs.PatchSHA256 = messages.Digest(nil)
		return t.Ship(ctx, h.node.repo, cs)
	}
	var err error
	if cs.LFS, err = lfsToShip(ctx, h.node.repo, cs.SnapshotTree, cs.Tree, h.node.maxFile); err != nil {
		return err
	}
	p, pack, err := h.wt.SpoolChanges(ctx, h.node.dirs.State, *cs)
	if err != nil {
		return err
	}
	defer p.Remove()
	cs.PatchFile, cs.PatchSHA256, cs.Pack = p.Path, p.SHA256, pack
	err = t.Ship(ctx, h.node.repo, cs)
	cs.PatchFile = ""
	if err != nil {
		err = fmt.Errorf("send the changeset: %w", err)
		if pack { // the kept worktree holds them; a pack is no patch
			return err
		}
		if path, kerr := workspace.KeepPatchFile(h.node.dirs.Root, h.node.dirs.State, run, agent, p); kerr == nil {
			err = fmt.Errorf("%w; its patch is kept on the node at %s", err, path)
		}
	}
	return err
}

// Local is the Transport between a requester and a node in one process:
// the snapshot's objects come from the requester's repository as a
// bundle (a temporary file of its, never held in memory), and a patch
// travels inline whatever its size.
type Local struct {
	From *workspace.Repo // the requester's repository
}

// Fetch implements Transport.
func (l Local) Fetch(ctx context.Context, repo *workspace.Repo, snap messages.TaskSnapshot) error {
	b, err := l.From.Bundle(ctx, workspace.Snapshot{Base: snap.Base, Tree: snap.Tree, Commit: snap.Commit, Prefix: snap.Prefix},
		snap.Base != "" && repo.Has(ctx, snap.Base))
	if err != nil {
		return err
	}
	// Both repositories are in this process: the store's git reads the
	// requester's bundle from its temporary file.
	err = repo.Unbundle(ctx, b)
	b.Remove()
	if err != nil {
		return err
	}
	ptrs, err := l.From.LFSPointers(ctx, snap.Tree, nil)
	if err != nil {
		return err
	}
	return copyLFS(ctx, l.From, repo, Held(l.From, ptrs, 0))
}

// Ship implements Transport: the patch travels inline, read from its
// file; the git lfs objects are copied into the requester's storage.
func (l Local) Ship(ctx context.Context, from *workspace.Repo, cs *messages.Changeset) error {
	if err := copyLFS(ctx, from, l.From, cs.LFS); err != nil {
		return err
	}
	if cs.PatchFile == "" {
		return nil
	}
	patch, err := os.ReadFile(cs.PatchFile)
	if err != nil {
		return err
	}
	cs.Patch, cs.PatchFile = patch, ""
	return nil
}

// use marks the node's store in use (workspace.StoreKeeper.Use) and
// returns its release. When the mark cannot be made (its lock file
// cannot be opened), no tidy can run either: the use goes on unmarked.
func (n *Node) use(k *workspace.StoreKeeper) func() {
	release, err := k.Use()
	if err != nil {
		n.log.Warn().Err(err).Msg("mark the snapshot store in use")
		return func() {}
	}
	return release
}

// tidyLater tidies the node's store in the background once it is over
// its bounds (workspace.StoreKeeper.Tidy), unless the node has closed;
// called while a tidy runs (which found the store in use, maybe by the
// caller), that tidy runs once more.
func (n *Node) tidyLater() {
	n.tidyMu.Lock()
	defer n.tidyMu.Unlock()
	if n.closed || n.keeper == nil {
		return
	}
	if n.tidying {
		n.again = true
		return
	}
	n.tidying = true
	n.tidies.Add(1)
	go func() {
		defer n.tidies.Done()
		for {
			if n.beforeTidy != nil {
				n.beforeTidy()
			}
			n.logTidy(n.keeper.Tidy(n.tidyCtx, false))
			n.tidyMu.Lock()
			again := n.again && !n.closed
			n.tidying, n.again = again, false
			n.tidyMu.Unlock()
			if !again {
				return
			}
		}
	}()
}

// logTidy logs what a tidy of the store did, when it did something.
func (n *Node) logTidy(t workspace.StoreTidy, err error) {
	switch {
	case err != nil:
		n.log.Warn().Err(err).Msg("tidy the snapshot store")
	case t.Git || t.LFS:
		n.log.Info().Int64("git_bytes", t.After.GitBytes).Int("packs", t.After.Packs).Int64("lfs_bytes", t.After.LFSBytes).
			Int("lfs_dropped", t.LFSDropped).Msg("tidied the snapshot store")
	}
}
