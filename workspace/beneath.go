package workspace

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Files troupe reads, writes or removes in a tree an agent can write
// (the workspace, a worktree, a data directory inside the workspace) go
// through a dirFD: a directory opened below a trusted one component by
// component, each opened with O_NOFOLLOW, then the file named in it
// with the *at system calls. A symbolic link anywhere on the way is an
// error (errSymlinkParent), never followed, even one an agent swaps in
// while troupe works: each step holds the directory it opened.

// errSymlinkParent is a path with a symbolic link where a directory
// should be: troupe does not read, write or remove through one.
var errSymlinkParent = errors.New("a symbolic link where a directory should be")

// errNotDir is a path with a file where a directory should be.
var errNotDir = errors.New("a file where a directory should be")

// linkError is errSymlinkParent or errNotDir met at path (relative to
// the directory the walk began in).
type linkError struct {
	path string
	err  error
}

func (e *linkError) Error() string { return e.path + ": " + e.err.Error() }
func (e *linkError) Unwrap() error { return e.err }

// dirFD is an open directory below a trusted one.
type dirFD struct {
	f *os.File
}

// openBeneath opens the directory rel (relative, slash- or
// OS-separated, "" or "." for base itself) below base, whose own path is
// trusted, following no symbolic link below base. With create, missing
// directories are made (mode 0755, less the umask). A component that is
// a symlink or a file gives errSymlinkParent.
func openBeneath(base, rel string, create bool) (*dirFD, error) {
	fd, err := unix.Open(base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: base, Err: err}
	}
	return walk(fd, base, rel, create)
}

// walk opens the directory rel below the directory fd (at path base),
// component by component (see openBeneath), and closes fd. An error
// names the path, below base, where it stopped.
func walk(fd int, base, rel string, create bool) (*dirFD, error) {
	rel = filepath.ToSlash(filepath.Clean(filepath.FromSlash(rel)))
	if rel != "." && !filepath.IsLocal(rel) {
		unix.Close(fd)
		return nil, fmt.Errorf("%s: %w", rel, errOutside)
	}
	if rel != "." {
		comps := strings.Split(rel, "/")
		for i, c := range comps {
			next, err := openChild(fd, c, create)
			unix.Close(fd)
			if errors.Is(err, errSymlinkParent) || errors.Is(err, errNotDir) {
				return nil, &linkError{path: strings.Join(comps[:i+1], "/"), err: err}
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", strings.Join(comps[:i+1], "/"), err)
			}
			fd = next
		}
	}
	return &dirFD{f: os.NewFile(uintptr(fd), filepath.Join(base, filepath.FromSlash(rel)))}, nil
}

// openChild opens the directory name in the directory dirfd, not
// following a symlink; with create it is made first when missing.
func openChild(dirfd int, name string, create bool) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		switch {
		case err == nil:
			return fd, nil
		case errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR):
			var st unix.Stat_t
			if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT != unix.S_IFLNK {
				return -1, errNotDir
			}
			return -1, errSymlinkParent
		case errors.Is(err, unix.ENOENT) && create:
			if err := unix.Mkdirat(dirfd, name, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
				return -1, err
			}
			create = false // once: a race that removes it again is an error
		case errors.Is(err, unix.ENOENT):
			return -1, fs.ErrNotExist
		case errors.Is(err, unix.EINTR):
		default:
			return -1, err
		}
	}
}

// close closes the directory.
func (d *dirFD) close() { d.f.Close() }

// fd is the directory's descriptor.
func (d *dirFD) fd() int { return int(d.f.Fd()) }

// sub opens the directory rel below d (see openBeneath).
func (d *dirFD) sub(rel string, create bool) (*dirFD, error) {
	fd, err := unix.Dup(d.fd())
	if err != nil {
		return nil, err
	}
	unix.CloseOnExec(fd)
	return walk(fd, d.f.Name(), rel, create)
}

// lstat is what lstat says of name in d, or fs.ErrNotExist.
func (d *dirFD) lstat(name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Fstatat(d.fd(), name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		err = fs.ErrNotExist
	}
	return st, err
}

// readFile reads the regular file name in d (a symlink is an error),
// at most limit bytes (0: any size).
func (d *dirFD) readFile(name string, limit int64) ([]byte, error) {
	fd, err := unix.Openat(d.fd(), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, fs.ErrNotExist
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", name)
	}
	if limit > 0 && fi.Size() > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, limit)
	}
	return io.ReadAll(f)
}

// readlink is the target of the symlink name in d.
func (d *dirFD) readlink(name string) (string, error) {
	buf := make([]byte, 256)
	for {
		n, err := unix.Readlinkat(d.fd(), name, buf)
		if err != nil {
			return "", &fs.PathError{Op: "readlink", Path: name, Err: err}
		}
		if n < len(buf) {
			return string(buf[:n]), nil
		}
		buf = make([]byte, 2*len(buf))
	}
}

// replace makes name in d a file of git mode mode (0o100644, 0o100755 or
// 0o120000, data then being the symlink's target) holding data: written
// to a new temporary name beside it, then renamed over whatever name is
// (a symlink there is replaced, not followed).
func (d *dirFD) replace(name string, mode uint32, data []byte) error {
	tmp := ".troupe-" + strconv.FormatUint(rand.Uint64(), 16) + ".tmp"
	err := d.create(tmp, mode, data)
	if err == nil {
		err = unix.Renameat(d.fd(), tmp, d.fd(), name)
	}
	if err != nil {
		_ = unix.Unlinkat(d.fd(), tmp, 0)
		return &fs.PathError{Op: "write", Path: name, Err: err}
	}
	return nil
}

// create makes the new file name in d (see replace), failing when it
// exists.
func (d *dirFD) create(name string, mode uint32, data []byte) error {
	if mode == 0o120000 {
		return unix.Symlinkat(string(data), d.fd(), name)
	}
	perm := uint32(0o644)
	if mode == 0o100755 {
		perm = 0o755
	}
	return d.writeNew(name, perm, data)
}

// writeNew writes data to the new regular file name in d with
// permissions perm (less the umask).
func (d *dirFD) writeNew(name string, perm uint32, data []byte) error {
	fd, err := unix.Openat(d.fd(), name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// remove removes the file or symlink name in d (a directory is an
// error); one already gone is not.
func (d *dirFD) remove(name string) error {
	err := unix.Unlinkat(d.fd(), name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return &fs.PathError{Op: "remove", Path: name, Err: err}
}

// rmdir removes the directory name in d when it is empty, and reports
// whether it did.
func (d *dirFD) rmdir(name string) bool {
	return unix.Unlinkat(d.fd(), name, unix.AT_REMOVEDIR) == nil
}

// removeAll removes name in d and, when it is a directory, everything
// in it, following no symlink (a link is removed, not what it names).
func (d *dirFD) removeAll(name string) error {
	st, err := d.lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return d.remove(name)
	}
	sub, err := d.sub(name, false)
	if err != nil {
		return err
	}
	names, err := sub.f.Readdirnames(-1)
	if err == nil {
		for _, n := range names {
			if err = sub.removeAll(n); err != nil {
				break
			}
		}
	}
	sub.close()
	if err != nil {
		return err
	}
	if err := unix.Unlinkat(d.fd(), name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		return &fs.PathError{Op: "remove", Path: name, Err: err}
	}
	return nil
}

// readBeneath reads the regular file rel below the trusted directory
// base, following no symlink, at most limit bytes.
func readBeneath(base, rel string, limit int64) ([]byte, error) {
	dir, name := filepath.Split(filepath.FromSlash(rel))
	d, err := openBeneath(base, dir, false)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fs.ErrNotExist
		}
		return nil, err
	}
	defer d.close()
	return d.readFile(name, limit)
}

// writeBeneath writes data as the file rel below the trusted directory
// base (a temporary file renamed over it), making the directories on the
// way, following no symlink; perm 0o644 or 0o755.
func writeBeneath(base, rel string, data []byte, perm os.FileMode) error {
	dir, name := filepath.Split(filepath.FromSlash(rel))
	d, err := openBeneath(base, dir, true)
	if err != nil {
		return err
	}
	defer d.close()
	mode := uint32(0o100644)
	if perm&0o111 != 0 {
		mode = 0o100755
	}
	return d.replace(name, mode, data)
}

// sameDir reports whether the directory d and the one at path (opened
// by path, following symlinks) are one directory.
func (d *dirFD) sameDir(fi os.FileInfo) bool {
	mine, err := d.f.Stat()
	return err == nil && os.SameFile(mine, fi)
}

// ownedByUs reports whether the file fi describes belongs to this
// process's user.
func ownedByUs(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}

// RemoveBeneath removes path and everything in it without following a
// symlink below the trusted directory it is reached from: the workspace
// root when path is inside the workspace at root, else path's parent. A
// symlink on the way is an error and nothing is removed; a symlink at
// path or inside it is removed itself, not what it names. A path
// already gone is not an error.
func RemoveBeneath(root, path string) error {
	path, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	base, rel := anchor(root, filepath.Dir(path))
	d, err := openBeneath(base, rel, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	defer d.close()
	if err := d.removeAll(filepath.Base(path)); err != nil {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}
