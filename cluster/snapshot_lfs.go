package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/troupe-ai/troupe/changes"
	"github.com/troupe-ai/troupe/messages"
	gitws "github.com/troupe-ai/troupe/workspace"
)

// Git LFS objects travel with snapshots and changesets as objects of
// their own, named by their oid (messages.LFSObjectName: <run>/lfs-<oid>),
// streamed in the object stores' chunks, and checked on receipt against
// the oid (their SHA-256) and size the pointer names: nothing a party
// that may write the bucket puts there reaches a git lfs storage unless
// it is the content its pointer names.
//
//   - A snapshot's are sent eagerly when it is stored: those its tree's
//     pointers name that the requester's storage holds, each once per
//     run (the node's checkout smudges every LFS file of the tree, so on
//     demand would fetch them all at once anyway). One over
//     agent.max_change_bytes fails the snapshot with a sentence naming
//     it; one the requester lacks is not sent, and the node's checkout
//     fails naming it as git lfs's own checkout would, never downloading.
//   - A node's changeset's are those its changed files' pointers name
//     (cleaned on the node into its store): the changeset lists them
//     (Changeset.LFS) and the node puts them in the changes bucket; the
//     requester brings them into the user's .git/lfs before the land,
//     which refuses a changeset whose objects did not arrive
//     (changes.Run) and keeps its patch.

// sendSnapshotLFS puts the git lfs objects of tree that repo's storage
// holds into the snapshot bucket, those this run has not sent yet.
func (s *snapshotSender) sendSnapshotLFS(ctx context.Context, repo *gitws.Repo, tree string) error {
	if !repo.HoldsLFS() {
		return nil
	}
	ptrs, err := repo.LFSPointers(ctx, tree, nil)
	if err != nil || len(ptrs) == 0 {
		return err
	}
	limit := repo.MaxChangeBytes()
	for _, p := range ptrs {
		if p.Size > limit {
			return fmt.Errorf("the git lfs object of %s (oid %s, %d bytes) is over agent.max_change_bytes (%d bytes): no node can be sent it",
				p.Path, p.OID, p.Size, limit)
		}
	}
	obs, err := s.r.o.Bus.JetStream().ObjectStore(ctx, s.r.o.Bus.Names().Snapshots)
	if err != nil {
		return err
	}
	for _, o := range changes.Held(repo, ptrs, limit) {
		s.mu.Lock()
		done := s.lfsSent[o.OID]
		s.mu.Unlock()
		if done {
			continue
		}
		if err := putLFS(ctx, obs, repo, s.r.o.Run, o); err != nil {
			return err
		}
		s.mu.Lock()
		s.lfsSent[o.OID] = true
		s.mu.Unlock()
	}
	return nil
}

// putLFS streams the git lfs object o from repo's storage into obs.
func putLFS(ctx context.Context, obs jetstream.ObjectStore, repo *gitws.Repo, run string, o messages.LFSObject) error {
	f, err := repo.OpenLFS(o)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := obs.Put(ctx, jetstream.ObjectMeta{Name: messages.LFSObjectName(run, o.OID)}, f); err != nil {
		return fmt.Errorf("send the git lfs object %s: %w", o.OID, err)
	}
	return nil
}

// getLFS streams the git lfs objects objs from obs into repo's storage,
// each checked against its oid and size (an error wrapping
// messages.ErrDigest when one is not what it names; nothing of it is
// kept). One not in obs, or over limit bytes, is skipped: who needs it
// says so.
func getLFS(ctx context.Context, obs jetstream.ObjectStore, repo *gitws.Repo, run string, objs []messages.LFSObject, limit int64, from string) error {
	for _, o := range objs {
		if o.Size > limit || repo.HasLFS(o) {
			continue
		}
		name := messages.LFSObjectName(run, o.OID)
		obj, err := obs.Get(ctx, name)
		if errors.Is(err, jetstream.ErrObjectNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("get the git lfs object %s: %w", o.OID, err)
		}
		err = repo.StoreLFS(o, obj, from+" ("+name+")")
		obj.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// fetchSnapshotLFS brings into the node's store the git lfs objects
// that the pointers of the snapshot's tree name and that it lacks.
func (t taskTransport) fetchSnapshotLFS(ctx context.Context, obs jetstream.ObjectStore, repo *gitws.Repo, tree string) error {
	ptrs, err := repo.LFSPointers(ctx, tree, nil)
	if err != nil || len(ptrs) == 0 {
		return err
	}
	objs := make([]messages.LFSObject, 0, len(ptrs))
	for _, p := range ptrs {
		objs = append(objs, p.LFSObject)
	}
	return getLFS(ctx, obs, repo, t.task.Run, objs, repo.MaxChangeBytes(), "the snapshot bucket")
}

// shipLFS puts the git lfs objects cs names, from the node's store, in
// the changes bucket.
func (t taskTransport) shipLFS(ctx context.Context, from *gitws.Repo, cs *messages.Changeset) error {
	if len(cs.LFS) == 0 {
		return nil
	}
	obs, err := t.n.o.Bus.JetStream().ObjectStore(ctx, t.n.o.Bus.Names().Changes)
	if err != nil {
		return err
	}
	for _, o := range cs.LFS {
		if err := putLFS(ctx, obs, from, t.task.Run, o); err != nil {
			return err
		}
	}
	return nil
}

// receiveLFS brings the git lfs objects cs names from the changes
// bucket into the user's storage (repo's). A mismatch refuses the
// result (messages.ErrDigest); an object that did not come is left to
// the land, which refuses the changeset naming it.
func (s *snapshotSender) receiveLFS(ctx context.Context, repo *gitws.Repo, cs *messages.Changeset) error {
	if len(cs.LFS) == 0 || repo == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, snapshotFetchTimeout)
	defer cancel()
	obs, err := s.r.o.Bus.JetStream().ObjectStore(ctx, s.r.o.Bus.Names().Changes)
	if err != nil {
		s.r.o.Log.Warn().Err(err).Msg("get a changeset's git lfs objects")
		return nil
	}
	err = getLFS(ctx, obs, repo, s.r.o.Run, cs.LFS, repo.MaxChangeBytes(), "the changes bucket")
	if errors.Is(err, messages.ErrDigest) {
		return fmt.Errorf("%w (another party wrote that object)", err)
	}
	if err != nil {
		s.r.o.Log.Warn().Err(err).Msg("get a changeset's git lfs objects")
	}
	return nil
}
