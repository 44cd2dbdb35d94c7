//go:build linux

package search

import (
	"encoding/binary"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// dirHandle is an open directory: its entries are listed with getdents64
// and opened with openat, so the kernel resolves one name, not the path.
type dirHandle struct{ fd int }

// noDir stands for "no open directory".
var noDir = dirHandle{fd: -1}

// opened is the search's target when it is a file: its descriptor, opened
// beneath the root.
type opened struct{ fd int }

func (o *opened) close() { syscall.Close(o.fd) }

// openStart opens the target rel beneath root (os.Root follows symlinks
// inside the root and refuses any that lead out, also when a component is
// swapped meanwhile) without waiting on a pipe, and returns it as a
// directory to walk or as a file with its type bits.
func openStart(root *os.Root, rel string) (dirHandle, *opened, fs.FileMode, error) {
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return noDir, nil, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return noDir, nil, 0, err
	}
	var fd int
	var dupErr error
	cerr := withFd(f, func(raw int) { fd, dupErr = unix.FcntlInt(uintptr(raw), unix.F_DUPFD_CLOEXEC, 0) })
	if cerr != nil {
		return noDir, nil, 0, cerr
	}
	if dupErr != nil {
		return noDir, nil, 0, dupErr
	}
	if fi.IsDir() {
		return dirHandle{fd: fd}, nil, fs.ModeDir, nil
	}
	return noDir, &opened{fd: fd}, fi.Mode().Type(), nil
}

// withFd calls fn with f's descriptor (without the blocking-mode switch
// of File.Fd).
func withFd(f *os.File, fn func(fd int)) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Control(func(fd uintptr) { fn(int(fd)) })
}

// listFile lists the open directory f with getdents64 on its descriptor.
func listFile(f *os.File, fn func(name string, typ fs.FileMode)) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var lerr error
	buf := make([]byte, 32<<10)
	if err := rc.Read(func(fd uintptr) bool {
		lerr = dirHandle{fd: int(fd)}.list(buf, fn)
		return true
	}); err != nil {
		return err
	}
	return lerr
}

// openChild opens the subdirectory name of h. It never follows a
// symbolic link: a directory swapped for one since h was listed fails to
// open rather than leading elsewhere.
func (h dirHandle) openChild(name string) (dirHandle, error) {
	for {
		fd, err := unix.Openat(h.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return noDir, err
		}
		return dirHandle{fd: fd}, nil
	}
}

func (h dirHandle) close() {
	if h.fd >= 0 {
		syscall.Close(h.fd)
	}
}

// list calls fn with each entry's name and type bits; buf is scratch space.
func (h dirHandle) list(buf []byte, fn func(name string, typ fs.FileMode)) error {
	for {
		n, err := syscall.ReadDirent(h.fd, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n <= 0 {
			return nil
		}
		for off := 0; off+19 <= n; {
			// struct linux_dirent64: ino u64, off i64, reclen u16, type u8, name
			reclen := int(binary.NativeEndian.Uint16(buf[off+16:]))
			if reclen == 0 || off+reclen > n {
				break
			}
			name := buf[off+19 : off+reclen]
			for i, c := range name {
				if c == 0 {
					name = name[:i]
					break
				}
			}
			if s := string(name); s != "." && s != ".." {
				fn(s, h.typeOf(buf[off+18], s))
			}
			off += reclen
		}
	}
}

// typeOf turns a dirent type into type bits, asking the file system when
// the directory does not say.
func (h dirHandle) typeOf(dt byte, name string) fs.FileMode {
	switch dt {
	case syscall.DT_REG:
		return 0
	case syscall.DT_DIR:
		return fs.ModeDir
	case syscall.DT_LNK:
		return fs.ModeSymlink
	case syscall.DT_FIFO:
		return fs.ModeNamedPipe
	case syscall.DT_SOCK:
		return fs.ModeSocket
	case syscall.DT_CHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case syscall.DT_BLK:
		return fs.ModeDevice
	}
	var st unix.Stat_t
	if err := unix.Fstatat(h.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fs.ModeIrregular
	}
	return modeOf(st.Mode)
}

func modeOf(m uint32) fs.FileMode {
	switch m & syscall.S_IFMT {
	case syscall.S_IFREG:
		return 0
	case syscall.S_IFDIR:
		return fs.ModeDir
	case syscall.S_IFLNK:
		return fs.ModeSymlink
	case syscall.S_IFIFO:
		return fs.ModeNamedPipe
	case syscall.S_IFSOCK:
		return fs.ModeSocket
	case syscall.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFBLK:
		return fs.ModeDevice
	}
	return fs.ModeIrregular
}

// openEntry opens an entry for reading, relative to its directory, never
// following a symbolic link (a file swapped for one since the directory
// was listed is not read). The target itself, opened beneath the root
// already, is read through a copy of its descriptor. It never waits on a
// pipe: the open is non-blocking, and anything but a regular file (a
// FIFO, a socket, a device) is refused with ErrNotRegular, checked on the
// descriptor itself.
func openEntry(e Entry, _ bool) (*rawFile, error) {
	flags := syscall.O_RDONLY | syscall.O_CLOEXEC | syscall.O_NOCTTY | syscall.O_NONBLOCK | syscall.O_NOFOLLOW
	for {
		var fd int
		var err error
		switch {
		case e.pre != nil:
			fd, err = unix.FcntlInt(uintptr(e.pre.fd), unix.F_DUPFD_CLOEXEC, 0)
		case e.dir.fd >= 0:
			fd, err = syscall.Openat(e.dir.fd, e.Name, flags, 0)
		default:
			return nil, fmt.Errorf("%s: %w", e.Path, ErrOutsideRoot)
		}
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		var st syscall.Stat_t
		if err := syscall.Fstat(fd, &st); err != nil {
			syscall.Close(fd)
			return nil, err
		}
		if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
			syscall.Close(fd)
			return nil, fmt.Errorf("%s: %w", e.Path, ErrNotRegular)
		}
		return &rawFile{fd: fd}, nil
	}
}

// lstatEntry returns an entry's modification time and whether it is a
// directory, not following a symbolic link.
func lstatEntry(e Entry) (time.Time, bool, error) {
	var st unix.Stat_t
	var err error
	switch {
	case e.pre != nil:
		err = unix.Fstat(e.pre.fd, &st)
	case e.dir.fd >= 0:
		err = unix.Fstatat(e.dir.fd, e.Name, &st, unix.AT_SYMLINK_NOFOLLOW)
	default:
		err = fmt.Errorf("%s: %w", e.Path, ErrOutsideRoot)
	}
	if err != nil {
		return time.Time{}, false, err
	}
	return time.Unix(st.Mtim.Unix()), st.Mode&syscall.S_IFMT == syscall.S_IFDIR, nil
}
