package bus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ArtifactsBucket is the JetStream object store of spilled outputs.
const ArtifactsBucket = "troupe_artifacts"

// Artifacts keeps a run's spilled outputs in the object store, so an agent
// on any node reads what another wrote: handles are
// artifact://<run>/<name>. It has the shape of tools.ArtifactStore.
type Artifacts struct {
	js  jetstream.JetStream
	run string
}

// NewArtifacts returns run's artifact store on js (EnsureStreams creates
// the bucket).
func NewArtifacts(js jetstream.JetStream, run string) *Artifacts { return &Artifacts{js: js, run: run} }

// Artifacts is NewArtifacts on c.
func (c *Conn) Artifacts(run string) *Artifacts { return NewArtifacts(c.js, run) }

const artifactScheme = "artifact://"

// Put stores r as name and returns its handle.
func (a *Artifacts) Put(ctx context.Context, name string, r io.Reader) (string, error) {
	if err := CheckToken("artifact name", strings.ReplaceAll(name, ".", "_")); err != nil {
		return "", err
	}
	obs, err := a.js.ObjectStore(ctx, ArtifactsBucket)
	if err != nil {
		return "", fmt.Errorf("artifacts: %w", err)
	}
	key := a.run + "/" + name
	if _, err := obs.Put(ctx, jetstream.ObjectMeta{Name: key}, r); err != nil {
		return "", fmt.Errorf("artifacts: put %s: %w", key, err)
	}
	return artifactScheme + key, nil
}

// Get writes the content of handle to w.
func (a *Artifacts) Get(ctx context.Context, handle string, w io.Writer) error {
	key, ok := strings.CutPrefix(handle, artifactScheme)
	if !ok || key == "" {
		return fmt.Errorf("not an artifact handle: %q", handle)
	}
	obs, err := a.js.ObjectStore(ctx, ArtifactsBucket)
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

func ensureArtifacts(ctx context.Context, js jetstream.JetStream, replicas int) error {
	if _, err := js.ObjectStore(ctx, ArtifactsBucket); err == nil {
		return nil
	} else if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return fmt.Errorf("look up object store %s: %w", ArtifactsBucket, err)
	}
	if _, err := js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: ArtifactsBucket, TTL: artifactsMaxAge,
		Replicas: replicas, Description: "troupe spilled outputs: artifact://<run>/<name>"}); err != nil &&
		!errors.Is(err, jetstream.ErrBucketExists) {
		return fmt.Errorf("create object store %s: %w", ArtifactsBucket, err)
	}
	return nil
}
