package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/changes"
	"github.com/troupe-ai/troupe/messages"
	gitws "github.com/troupe-ai/troupe/workspace"
)

// The requester side of travelling snapshots: each remote task carries a
// snapshot of the workspace as it is when the task is placed (tasks
// placed together share one), stored once per run as a bundle in the
// snapshot bucket; a node lacking the
// base asks for the whole snapshot on <prefix>.ctl.<run>.<agent>.snapshot.
// A remote agent's changeset comes back in its result (its patch in the
// changes bucket when large) and is merged by the parent's side
// (actors). The run's objects are deleted when the run ends.

// ctlSnapshot is the control operation a node asks for a whole snapshot on.
const ctlSnapshot = "snapshot"

// snapshotSender carries a run's snapshots to its remote tasks: when
// and which snapshot a task carries is changes.Sender's; storing its
// bundle, and a whole one for a node that asks, is this file's.
type snapshotSender struct {
	r     *Remote
	snd   *changes.Sender
	mu    sync.Mutex
	whole map[string]storedBundle // snapshot commit → its whole bundle
	// lfsSent are the git lfs objects (by oid) the run put in the
	// snapshot bucket (snapshot_lfs.go); trimmed with the run.
	lfsSent map[string]bool
	// spool is where patches fetched from the changes bucket are
	// spooled: the run's state directory (troupe's own, out of the
	// agents' reach), else its data directory.
	spool string
}

func newSnapshotSender(r *Remote) *snapshotSender {
	dataDir := r.o.DataDir
	if dataDir == "" {
		dataDir = actors.DataDir(r.o.Workspace)
	}
	spool := dataDir
	if dir, err := actors.StateDir(r.o.Workspace); err == nil {
		spool = dir
	}
	s := &snapshotSender{r: r, whole: map[string]storedBundle{}, lfsSent: map[string]bool{}, spool: spool}
	s.snd = changes.NewSender(r.ctx, r.o.Workspace, dataDir, func(ctx context.Context, repo *gitws.Repo, snap gitws.Snapshot) (string, error) {
		digest, err := s.store(ctx, repo, snap, true, s.bundleName(snap.Commit))
		if err != nil {
			return "", fmt.Errorf("store the snapshot: %w", err)
		}
		if err := s.sendSnapshotLFS(ctx, repo, snap.Tree); err != nil {
			return "", fmt.Errorf("store the snapshot's git lfs objects: %w", err)
		}
		return digest, nil
	})
	return s
}

// attach makes the task carry a snapshot of the workspace taken after
// the call began (changes.Sender.Take). Without git the task carries
// none (the node's checkout, as before).
func (s *snapshotSender) attach(ctx context.Context, task *actors.ChildTask) error {
	sent, err := s.snd.Take(ctx)
	if errors.Is(err, gitws.ErrNoGit) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("snapshot the workspace for %s: %w", task.ID, err)
	}
	snap := sent.Snap
	task.Snapshot = &messages.TaskSnapshot{Commit: snap.Commit, Tree: snap.Tree, Base: snap.Base, Prefix: snap.Prefix,
		Bundle: s.bundleName(snap.Commit), BundleSHA256: sent.Digest}
	return nil
}

// storedBundle is a bundle the run stored: its object and its SHA-256.
type storedBundle struct{ name, digest string }

// bundleName is the object of a snapshot's (thin) bundle.
func (s *snapshotSender) bundleName(commit string) string {
	return s.r.o.Run + "/snap-" + commit + ".bundle"
}

// store bundles snap (thin: only what its base lacks) as the object
// name, and returns the bundle's SHA-256, which the tasks carry. The
// bundle goes from git to a temporary file (its SHA-256 taken on the
// way) and from there, in chunks, into the snapshot bucket: no buffer
// holds it whole.
func (s *snapshotSender) store(ctx context.Context, repo *gitws.Repo, snap gitws.Snapshot, thin bool, name string) (string, error) {
	b, err := repo.Bundle(ctx, snap, thin)
	if err != nil {
		return "", err
	}
	defer b.Remove()
	obs, err := s.r.o.Bus.JetStream().ObjectStore(ctx, s.r.o.Bus.Names().Snapshots)
	if err != nil {
		return "", err
	}
	f, err := b.Open()
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, err = obs.Put(ctx, jetstream.ObjectMeta{Name: name}, f); err != nil {
		return "", err
	}
	return b.SHA256, nil
}

// onRequest answers a node that lacks a snapshot's base: the whole
// snapshot is bundled (once per snapshot) and stored, and its name sent.
func (s *snapshotSender) onRequest(m *nats.Msg) {
	go func() {
		rep := s.answer(m.Data)
		b, _ := json.Marshal(rep)
		_ = m.Respond(b)
	}()
}

func (s *snapshotSender) answer(data []byte) messages.SnapshotReply {
	rep := messages.SnapshotReply{V: messages.ProtocolVersion}
	req, err := messages.Decode[messages.SnapshotRequest](data, maxRequestBytes)
	if err != nil {
		rep.Error = &messages.Error{Code: messages.CodeBadRequest, Message: err.Error()}
		return rep
	}
	ctx, cancel := context.WithTimeout(s.r.ctx, snapshotFetchTimeout)
	defer cancel()
	repo, ok := s.snd.Sent(req.Commit)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !ok {
		rep.Error = &messages.Error{Code: messages.CodeNotFound, Message: fmt.Sprintf("%v: %s", errNoSnapshot, req.Commit)}
		return rep
	}
	b, ok := s.whole[req.Commit]
	if !ok {
		b.name = s.r.o.Run + "/full-" + req.Commit + ".bundle"
		// The snapshot commit holds its tree; Bundle needs no more of it.
		var err error
		if b.digest, err = s.store(ctx, repo, gitws.Snapshot{Commit: req.Commit}, false, b.name); err != nil {
			s.r.o.Log.Error().Err(err).Str("snapshot", req.Commit).Msg("store a whole snapshot")
			rep.Error = &messages.Error{Code: messages.CodeInternal, Message: "store the whole snapshot: " + err.Error()}
			return rep
		}
		s.whole[req.Commit] = b
	}
	rep.Bundle, rep.BundleSHA256 = b.name, b.digest
	return rep
}

// close deletes the run's snapshots and changesets from the object stores.
func (s *snapshotSender) close() {
	if s == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.r.o.Bus.DeleteRunObjects(ctx, s.r.o.Run); err != nil {
		s.r.o.Log.Warn().Err(err).Msg("delete the run's snapshots and changesets")
	}
}

// onSnapshotRequest answers a node's request for a whole snapshot (none
// without a workspace).
func (r *Remote) onSnapshotRequest(m *nats.Msg) {
	if r.snaps == nil {
		b, _ := json.Marshal(messages.SnapshotReply{V: messages.ProtocolVersion,
			Error: &messages.Error{Code: messages.CodeNotFound, Message: "this run sends no snapshots"}})
		_ = m.Respond(b)
		return
	}
	r.snaps.onRequest(m)
}
