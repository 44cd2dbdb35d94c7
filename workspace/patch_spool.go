package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/troupe-ai/troupe/messages"
)

// Spooled patches. A changeset's patch that must travel as bytes (a
// node's changeset going home, a nested carry, one fetched from the
// changes bucket) is streamed from git, or from the wire, into a private
// file of troupe's (dir/spool, 0700; the file 0600), its SHA-256 taken
// on the way, and read from there in pieces: no buffer of ours ever
// holds it whole, whatever the files' sizes. A small one is read into
// memory to travel inline (PatchFile.Bytes).

// spoolDir holds, under a data or state directory, the patches on their
// way somewhere. Each file is named for the process that spools it
// (<pid>-patch-*), so what a killed process left there is removed by the
// next process that spools in that directory (sweepSpool).
const spoolDir = "spool"

// swept holds the spool directories this process has swept.
var swept sync.Map

// sweepSpool removes, once per process and directory, the spooled files
// of processes that are no longer running (a node or orchestrator killed
// while a patch was on its way). Files of live processes, and names not
// of the form <pid>-..., are left alone.
func sweepSpool(spool string) {
	if _, done := swept.LoadOrStore(spool, true); done {
		return
	}
	entries, err := os.ReadDir(spool)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.Type().IsRegular() && deadOwner(e.Name()) {
			_ = os.Remove(filepath.Join(spool, e.Name()))
		}
	}
}

// PatchFile is a patch spooled to a file of troupe's.
type PatchFile struct {
	Path   string // the file; remove it (Remove) once used
	Size   int64  // its length in bytes
	SHA256 string // its SHA-256 in lowercase hex (messages.Digest)
}

// SpoolPatch writes what write writes to a new private file in
// dir/spool, taking its SHA-256 and length, and returns it; on an error
// nothing is left behind.
func SpoolPatch(dir string, write func(io.Writer) error) (PatchFile, error) {
	spool := filepath.Join(dir, spoolDir)
	if err := os.MkdirAll(spool, 0o700); err != nil {
		return PatchFile{}, fmt.Errorf("spool a patch: %w", err)
	}
	sweepSpool(spool)
	f, err := os.CreateTemp(spool, strconv.Itoa(os.Getpid())+"-patch-*")
	if err != nil {
		return PatchFile{}, fmt.Errorf("spool a patch: %w", err)
	}
	h := sha256.New()
	cw := &countWriter{w: io.MultiWriter(f, h)}
	err = write(cw)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return PatchFile{}, fmt.Errorf("spool a patch: %w", err)
	}
	return PatchFile{Path: f.Name(), Size: cw.n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// SpoolReader spools what r holds (a patch fetched from the wire) and
// checks it is what digest names (messages.ErrDigest otherwise, nothing
// kept); what names it for the error.
func SpoolReader(dir, what string, r io.Reader, digest string) (PatchFile, error) {
	if digest == "" {
		return PatchFile{}, messages.CheckDigest(what, nil, "")
	}
	p, err := SpoolPatch(dir, func(w io.Writer) error {
		_, err := io.Copy(w, r)
		return err
	})
	if err != nil {
		return p, err
	}
	if p.SHA256 != digest {
		p.Remove()
		return PatchFile{}, fmt.Errorf("%w: %s has SHA-256 %.16s…, its proven message names %.16s…", messages.ErrDigest, what, p.SHA256, digest)
	}
	return p, nil
}

// Bytes reads the spooled patch into memory: for one small enough to
// travel inline.
func (p PatchFile) Bytes() ([]byte, error) { return os.ReadFile(p.Path) }

// Open opens the spooled patch for reading.
func (p PatchFile) Open() (*os.File, error) { return os.Open(p.Path) }

// Remove removes the spooled patch's file.
func (p PatchFile) Remove() {
	if p.Path != "" {
		_ = os.Remove(p.Path)
	}
}

// countWriter counts what it passes on.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// SpoolChangeset spools cs's patch to dir/spool (SpoolPatch): its own
// bytes when it carries them, else git's diff from snap's tree to cs's
// tree (a changeset of CaptureTree, whose objects this repository
// holds), streamed from git.
func (r *Repo) SpoolChangeset(ctx context.Context, dir string, snap Snapshot, cs messages.Changeset) (PatchFile, error) {
	if len(cs.Patch) == 0 && cs.Tree == "" {
		return PatchFile{}, errors.New("spool a patch: the changeset carries neither a patch nor a tree")
	}
	return SpoolPatch(dir, r.changesetPatch(ctx, snap, cs.Tree, cs))
}

// SpoolPatch spools the patch of cs, the worktree's changeset of
// CaptureTree, to dir/spool (Repo.SpoolChangeset).
func (w *Worktree) SpoolPatch(ctx context.Context, dir string, cs messages.Changeset) (PatchFile, error) {
	return w.repo.SpoolChangeset(ctx, dir, w.snap, cs)
}

// KeepPatchFile is KeepPatch of a spooled patch, copied in pieces.
func KeepPatchFile(root, dir, run, agent string, p PatchFile) (string, error) {
	return keepPatchFrom(root, dir, run, agent, PatchFrom(nil, p.Path))
}

// KeepPatchFrom is KeepPatch with the patch written by write, streaming.
func KeepPatchFrom(root, dir, run, agent string, write func(io.Writer) error) (string, error) {
	return keepPatchFrom(root, dir, run, agent, write)
}

// PatchOf writes cs's patch, streaming: its own bytes when it carries
// them, else git's diff of snap's tree to cs's (a changeset of
// CaptureTree), from git straight to the writer.
func (r *Repo) PatchOf(ctx context.Context, snap Snapshot, cs messages.Changeset) func(io.Writer) error {
	return r.changesetPatch(ctx, snap, cs.Tree, cs)
}

// PatchFrom writes a patch held inline (patch) or spooled (file, when
// not ""), streaming.
func PatchFrom(patch []byte, file string) func(io.Writer) error {
	if file == "" {
		return patchBytes(patch)
	}
	return func(w io.Writer) error {
		f, err := os.Open(file)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(w, f)
		return err
	}
}
