package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
	gitws "github.com/troupe-ai/troupe/workspace"
)

// The node side of travelling snapshots: a task that carries its
// requester's snapshot runs in a worktree of it, made under the node's
// data directory from a store that borrows the objects of the node's
// checkout; the node's checkout itself is never written. A mutating
// agent's changes go back in its result.

// maxInlinePatch is the largest patch a result carries; a larger one goes
// to the changes bucket and the result names it.
const maxInlinePatch = 256 << 10

// snapshotFetchTimeout bounds fetching a snapshot's bundles.
const snapshotFetchTimeout = 2 * time.Minute

// snapshotStore is a node's store of its requesters' snapshots. Its zero
// value is ready; the store opens on the first task with a snapshot.
type snapshotStore struct {
	mu   sync.Mutex // one fetch at a time
	repo *gitws.Repo
}

// open returns the node's store, opening it (and pruning the worktrees a
// killed node left) the first time.
func (s *snapshotStore) open(ctx context.Context, n *Node) (*gitws.Repo, error) {
	if s.repo != nil {
		return s.repo, nil
	}
	dataDir := n.o.Agent.DataDir
	if dataDir == "" {
		dataDir = actors.DataDir(n.o.Agent.Workspace)
	}
	// A worktree per slot is kept: the next task's rewrites only the
	// files that differ.
	repo, err := gitws.OpenStore(ctx, filepath.Join(dataDir, "snapshots"), n.o.Agent.Workspace, n.o.Slots)
	if err != nil {
		return nil, err
	}
	repo.SetMaxChangeBytes(n.o.Agent.Settings.ChangeByteLimit())
	if err := repo.Prune(ctx); err != nil {
		n.o.Log.Warn().Err(err).Msg("prune worktrees left by a killed node")
	}
	s.repo = repo
	return repo, nil
}

// close removes the worktrees kept for reuse; the node has stopped.
func (s *snapshotStore) close(n *Node) {
	s.mu.Lock()
	repo := s.repo
	s.mu.Unlock()
	if repo == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := repo.Close(ctx); err != nil {
		n.o.Log.Warn().Err(err).Msg("remove idle snapshot worktrees")
	}
}

// materialise makes the worktree the task's agent works in: the
// snapshot's objects fetched when the store lacks them (the thin bundle,
// and the whole snapshot, asked of the requester, when the node lacks its
// base too).
func (s *snapshotStore) materialise(n *Node, task actors.ChildTask) (*gitws.Worktree, error) {
	ref := task.Snapshot
	ctx, cancel := context.WithTimeout(n.ctx, snapshotFetchTimeout)
	defer cancel()
	s.mu.Lock()
	repo, err := s.open(ctx, n)
	if err == nil && !repo.Has(ctx, ref.Commit) {
		err = s.fetch(ctx, n, repo, task)
	}
	s.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("materialise the requester's snapshot %.12s: %w", ref.Commit, err)
	}
	snap := gitws.Snapshot{Base: ref.Base, Tree: ref.Tree, Commit: ref.Commit, Prefix: ref.Prefix}
	name := task.Run + "-" + task.ID + "-" + strconv.Itoa(task.Attempt)
	wt, err := repo.NewWorktree(ctx, snap, name)
	if err != nil {
		return nil, fmt.Errorf("materialise the requester's snapshot %.12s: %w", ref.Commit, err)
	}
	return wt, nil
}

// fetch brings the snapshot's objects into the store.
func (s *snapshotStore) fetch(ctx context.Context, n *Node, repo *gitws.Repo, task actors.ChildTask) error {
	ref := task.Snapshot
	obs, err := n.o.Bus.JetStream().ObjectStore(ctx, n.o.Bus.Names().Snapshots)
	if err != nil {
		return err
	}
	if ref.Base == "" || repo.Has(ctx, ref.Base) {
		return unbundle(ctx, obs, repo, ref.Bundle, ref.BundleSHA256)
	}
	// The node's checkout lacks the base: ask for the whole snapshot.
	req, _ := json.Marshal(messages.SnapshotRequest{V: messages.ProtocolVersion, Commit: ref.Commit})
	m, err := n.o.Bus.NATS().RequestWithContext(ctx, bus.CtlSubject(n.o.Bus.Prefix(), task.Run, task.ID, ctlSnapshot), req)
	if err != nil {
		return fmt.Errorf("ask for the whole snapshot: %w", err)
	}
	rep, err := messages.Decode[messages.SnapshotReply](m.Data, maxRequestBytes)
	if err != nil {
		return fmt.Errorf("ask for the whole snapshot: %w", err)
	}
	if rep.Error != nil {
		return fmt.Errorf("ask for the whole snapshot: %w", rep.Error)
	}
	return unbundle(ctx, obs, repo, rep.Bundle, rep.BundleSHA256)
}

// unbundle fetches the bundle name and brings its objects into the store,
// once its bytes are proven to be those digest names (the task's, or the
// requester's reply's): whoever else may write the snapshot bucket cannot
// replace what the agent works on.
func unbundle(ctx context.Context, obs jetstream.ObjectStore, repo *gitws.Repo, name, digest string) error {
	data, err := obs.GetBytes(ctx, name)
	if err != nil {
		return fmt.Errorf("get %s: %w", name, err)
	}
	if err := messages.CheckDigest("the snapshot bundle "+name, data, digest); err != nil {
		return err
	}
	return repo.Unbundle(ctx, data)
}

// startIn starts the task's agent (its span under trace): in a worktree of the task's snapshot
// when it carries one, else in the node's workspace. end, called with the
// agent's result once it has ended, captures a mutating agent's changes
// into the result and removes the worktree.
func (n *Node) startIn(trace context.Context, task actors.ChildTask, svc *BudgetClient, arts *bus.Artifacts, rel *eventRelay) (*actors.AgentHandle, func(*actors.AgentResult), error) {
	events := n.taskEvents(rel)
	if task.Snapshot == nil {
		h, err := n.host.StartAgentWith(trace, task, svc, arts, "", events)
		return h, func(*actors.AgentResult) {}, err
	}
	wt, err := n.snaps.materialise(n, task)
	if err != nil {
		return nil, nil, err
	}
	drop := func() {
		if err := wt.Remove(context.Background()); err != nil {
			n.o.Log.Warn().Err(err).Str("agent", task.ID).Msg("remove snapshot worktree")
		}
	}
	h, err := n.host.StartAgentWith(trace, task, svc, arts, wt.Root(), events)
	if err != nil {
		drop()
		return nil, nil, err
	}
	end := func(res *actors.AgentResult) {
		defer drop()
		if k, ok := n.o.Agent.Kinds[task.Kind]; ok && k.ReadOnly {
			return
		}
		cs, err := n.capture(task, wt)
		if err != nil {
			n.o.Log.Error().Err(err).Str("agent", task.ID).Msg("capture changes")
			res.Err = joinErr(res.Err, "node "+n.o.Name+" could not capture the agent's changes: "+err.Error())
			return
		}
		res.Changeset = cs
	}
	return h, end, nil
}

// capture is the worktree's changeset (nil when nothing changed), its
// patch stored in the changes bucket when too large for a result.
func (n *Node) capture(task actors.ChildTask, wt *gitws.Worktree) (*messages.Changeset, error) {
	ctx, cancel := context.WithTimeout(n.ctx, snapshotFetchTimeout)
	defer cancel()
	cs, err := wt.Capture(ctx)
	if err != nil || (cs.Empty() && len(cs.Oversize) == 0) {
		return nil, err
	}
	cs.SnapshotTree = wt.Snapshot().Tree
	cs.PatchSHA256 = messages.Digest(cs.Patch)
	if len(cs.Patch) > maxInlinePatch {
		obs, err := n.o.Bus.JetStream().ObjectStore(ctx, n.o.Bus.Names().Changes)
		if err != nil {
			return nil, err
		}
		name := task.Run + "/" + task.ID + "-" + strconv.Itoa(task.Attempt) + ".patch"
		if _, err := obs.PutBytes(ctx, name, cs.Patch); err != nil {
			return nil, fmt.Errorf("store the patch: %w", err)
		}
		cs.Patch, cs.PatchRef = nil, name
	}
	return &cs, nil
}

// joinErr appends more to an error text.
func joinErr(err, more string) string {
	if err == "" {
		return more
	}
	return err + "; " + more
}

// errNoSnapshot answers a request for a snapshot this run never sent.
var errNoSnapshot = errors.New("no such snapshot in this run")
