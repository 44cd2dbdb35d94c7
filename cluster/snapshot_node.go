package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/changes"
	"github.com/troupe-ai/troupe/messages"
	gitws "github.com/troupe-ai/troupe/workspace"
)

// The node side of travelling snapshots: a task that carries its
// requester's snapshot runs in a worktree of it (changes.Node: made
// under the node's data directory from a store that borrows the objects
// of the node's checkout, which is never written). A mutating agent's
// changes go back in its result. What travels, and how, is this file's
// (taskTransport, changes.Transport): the snapshot's bundles from the
// snapshot bucket or the requester, a large patch through the changes
// bucket.

// maxInlinePatch is the largest patch a result carries; a larger one goes
// to the changes bucket and the result names it.
const maxInlinePatch = 256 << 10

// snapshotFetchTimeout bounds fetching a snapshot's bundles.
const snapshotFetchTimeout = 2 * time.Minute

// newSnapshotStore is the node's store of its requesters' snapshots,
// opened on the first task that carries one.
func newSnapshotStore(o NodeOptions) *changes.Node {
	dataDir, stateDir := o.Agent.DataDir, o.Agent.StateDir
	if dataDir == "" {
		dataDir = actors.DataDir(o.Agent.Workspace)
	}
	if stateDir == "" {
		if dir, err := actors.StateDir(o.Agent.Workspace); err == nil {
			stateDir = dir
		} else {
			stateDir = dataDir
		}
	}
	return changes.NewNode(changes.Dirs{Root: o.Agent.Workspace, Data: filepath.Join(dataDir, "snapshots"), State: stateDir},
		o.Slots, o.Agent.Settings.ChangeByteLimit(), o.Log).WithWorktrees(o.Agent.Settings.Worktrees)
}

// taskTransport is changes.Transport for one task on this node.
type taskTransport struct {
	n    *Node
	task actors.ChildTask
}

// Fetch brings the snapshot's objects into the store: the thin bundle,
// or the whole snapshot, asked of the requester, when the node lacks its
// base too.
func (t taskTransport) Fetch(ctx context.Context, repo *gitws.Repo, ref messages.TaskSnapshot) error {
	n := t.n
	obs, err := n.o.Bus.JetStream().ObjectStore(ctx, n.o.Bus.Names().Snapshots)
	if err != nil {
		return err
	}
	if ref.Base == "" || repo.Has(ctx, ref.Base) {
		if err := unbundle(ctx, obs, repo, ref.Bundle, ref.BundleSHA256); err != nil {
			return err
		}
		return t.fetchSnapshotLFS(ctx, obs, repo, ref.Tree)
	}
	// The node's checkout lacks the base: ask for the whole snapshot.
	req, _ := json.Marshal(messages.SnapshotRequest{V: messages.ProtocolVersion, Commit: ref.Commit})
	m, err := n.o.Bus.NATS().RequestWithContext(ctx, bus.CtlSubject(n.o.Bus.Prefix(), t.task.Run, t.task.ID, ctlSnapshot), req)
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
	if err := unbundle(ctx, obs, repo, rep.Bundle, rep.BundleSHA256); err != nil {
		return err
	}
	return t.fetchSnapshotLFS(ctx, obs, repo, ref.Tree)
}

// Ship carries the changeset's spooled patch: inline when small, else
// streamed from its file into the changes bucket, which the changeset
// then names; its git lfs objects go to the changes bucket too.
func (t taskTransport) Ship(ctx context.Context, from *gitws.Repo, cs *messages.Changeset) error {
	if err := t.shipLFS(ctx, from, cs); err != nil {
		return err
	}
	if cs.PatchFile == "" {
		return nil
	}
	name := t.task.Run + "/" + t.task.ID + "-" + strconv.Itoa(t.task.Attempt) + ".patch"
	patch, ref, err := t.n.shipPatch(ctx, name, cs.PatchFile, maxInlinePatch)
	if err != nil {
		return err
	}
	cs.Patch, cs.PatchRef, cs.PatchFile = patch, ref, ""
	return nil
}

// unbundle fetches the bundle name and brings its objects into the store,
// once its bytes are proven to be those digest names (the task's, or the
// requester's reply's): whoever else may write the snapshot bucket cannot
// replace what the agent works on. The bundle is streamed from the
// bucket into a temporary file of the store's, its SHA-256 taken on the
// way, and git reads it from there once it is proven: no buffer holds
// it whole.
func unbundle(ctx context.Context, obs jetstream.ObjectStore, repo *gitws.Repo, name, digest string) error {
	what := "the snapshot bundle " + name
	if digest == "" { // refused before the fetch
		return messages.CheckDigest(what, nil, "")
	}
	obj, err := obs.Get(ctx, name)
	if err != nil {
		return fmt.Errorf("get %s: %w", name, err)
	}
	defer obj.Close()
	return repo.UnbundleFrom(ctx, what, obj, digest)
}

// startIn starts the task's agent (its span under trace): in a worktree of the task's snapshot
// when it carries one, else in the node's workspace. end, called with the
// agent's result once it has ended, puts a mutating agent's changes in
// the result (changes.Hosted.End: on an error the worktree is kept on
// the node, and the result's error says where).
func (n *Node) startIn(trace context.Context, task actors.ChildTask, svc *BudgetClient, arts *bus.Artifacts, rel *eventRelay) (*actors.AgentHandle, func(*actors.AgentResult), error) {
	events := n.taskEvents(rel)
	if task.Snapshot == nil {
		h, err := n.host.StartAgentWith(trace, task, svc, arts, "", events)
		return h, func(*actors.AgentResult) {}, err
	}
	t := taskTransport{n: n, task: task}
	wt, err := n.snaps.Start(n.ctx, t, *task.Snapshot, task.Run+"-"+task.ID+"-"+strconv.Itoa(task.Attempt))
	if err != nil {
		return nil, nil, err
	}
	h, err := n.host.StartAgentInView(trace, task, svc, arts, wt.Root(), wt.View(), events)
	if err != nil {
		wt.Drop()
		return nil, nil, err
	}
	end := func(res *actors.AgentResult) {
		k, ok := n.o.Agent.Kinds[task.Kind]
		cs, err := wt.End(n.ctx, t, !ok || !k.ReadOnly, task.Run, task.ID)
		if err != nil {
			n.o.Log.Error().Err(err).Str("agent", task.ID).Msg("capture changes")
			res.Err = joinErr(res.Err, "node "+n.o.Name+" could not capture the agent's changes: "+err.Error())
			res.ChangesErr = err.Error()
			return
		}
		res.Changeset = cs
	}
	return h, end, nil
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
