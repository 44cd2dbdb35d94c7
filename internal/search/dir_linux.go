//go:build linux

package search

import (
	"encoding/binary"
	"fmt"
	"io/fs"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// dirHandle is an open directory: its entries are listed with getdents64
// and opened with openat, so the kernel resolves one name, not the path.
type dirHandle struct{ fd int }

// noDir stands for "no open directory": entries are opened by path.
var noDir = dirHandle{fd: -1}

func openDir(path string) (dirHandle, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
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

// openEntry opens an entry for reading, relative to its directory when
// that is open. It never waits on a pipe: the open is non-blocking, and
// anything but a regular file (a FIFO, a socket, a device) is refused
// with ErrNotRegular, checked on the descriptor itself.
func openEntry(e Entry, _ bool) (*rawFile, error) {
	flags := syscall.O_RDONLY | syscall.O_CLOEXEC | syscall.O_NOCTTY | syscall.O_NONBLOCK
	dirfd, name := unix.AT_FDCWD, e.Path
	if e.dir.fd >= 0 {
		dirfd, name = e.dir.fd, e.Name
	}
	for {
		fd, err := syscall.Openat(dirfd, name, flags, 0)
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
	dirfd, name := unix.AT_FDCWD, e.Path
	if e.dir.fd >= 0 {
		dirfd, name = e.dir.fd, e.Name
	}
	err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if err != nil {
		return time.Time{}, false, err
	}
	return time.Unix(st.Mtim.Unix()), st.Mode&syscall.S_IFMT == syscall.S_IFDIR, nil
}
