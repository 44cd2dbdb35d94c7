package bus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Object stores of workspace snapshots and changesets with the default
// prefix (see Names.Snapshots and Names.Changes).
const (
	// SnapshotsBucket holds the requester's workspace snapshots as git
	// bundles, <run>/<name>: the requester writes, nodes read.
	SnapshotsBucket = "troupe_snapshots"
	// ChangesBucket holds remote agents' changesets too large to carry in
	// a result, <run>/<agent>.patch: nodes write, the requester reads.
	ChangesBucket = "troupe_changes"
)

// snapshotsMaxAge bounds how long a snapshot or changeset is kept when
// the run that stored it never deleted it (a killed orchestrator).
const snapshotsMaxAge = 24 * time.Hour

// ensureObjectStores creates the snapshot and changeset buckets when
// missing.
func ensureObjectStores(ctx context.Context, js jetstream.JetStream, names Names, mk *maker) error {
	for _, b := range []struct{ name, what string }{
		{names.Snapshots, "troupe workspace snapshots of remote runs: <run>/<name>.bundle"},
		{names.Changes, "troupe remote agents' changesets too large for a result: <run>/<agent>.patch"},
	} {
		if _, err := js.ObjectStore(ctx, b.name); err == nil {
			continue
		} else if !errors.Is(err, jetstream.ErrBucketNotFound) {
			return fmt.Errorf("look up object store %s: %w", b.name, err)
		}
		if err := mk.make("OBJ_"+b.name, func(r int) error {
			_, err := js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: b.name, TTL: snapshotsMaxAge,
				Replicas: r, Description: b.what})
			if errors.Is(err, jetstream.ErrBucketExists) {
				return nil
			}
			return err
		}); err != nil {
			return fmt.Errorf("create object store %s: %w", b.name, err)
		}
	}
	return nil
}

// DeleteRunObjects deletes every object of run (<run>/...) from the
// snapshot and changeset buckets: the run has ended.
func (c *Conn) DeleteRunObjects(ctx context.Context, run string) error {
	var errs []error
	for _, bucket := range []string{c.Names().Snapshots, c.Names().Changes} {
		obs, err := c.js.ObjectStore(ctx, bucket)
		if err != nil {
			errs = append(errs, fmt.Errorf("delete objects of run %s: %w", run, err))
			continue
		}
		list, err := obs.List(ctx)
		if errors.Is(err, jetstream.ErrNoObjectsFound) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("delete objects of run %s: %w", run, err))
			continue
		}
		for _, info := range list {
			if strings.HasPrefix(info.Name, run+"/") {
				if err := obs.Delete(ctx, info.Name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
					errs = append(errs, fmt.Errorf("delete %s: %w", info.Name, err))
				}
			}
		}
	}
	return errors.Join(errs...)
}
