package cluster

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/bus"
	gitws "github.com/troupe-ai/troupe/workspace"
)

// BenchmarkShipBigSnapshot ships a snapshot holding a 200 MiB random
// uncommitted file from a requester to a node's store over an embedded
// NATS server: the requester's bundle into the snapshot bucket
// (snapshotSender.store), the node's fetch, proof and unbundling
// (unbundle). The snapshot is taken once; each iteration ships it into a
// new store; store-s/op and fetch-s/op are the two sides' shares. Its
// peak RSS is TestRemoteBigSnapshotKeepsMemoryBounded's.
func BenchmarkShipBigSnapshot(b *testing.B) {
	needGit(b)
	dir := b.TempDir()
	requester, nodeWS := filepath.Join(dir, "requester"), filepath.Join(dir, "node")
	if err := os.Mkdir(requester, 0o755); err != nil {
		b.Fatal(err)
	}
	bigRepos(b, requester, nodeWS)
	writeURandom(b, filepath.Join(requester, "big.bin"), snapshotBig)
	c := wrap(b, connect(b, natsServer(b)))
	if err := c.EnsureStreams(b.Context(), bus.StreamLimits{}); err != nil {
		b.Fatal(err)
	}
	repo, err := gitws.Open(b.Context(), requester, gitws.Options{DataDir: filepath.Join(dir, "data")})
	if err != nil {
		b.Fatal(err)
	}
	snap, err := repo.Snapshot(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	s := &snapshotSender{r: &Remote{o: RemoteOptions{Bus: c, Run: "rb"}}}
	obs, err := c.JetStream().ObjectStore(b.Context(), c.Names().Snapshots)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(snapshotBig)
	var storing, fetching time.Duration
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		digest, err := s.store(b.Context(), repo, snap, true, "rb/snap.bundle")
		if err != nil {
			b.Fatal(err)
		}
		storing += time.Since(start)
		store, err := gitws.OpenStore(b.Context(), filepath.Join(dir, "stores", string(rune('a'+i%26))), nodeWS, 0)
		if err != nil {
			b.Fatal(err)
		}
		start = time.Now()
		if err := unbundle(b.Context(), obs, store, "rb/snap.bundle", digest); err != nil {
			b.Fatal(err)
		}
		fetching += time.Since(start)
		if !store.Has(b.Context(), snap.Commit) {
			b.Fatal("the store lacks the snapshot")
		}
		b.StopTimer()
		if err := os.RemoveAll(filepath.Join(dir, "stores")); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(storing.Seconds()/float64(b.N), "store-s/op")
	b.ReportMetric(fetching.Seconds()/float64(b.N), "fetch-s/op")
}
