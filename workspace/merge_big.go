package workspace

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// mergeInMemory is the largest file a merge holds in memory: a file
// with a side above it (the snapshot's blob, the agent's, or the
// workspace's file) is merged by object IDs and streams (mergeBig), so
// an apply's memory does not follow the files' sizes.
// A variable: the differential test merges every file this way too.
var mergeInMemory int64 = 8 << 20

// bigEntries returns the paths of es that are merged by mergeBig: a side
// over mergeInMemory (a converted file's too: its clean and smudge are
// streamed, convert_stream.go).
func (r *Repo) bigEntries(ctx context.Context, top *dirFD, es []entry) (map[string]bool, error) {
	big := map[string]bool{}
	bigBlob := map[string]bool{}
	for _, e := range es {
		for _, side := range [][2]string{{e.oldMode, e.oldBlob}, {e.newMode, e.newBlob}} {
			if side[1] == "" || side[0] == "160000" {
				continue
			}
			n, err := r.objects().size(ctx, side[1])
			if err != nil {
				return nil, err
			}
			if n > mergeInMemory {
				bigBlob[side[1]] = true
			}
		}
	}
	for _, e := range es {
		if bigBlob[e.oldBlob] || bigBlob[e.newBlob] || oursSize(top, e.path) > mergeInMemory {
			big[e.path] = true
		}
	}
	return big, nil
}

// oursSize is the size of the regular file at path in the work tree (0
// when there is none, or it cannot be reached without a symlink).
func oursSize(top *dirFD, path string) int64 {
	dir, name := splitPath(path)
	d, err := top.sub(dir, false)
	if err != nil {
		return 0
	}
	defer d.close()
	st, err := d.lstat(name)
	if err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return 0
	}
	return st.Size
}

// mergeBig decides one file as mergeClean does, on object IDs: the
// workspace's file is hashed in pieces (and stored when the result is
// its contents), contents both sides changed are merged by git
// merge-file on files in the home (git's memory, not ours), and the
// change's contents are streamed from the object store when landed. A
// file git converts is read through its clean rules and written through
// its checkout's, streamed (conv.cleanID, conv.smudgeSrc).
func (r *Repo) mergeBig(ctx context.Context, top *dirFD, conv *converter, e entry, idLen int) (*change, string, error) {
	if !filepath.IsLocal(filepath.FromSlash(e.path)) {
		return nil, "", fmt.Errorf("%s: %w", e.path, errOutside)
	}
	if e.oldMode == "160000" || e.newMode == "160000" {
		return nil, e.path + " is a repository of its own (a submodule) in the changes: the merge leaves those to you", nil
	}
	dir, name := splitPath(e.path)
	d, err := top.sub(dir, false)
	switch {
	case errors.Is(err, errSymlinkParent) || errors.Is(err, errNotDir):
		if errors.Is(err, errSymlinkParent) || e.newMode != "" {
			return nil, linkReason(err), nil
		}
		d = nil
	case errors.Is(err, os.ErrNotExist):
		d = nil
	case err != nil:
		return nil, "", fmt.Errorf("read %s: %w", e.path, err)
	}
	if d != nil {
		defer d.close()
	}
	hash := func(abs string) (string, error) {
		id, err := hashBlobFile(abs, idLen)
		return hex.EncodeToString(id), err
	}
	if conv.converts(e.path) {
		hash = func(abs string) (string, error) { return conv.cleanID(ctx, e.path, fileSrc(abs)) }
	}
	ours, err := oursByID(d, name, idLen, hash)
	if err != nil {
		return nil, "", fmt.Errorf("read %s: %w", e.path, err)
	}
	base := version{mode: e.oldMode, blob: e.oldBlob}
	theirs := version{mode: e.newMode, blob: e.newBlob}
	switch {
	case ours.equal(theirs), theirs.equal(base):
		return nil, "", nil
	case ours.equal(base):
		return r.bigChange(ctx, conv, e.path, theirs)
	case !ours.exists() || !theirs.exists() || !ours.regular() || !theirs.regular():
		return nil, overlap, nil
	}
	mode := ours.mode
	switch {
	case ours.mode == theirs.mode || ours.mode == base.mode:
		mode = theirs.mode
	case theirs.mode != base.mode:
		return nil, overlap, nil
	}
	blob := theirs.blob
	switch {
	case ours.blob == theirs.blob || (base.exists() && ours.blob == base.blob):
	case base.exists() && theirs.blob == base.blob && conv.converts(e.path):
		blob = ours.blob // stored by its clean
	case base.exists() && theirs.blob == base.blob:
		id, err := storeBlobFile(r.home.objects, fdPath(d, name), idLen)
		if err != nil {
			return nil, "", err
		}
		blob = hex.EncodeToString(id)
	default:
		oursSrc := fileSrc(fdPath(d, name))
		if conv.converts(e.path) {
			oursSrc = r.blobTo(ctx, ours.blob)
		}
		var ok bool
		if blob, ok, err = r.mergeFileBig(ctx, oursSrc, base, theirs, idLen); err != nil || !ok {
			if err == nil {
				return nil, overlap, nil
			}
			return nil, "", err
		}
	}
	return r.bigChange(ctx, conv, e.path, version{mode: mode, blob: blob})
}

// bigChange is the change to v at path: a regular file's contents
// streamed from the object store when landed (through git's checkout
// conversion when conv converts path), a symlink's read (small).
func (r *Repo) bigChange(ctx context.Context, conv *converter, path string, v version) (*change, string, error) {
	c := &change{path: path, to: v}
	switch {
	case v.regular() && conv.converts(path):
		c.src = conv.smudgeSrc(ctx, path, v.blob)
	case v.regular():
		c.src = r.blobTo(ctx, v.blob)
	case v.exists():
		_, data, err := r.objects().read(ctx, v.blob)
		if err != nil {
			return nil, "", err
		}
		c.to.data = data
	}
	return c, "", nil
}

// oursByID is the work tree's version of name in d (nil: its directory
// is absent) with its blob ID and no contents: a regular file's by hash
// (of its path through d), a symlink's target hashed.
func oursByID(d *dirFD, name string, idLen int, hash func(abs string) (string, error)) (version, error) {
	if d == nil {
		return version{}, nil
	}
	st, err := d.lstat(name)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return version{}, nil
	case err != nil:
		return version{}, err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		target, err := d.readlink(name)
		return version{mode: "120000", blob: hex.EncodeToString(objectID(idLen, "blob", []byte(target)))}, err
	case unix.S_IFDIR:
		return version{mode: "dir"}, nil
	case unix.S_IFREG:
	default:
		return version{mode: "other"}, nil
	}
	id, err := hash(fdPath(d, name))
	if err != nil {
		return version{}, err
	}
	mode := "100644"
	if st.Mode&0o111 != 0 {
		mode = "100755"
	}
	return version{mode: mode, blob: id}, nil
}

// fdPath is the path of name in d through d's descriptor: the directory
// reached beneath the work tree stays the one opened (only name's own
// symlink is then refused, by O_NOFOLLOW).
func fdPath(d *dirFD, name string) string {
	return "/proc/self/fd/" + strconv.Itoa(d.fd()) + "/" + name
}

// blobTo writes the blob id to w, streamed from git cat-file (an
// *os.File gets git's output directly).
func (r *Repo) blobTo(ctx context.Context, id string) patchWriter {
	return func(w io.Writer) error {
		cmd, err := r.g.command(ctx, "cat-file", "blob", id)
		if err != nil {
			return err
		}
		var stderr strings.Builder
		cmd.Stdout, cmd.Stderr = w, &limitedWriter{w: &stderr, n: 4 << 10}
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("git cat-file blob %.12s: %w: %s", id, err, strings.TrimSpace(stderr.String()))
		}
		return nil
	}
}

// mergeFileBig merges the contents of the workspace's file name in d
// with base's and theirs' by git merge-file on copies in the home,
// streamed there (ours from oursSrc): the result's blob ID (stored), and
// false when they conflict (or are binary: git merges text only).
func (r *Repo) mergeFileBig(ctx context.Context, oursSrc patchWriter, base, theirs version, idLen int) (string, bool, error) {
	dir, err := os.MkdirTemp(r.home.tmpDir(), r.home.tmpName("merge"))
	if err != nil {
		return "", false, fmt.Errorf("merge: %w", err)
	}
	defer os.RemoveAll(dir)
	put := func(file string, src patchWriter) error {
		f, err := os.OpenFile(filepath.Join(dir, file), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		if src != nil {
			err = src(f)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}
	var baseSrc patchWriter
	if base.regular() {
		baseSrc = r.blobTo(ctx, base.blob) // a base of another type: a two-way merge, as git's
	}
	for _, p := range []struct {
		file string
		src  patchWriter
	}{{"ours", oursSrc}, {"base", baseSrc}, {"theirs", r.blobTo(ctx, theirs.blob)}} {
		if err := put(p.file, p.src); err != nil {
			return "", false, fmt.Errorf("merge: %w", err)
		}
	}
	for _, file := range []string{"ours", "base", "theirs"} {
		if bin, err := binaryFile(filepath.Join(dir, file)); err != nil || bin {
			return "", false, err // binary contents both changed: a conflict, as git's
		}
	}
	g := r.home.git()
	g.dir = dir
	_, code, err := g.runCode(ctx, nil, "merge-file", "ours", "base", "theirs")
	if err != nil {
		return "", false, fmt.Errorf("merge: %w", err)
	}
	if code != 0 {
		return "", false, nil
	}
	id, err := storeBlobFile(r.home.objects, filepath.Join(dir, "ours"), idLen)
	if err != nil {
		return "", false, err
	}
	return hex.EncodeToString(id), true, nil
}

// binaryFile reports whether the file at abs looks binary (binary's
// rule: a NUL in its first 8,000 bytes).
func binaryFile(abs string) (bool, error) {
	f, err := os.Open(abs)
	if err != nil {
		return false, err
	}
	defer f.Close()
	head := make([]byte, 8000)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return false, err
	}
	return binary(head[:n]), nil
}
