package bus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ArtifactsBucket is the JetStream object store of spilled outputs with
// the default prefix (see Names.Artifacts).
const ArtifactsBucket = "troupe_artifacts"

// Artifacts keeps a run's spilled outputs in the object store, so an agent
// on any node reads what another wrote: handles are
// artifact://<run>/<name>. It has the shape of tools.ArtifactStore.
//
// Put uploads in the background and returns the handle at once, so a tool
// result never waits on NATS; Flush waits for the uploads, Close cancels
// those still running.
type Artifacts struct {
	js      jetstream.JetStream
	bucket  string
	run     string
	ctx     context.Context
	cancel  context.CancelFunc
	uploads sync.WaitGroup
	failed  atomic.Uint64
}

// artifactUploadTimeout bounds one background upload.
const artifactUploadTimeout = 30 * time.Second

// Artifacts returns run's artifact store (EnsureStreams creates the
// bucket).
func (c *Conn) Artifacts(run string) *Artifacts {
	a := &Artifacts{js: c.js, bucket: c.Names().Artifacts, run: run}
	a.ctx, a.cancel = context.WithCancel(context.Background())
	return a
}

const artifactScheme = "artifact://"

// Put reads r and stores it as name in the background; it returns the
// handle without waiting on NATS. ctx is not used beyond reading r: the
// upload ends with Close or after artifactUploadTimeout.
func (a *Artifacts) Put(_ context.Context, name string, r io.Reader) (string, error) {
	if err := CheckToken("artifact name", strings.ReplaceAll(name, ".", "_")); err != nil {
		return "", err
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return "", fmt.Errorf("artifacts: read %s: %w", name, err)
	}
	key := a.run + "/" + name
	a.uploads.Add(1)
	go func() {
		defer a.uploads.Done()
		ctx, cancel := context.WithTimeout(a.ctx, artifactUploadTimeout)
		defer cancel()
		if err := a.put(ctx, key, data); err != nil {
			a.failed.Add(1)
		}
	}()
	return artifactScheme + key, nil
}

func (a *Artifacts) put(ctx context.Context, key string, data []byte) error {
	obs, err := a.js.ObjectStore(ctx, a.bucket)
	if err != nil {
		return fmt.Errorf("artifacts: %w", err)
	}
	if _, err := obs.PutBytes(ctx, key, data); err != nil {
		return fmt.Errorf("artifacts: put %s: %w", key, err)
	}
	return nil
}

// Flush waits for the uploads under way, or for ctx to end.
func (a *Artifacts) Flush(ctx context.Context) error {
	done := make(chan struct{})
	go func() { a.uploads.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close cancels the uploads still under way and waits for them to stop.
func (a *Artifacts) Close() {
	a.cancel()
	a.uploads.Wait()
}

// Failed counts the uploads that did not complete.
func (a *Artifacts) Failed() uint64 { return a.failed.Load() }

// Get writes the content of handle to w.
func (a *Artifacts) Get(ctx context.Context, handle string, w io.Writer) error {
	key, ok := strings.CutPrefix(handle, artifactScheme)
	if !ok || key == "" {
		return fmt.Errorf("not an artifact handle: %q", handle)
	}
	obs, err := a.js.ObjectStore(ctx, a.bucket)
	if err != nil {
		return fmt.Errorf("artifacts: %w", err)
	}
	res, err := obs.Get(ctx, key)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return fmt.Errorf("no artifact %s (artifacts are kept %s)", key, artifactsMaxAge)
	}
	if err != nil {
		return fmt.Errorf("artifacts: get %s: %w", key, err)
	}
	defer res.Close()
	if _, err := io.Copy(w, res); err != nil {
		return fmt.Errorf("artifacts: read %s: %w", key, err)
	}
	return nil
}

// artifactsMaxAge is how long spilled outputs are kept in the store.
const artifactsMaxAge = 24 * time.Hour

func ensureArtifacts(ctx context.Context, js jetstream.JetStream, bucket string, mk *maker) error {
	if _, err := js.ObjectStore(ctx, bucket); err == nil {
		return nil
	} else if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return fmt.Errorf("look up object store %s: %w", bucket, err)
	}
	if err := mk.make("OBJ_"+bucket, func(r int) error {
		_, err := js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: bucket, TTL: artifactsMaxAge,
			Replicas: r, Description: "troupe spilled outputs: artifact://<run>/<name>"})
		if errors.Is(err, jetstream.ErrBucketExists) {
			return nil
		}
		return err
	}); err != nil {
		return fmt.Errorf("create object store %s: %w", bucket, err)
	}
	return nil
}
