package workspace

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/messages"
)

// bundleTemps are the bundles left in r's home's tmp directory.
func bundleTemps(t *testing.T, r *Repo) []string {
	t.Helper()
	got, err := filepath.Glob(filepath.Join(r.home.tmpDir(), "*-bundle-*"))
	must(t, err)
	return got
}

// A bundle fetched from the wire is proven before git sees it: bytes
// that are not those the digest names (another valid bundle, the right
// one cut short, or none named) are refused with an error naming the
// bundle, nothing of them is unbundled, and no temporary file is left;
// the right bytes are unbundled and their file removed too.
func TestUnbundleFromRefusesBytesTheDigestDoesNotName(t *testing.T) {
	requester := newRepo(t, map[string]string{"a.go": "package a\n", ".gitignore": ".troupe/\n"})
	write(t, requester, map[string]string{"a.go": "package a // uncommitted edit\n"})
	r := open(t, requester)
	snap, err := r.Snapshot(t.Context())
	must(t, err)
	b, err := r.Bundle(t.Context(), snap, false)
	must(t, err)
	defer b.Remove()
	data, err := os.ReadFile(b.Path)
	must(t, err)
	if int64(len(data)) != b.Size || messages.Digest(data) != b.SHA256 {
		t.Fatalf("the bundle's file: %d bytes, SHA-256 %s; Bundle says %d, %s", len(data), messages.Digest(data), b.Size, b.SHA256)
	}
	other := newRepo(t, map[string]string{"z.go": "package z\n"})
	forged, err := os.ReadFile(writeBundle(t, other))
	must(t, err)

	store, err := OpenStore(t.Context(), filepath.Join(t.TempDir(), "data"), "", 0)
	must(t, err)
	for name, c := range map[string]struct {
		bytes  []byte
		digest string
	}{
		"another bundle": {forged, b.SHA256},
		"cut short":      {data[:len(data)/2], b.SHA256},
		"no digest":      {data, ""},
	} {
		err := store.UnbundleFrom(t.Context(), "the snapshot bundle rr/snap.bundle", bytes.NewReader(c.bytes), c.digest)
		if !errors.Is(err, messages.ErrDigest) || !strings.Contains(err.Error(), "the snapshot bundle rr/snap.bundle") {
			t.Errorf("%s: %v, want a digest mismatch naming the bundle", name, err)
		}
		if store.Has(t.Context(), snap.Commit) || store.Has(t.Context(), sh(t, other, "rev-parse", "HEAD")) {
			t.Errorf("%s: unbundled", name)
		}
		if left := bundleTemps(t, store); len(left) != 0 {
			t.Errorf("%s: left %v", name, left)
		}
	}
	must(t, store.UnbundleFrom(t.Context(), "the snapshot bundle rr/snap.bundle", bytes.NewReader(data), b.SHA256))
	if !store.Has(t.Context(), snap.Commit) {
		t.Error("the proven bundle was not unbundled")
	}
	if left := bundleTemps(t, store); len(left) != 0 {
		t.Errorf("left %v", left)
	}
}

// A bundle git cannot make (its base is no object of the repository's)
// leaves no temporary file behind.
func TestFailedBundleLeavesNoFile(t *testing.T) {
	requester := newRepo(t, map[string]string{"a.go": "package a\n", ".gitignore": ".troupe/\n"})
	r := open(t, requester)
	snap, err := r.Snapshot(t.Context())
	must(t, err)
	snap.Base = strings.Repeat("1", 40)
	if _, err := r.Bundle(t.Context(), snap, true); err == nil || !strings.Contains(err.Error(), "git bundle create") {
		t.Fatalf("bundled with a base the repository lacks: %v", err)
	}
	if left := bundleTemps(t, r); len(left) != 0 {
		t.Errorf("left %v", left)
	}
}

// writeBundle is a bundle of root's HEAD made by the user's git.
func writeBundle(t *testing.T, root string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "other.bundle")
	sh(t, root, "bundle", "create", "-q", path, "HEAD")
	return path
}
