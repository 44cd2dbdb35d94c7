package workspace

import (
	"compress/zlib"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// A capture reads the files it hashes and stores in pieces of streamPiece
// bytes: its working set is a few of them per goroutine (four scan, one
// stores) and zlib's window, whatever the files' sizes.
const streamPiece = 256 << 10

// DefaultMaxChangeBytes is Options.MaxChangeBytes when unset: the largest
// file a capture carries (agent.max_change_bytes).
const DefaultMaxChangeBytes = 100 << 20

// errChanged is returned when a file's size changed while it was read.
var errChanged = errors.New("changed while it was read")

// openRegular opens the regular file at abs without following a symlink
// and returns it with its size.
func openRegular(abs string) (*os.File, int64, error) {
	f, err := os.OpenFile(abs, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("%s: not a regular file", abs)
	}
	return f, st.Size(), nil
}

// copyExactly copies size bytes of f to w in pieces, failing when f
// holds fewer or more (a file rewritten while it was read).
func copyExactly(w io.Writer, f *os.File, size int64) error {
	buf := make([]byte, streamPiece)
	n, err := io.CopyBuffer(w, io.LimitReader(f, size), buf)
	if err != nil {
		return err
	}
	if n != size {
		return fmt.Errorf("%s: %w", f.Name(), errChanged)
	}
	if m, _ := f.Read(buf[:1]); m != 0 {
		return fmt.Errorf("%s: %w", f.Name(), errChanged)
	}
	return nil
}

// hashBlobFile is the blob ID of the regular file at abs, read in pieces.
func hashBlobFile(abs string, idLen int) ([]byte, error) {
	f, size, err := openRegular(abs)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := newHash(idLen)
	h.Write([]byte("blob " + strconv.FormatInt(size, 10) + "\x00"))
	if err := copyExactly(h, f, size); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}

// storeBlobFile stores the regular file at abs as a loose blob (see
// writeLoose), reading, hashing and compressing it in one pass of
// pieces into a temporary file at the top of the object store, then
// linking it into place; it returns the blob's ID.
func storeBlobFile(objDir, abs string, idLen int) ([]byte, error) {
	f, size, err := openRegular(abs)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d, err := openBeneath(objDir, "", false)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", abs, err)
	}
	defer d.close()
	tmp := "tmp_obj_" + strconv.FormatUint(rand.Uint64(), 36)
	fd, err := unix.Openat(d.fd(), tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o444)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", abs, err)
	}
	defer d.remove(tmp)
	out := os.NewFile(uintptr(fd), tmp)
	h := newHash(idLen)
	zw, _ := zlib.NewWriterLevel(out, zlib.BestSpeed) // git's core.looseCompression default
	w := io.MultiWriter(h, zw)
	_, err = w.Write([]byte("blob " + strconv.FormatInt(size, 10) + "\x00"))
	if err == nil {
		err = copyExactly(w, f, size)
	}
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", abs, err)
	}
	id := h.Sum(nil)
	name := hex.EncodeToString(id)
	sub, err := d.sub(name[:2], true)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", abs, err)
	}
	defer sub.close()
	if _, err := sub.lstat(name[2:]); err == nil {
		return id, nil
	}
	if err := unix.Linkat(d.fd(), tmp, sub.fd(), name[2:], 0); err != nil && !errors.Is(err, unix.EEXIST) {
		if err := unix.Renameat(d.fd(), tmp, sub.fd(), name[2:]); err != nil {
			return nil, fmt.Errorf("store %s: %w", abs, err)
		}
	}
	return id, nil
}
