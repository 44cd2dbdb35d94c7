package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
)

// BundleFile is a git bundle in a private temporary file of a
// repository's home (tmp/, troupe's own: never a workspace's): made by
// Repo.Bundle, or spooled from the wire by Repo.UnbundleFrom. It is read
// from there in pieces.
type BundleFile struct {
	Path   string // the file; remove it (Remove) once used
	Size   int64  // its length in bytes
	SHA256 string // its SHA-256 in lowercase hex (messages.Digest)
}

// Open opens the bundle's file for reading.
func (b BundleFile) Open() (*os.File, error) { return os.Open(b.Path) }

// Remove removes the bundle's file.
func (b BundleFile) Remove() {
	if b.Path != "" {
		_ = os.Remove(b.Path)
	}
}

// spoolBundle writes what write writes to a new file in the home's tmp
// directory (created exclusively, 0600: no link there is followed),
// taking its SHA-256 and length on the way. The name starts with the
// process's ID, so what a killed process left is pruned. On an error
// nothing is left behind.
func (r *Repo) spoolBundle(write func(io.Writer) error) (BundleFile, error) {
	f, err := os.CreateTemp(r.home.tmpDir(), r.home.tmpName("bundle"))
	if err != nil {
		return BundleFile{}, err
	}
	h := sha256.New()
	cw := &countWriter{w: io.MultiWriter(f, h)}
	err = write(cw)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return BundleFile{}, err
	}
	return BundleFile{Path: f.Name(), Size: cw.n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}
