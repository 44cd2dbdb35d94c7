package workspace

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/troupe-ai/troupe/messages"
)

// Git LFS objects as they travel between machines. A tree of a
// repository using Git LFS holds pointers (small blobs naming an
// object's SHA-256 and size); the objects' content is in git lfs's
// storage (filter_gitdir.go: the user's .git/lfs, a store's own lfs).
// A snapshot shipped to a node needs the objects its pointers name for
// the node's checkout to smudge them; a changeset a node's worker made
// names objects the node's clean stored, which the user's storage
// needs before the land. These helpers list the pointers of a tree (or
// of a change), and read and write objects of the storage: each write
// streamed into lfs/tmp, its SHA-256 and size checked against the oid
// and size it is stored as (a mismatch is refused, nothing kept), then
// renamed into objects/<oid[0:2]>/<oid[2:4]>/<oid>, the directories
// opened without following a symbolic link.

// LFSPointer is a git lfs pointer a tree holds at Path.
type LFSPointer struct {
	Path string
	messages.LFSObject
}

// lfsPointerMax is the largest blob read as a pointer (git lfs's own
// cut-off: a pointer is well under it).
const lfsPointerMax = 1024

// lfsPointerMin is the smallest pointer: its version, oid and size
// lines (a listing reads no smaller blob).
const lfsPointerMin = int64(len(lfsVersion) + 1 + len("oid sha256:") + 64 + 1 + len("size 0\n"))

// lfsVersion is the first line of a pointer.
const lfsVersion = "version https://git-lfs.github.com/spec/v1"

// parseLFSPointer reads blob as a git lfs pointer; ok false when it is
// not one.
func parseLFSPointer(blob []byte) (obj messages.LFSObject, ok bool) {
	if len(blob) > lfsPointerMax || !bytes.HasPrefix(blob, []byte(lfsVersion+"\n")) {
		return obj, false
	}
	size := int64(-1)
	for line := range strings.SplitSeq(string(blob), "\n") {
		if v, found := strings.CutPrefix(line, "oid sha256:"); found {
			obj.OID = v
		} else if v, found := strings.CutPrefix(line, "size "); found {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return obj, false
			}
			size = n
		}
	}
	obj.Size = size
	return obj, messages.ValidLFSOID(obj.OID) && size >= 0
}

// LFSPointers lists the pointers of tree (paths nil: all of its
// files; else only those paths).
func (r *Repo) LFSPointers(ctx context.Context, tree string, paths []string) ([]LFSPointer, error) {
	args := []string{"ls-tree", "-r", "-l", "-z", "--full-tree", tree}
	if paths != nil {
		if len(paths) == 0 {
			return nil, nil
		}
		args = append(append(args, "--"), paths...)
	}
	out, err := r.g.run(ctx, nil, args...)
	if err != nil {
		return nil, fmt.Errorf("list the git lfs pointers of %.12s: %w", tree, err)
	}
	var ptrs []LFSPointer
	for rec := range bytes.SplitSeq(out, []byte{0}) {
		meta, path, ok := bytes.Cut(rec, []byte{'\t'})
		f := strings.Fields(string(meta))
		if !ok || len(f) != 4 || f[1] != "blob" || f[0] == "120000" {
			continue
		}
		if n, err := strconv.ParseInt(f[3], 10, 64); err != nil || n > lfsPointerMax || n < lfsPointerMin {
			continue
		}
		_, blob, err := r.objects().read(ctx, f[2])
		if err != nil {
			return nil, fmt.Errorf("list the git lfs pointers of %.12s: %w", tree, err)
		}
		if obj, ok := parseLFSPointer(blob); ok {
			ptrs = append(ptrs, LFSPointer{Path: string(path), LFSObject: obj})
		}
	}
	return ptrs, nil
}

// LFSChanged lists the pointers of the files tree to holds that differ
// from those of from (added or changed; "" from: all of to's).
func (r *Repo) LFSChanged(ctx context.Context, from, to string) ([]LFSPointer, error) {
	if from == "" {
		return r.LFSPointers(ctx, to, nil)
	}
	out, err := r.g.run(ctx, nil, "diff-tree", "-r", "-z", "--no-renames", "--name-only", "--diff-filter=AMT", from, to)
	if err != nil {
		return nil, fmt.Errorf("list the changed git lfs pointers: %w", err)
	}
	paths := []string{}
	for p := range strings.SplitSeq(strings.TrimRight(string(out), "\x00"), "\x00") {
		if p != "" {
			paths = append(paths, ":(literal)"+p)
		}
	}
	return r.LFSPointers(ctx, to, paths)
}

// HoldsLFS reports whether the repository's git lfs storage holds any
// object (a repository that does not use git lfs has none, and its
// snapshots are not searched for pointers).
func (r *Repo) HoldsLFS() bool {
	d, err := openBeneath(r.lfsDir(), "objects", false)
	if err != nil {
		return false
	}
	defer d.close()
	names, _ := d.f.Readdirnames(1)
	return len(names) > 0
}

// ErrLFSMissing is an object git lfs's storage does not hold.
var ErrLFSMissing = errors.New("not in the git lfs storage")

// lfsObjectDir is where the storage keeps oid, below it.
func lfsObjectDir(oid string) string { return "objects/" + oid[:2] + "/" + oid[2:4] }

// HasLFS reports whether the repository's git lfs storage holds obj
// (a regular file of its size; its content is not read).
func (r *Repo) HasLFS(obj messages.LFSObject) bool {
	f, err := r.OpenLFS(obj)
	if err != nil {
		return false
	}
	f.Close()
	return true
}

// OpenLFS opens obj in the repository's git lfs storage: ErrLFSMissing
// when it is not there, an error when it is not a regular file of
// obj.Size bytes.
func (r *Repo) OpenLFS(obj messages.LFSObject) (*os.File, error) {
	if !messages.ValidLFSOID(obj.OID) {
		return nil, fmt.Errorf("git lfs object %q: not a SHA-256", obj.OID)
	}
	d, err := openBeneath(r.lfsDir(), lfsObjectDir(obj.OID), false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("git lfs object %s: %w", obj.OID, ErrLFSMissing)
	}
	if err != nil {
		return nil, fmt.Errorf("git lfs object %s: %w", obj.OID, err)
	}
	defer d.close()
	fd, err := unix.Openat(d.fd(), obj.OID, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, fmt.Errorf("git lfs object %s: %w", obj.OID, ErrLFSMissing)
	}
	if err != nil {
		return nil, fmt.Errorf("git lfs object %s: %w", obj.OID, err)
	}
	f := os.NewFile(uintptr(fd), obj.OID)
	fi, err := f.Stat()
	switch {
	case err != nil:
	case !fi.Mode().IsRegular():
		err = errors.New("not a regular file")
	case fi.Size() != obj.Size:
		err = fmt.Errorf("%d bytes, its pointer says %d", fi.Size(), obj.Size)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("git lfs object %s: %w", obj.OID, err)
	}
	return f, nil
}

// StoreLFS streams obj's content from src into the repository's git lfs
// storage (nothing when it is there already). What is read must be
// obj.Size bytes with SHA-256 obj.OID: otherwise nothing is stored and
// the error wraps messages.ErrDigest. what names the source in errors.
func (r *Repo) StoreLFS(obj messages.LFSObject, src io.Reader, what string) error {
	if !messages.ValidLFSOID(obj.OID) || obj.Size < 0 {
		return fmt.Errorf("git lfs object %q from %s: not a SHA-256 and a size", obj.OID, what)
	}
	if r.HasLFS(obj) {
		return nil
	}
	storage, err := r.lfsStorage()
	if err != nil {
		return err
	}
	tmp, err := openBeneath(storage, "tmp", true)
	if err != nil {
		return fmt.Errorf("git lfs storage: %w", err)
	}
	defer tmp.close()
	// A name of its own (O_EXCL): two writers of one object never share
	// a file, so what is renamed is what this one checked.
	name := "troupe-" + obj.OID[:16] + "-" + strconv.FormatUint(rand.Uint64(), 36)
	fd, err := unix.Openat(tmp.fd(), name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return fmt.Errorf("git lfs storage: %w", err)
	}
	f := os.NewFile(uintptr(fd), name)
	stored := false
	defer func() {
		if !stored {
			_ = unix.Unlinkat(tmp.fd(), name, 0)
		}
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(src, obj.Size+1))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("git lfs object %s from %s: %w", obj.OID, what, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); n != obj.Size || got != obj.OID {
		return fmt.Errorf("%w: the git lfs object %s from %s holds %d bytes with SHA-256 %.16s…, its oid names %d bytes with SHA-256 %.16s…",
			messages.ErrDigest, obj.OID, what, n, got, obj.Size, obj.OID)
	}
	dir, err := openBeneath(storage, lfsObjectDir(obj.OID), true)
	if err != nil {
		return fmt.Errorf("git lfs storage: %w", err)
	}
	defer dir.close()
	if err := unix.Renameat(tmp.fd(), name, dir.fd(), obj.OID); err != nil {
		return fmt.Errorf("git lfs storage: store %s: %w", obj.OID, err)
	}
	stored = true
	return nil
}

// MaxChangeBytes is the largest file the repository's captures carry
// (agent.max_change_bytes), which bounds the git lfs objects that
// travel too.
func (r *Repo) MaxChangeBytes() int64 { return r.maxChange() }
