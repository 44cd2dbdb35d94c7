package bus

import (
	"context"
	"errors"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// The requester writes snapshots and nodes read them, never write them;
// nodes write changesets and the requester reads them; a run's objects
// go when it ends.
func TestSnapshotAndChangesBucketsPerRole(t *testing.T) {
	e, paths := authServer(t)
	ctx := t.Context()
	conn := roleConns(t, e, paths)
	node := conn(RoleNode)
	req := conn(RoleRequester)
	if err := req.EnsureStreams(ctx, StreamLimits{}); err != nil {
		t.Fatal(err)
	}
	store := func(c *Conn, bucket string) jetstream.ObjectStore {
		obs, err := c.JetStream().ObjectStore(ctx, bucket)
		if err != nil {
			t.Fatalf("open %s: %v", bucket, err)
		}
		return obs
	}
	if _, err := store(req, SnapshotsBucket).PutBytes(ctx, "r1/snap-1.bundle", []byte("bundle")); err != nil {
		t.Fatalf("requester writes a snapshot: %v", err)
	}
	if got, err := store(node, SnapshotsBucket).GetBytes(ctx, "r1/snap-1.bundle"); err != nil || string(got) != "bundle" {
		t.Fatalf("node reads a snapshot: %q, %v", got, err)
	}
	wctx, cancel := context.WithTimeout(ctx, 3e9)
	defer cancel()
	if _, err := store(node, SnapshotsBucket).PutBytes(wctx, "r1/forged.bundle", []byte("x")); err == nil {
		t.Error("a node wrote a snapshot")
	}
	if _, err := store(node, ChangesBucket).PutBytes(ctx, "r1/worker-1.patch", []byte("patch")); err != nil {
		t.Fatalf("node writes a changeset: %v", err)
	}
	if got, err := store(req, ChangesBucket).GetBytes(ctx, "r1/worker-1.patch"); err != nil || string(got) != "patch" {
		t.Fatalf("requester reads a changeset: %q, %v", got, err)
	}
	if _, err := store(req, ChangesBucket).PutBytes(ctx, "r2/worker-1.patch", []byte("other run")); err != nil {
		t.Fatal(err)
	}
	if err := req.DeleteRunObjects(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	for bucket, name := range map[string]string{SnapshotsBucket: "r1/snap-1.bundle", ChangesBucket: "r1/worker-1.patch"} {
		if _, err := store(req, bucket).GetInfo(ctx, name); !errors.Is(err, jetstream.ErrObjectNotFound) {
			t.Errorf("%s %s after the run's cleanup: %v", bucket, name, err)
		}
	}
	if _, err := store(req, ChangesBucket).GetInfo(ctx, "r2/worker-1.patch"); err != nil {
		t.Errorf("another run's object deleted: %v", err)
	}
}
