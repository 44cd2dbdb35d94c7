package changes

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/workspace"
)

// Git LFS objects travel with snapshots and changesets (docs/wire.md):
// a snapshot's, those its tree's pointers name that the requester's
// storage holds, eagerly (the node's checkout smudges every LFS file of
// the tree, so it needs them all at once); a node's changeset's, those
// the changed files' pointers name, which the node's clean stored in
// its store. The requester lands a changeset only when its storage
// holds every object the changed files' pointers name.

// lfsToShip lists the git lfs objects of the files tree to changed from
// from (once each) that repo's storage holds and that are within max
// bytes (max ≤ 0: no bound).
func lfsToShip(ctx context.Context, repo *workspace.Repo, from, to string, max int64) ([]messages.LFSObject, error) {
	if to == "" {
		return nil, nil
	}
	ptrs, err := repo.LFSChanged(ctx, from, to)
	if err != nil {
		return nil, err
	}
	return Held(repo, ptrs, max), nil
}

// Held is the objects of ptrs (once each) that repo's git lfs storage
// holds and that are within max bytes (max ≤ 0: no bound).
func Held(repo *workspace.Repo, ptrs []workspace.LFSPointer, max int64) []messages.LFSObject {
	seen := map[string]bool{}
	var objs []messages.LFSObject
	for _, p := range ptrs {
		if seen[p.OID] || (max > 0 && p.Size > max) || !repo.HasLFS(p.LFSObject) {
			continue
		}
		seen[p.OID] = true
		objs = append(objs, p.LFSObject)
	}
	return objs
}

// copyLFS copies the git lfs objects objs from from's storage into
// to's, each checked against its oid.
func copyLFS(_ context.Context, from, to *workspace.Repo, objs []messages.LFSObject) error {
	for _, o := range objs {
		if to.HasLFS(o) {
			continue
		}
		f, err := from.OpenLFS(o)
		if err != nil {
			return err
		}
		err = to.StoreLFS(o, f, "the node's store")
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// errLFSMissing is a changeset whose pointers name git lfs objects the
// requester's storage does not hold.
var errLFSMissing = errors.New("git lfs objects missing")

// lfsArrived checks that repo's git lfs storage holds every object the
// pointers of the files cs changes (its tree against snap's) name; the
// error names the files and objects that did not arrive.
func lfsArrived(ctx context.Context, repo *workspace.Repo, snap workspace.Snapshot, cs messages.Changeset) error {
	if cs.Tree == "" || snap.Tree == "" {
		return nil
	}
	ptrs, err := repo.LFSChanged(ctx, snap.Tree, cs.Tree)
	if err != nil {
		return err
	}
	var missing []string
	for _, p := range ptrs {
		if !repo.HasLFS(p.LFSObject) {
			missing = append(missing, fmt.Sprintf("%s (oid %s, %d bytes)", p.Path, p.OID, p.Size))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("%w: the git lfs objects of %s did not arrive with the changeset", errLFSMissing, strings.Join(missing, ", "))
}
