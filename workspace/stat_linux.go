//go:build linux

package workspace

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// fileStat is what lstat says of a path, in the index's terms.
type fileStat struct {
	mode  uint32 // st_mode
	st    indexStat
	bytes int64 // st_size, whole (the index keeps 32 bits)
}

// lstatFile lstats path.
func lstatFile(path string) (fileStat, error) {
	var s syscall.Stat_t
	for {
		err := syscall.Lstat(path, &s)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return fileStat{}, err
		}
		break
	}
	return fileStat{mode: s.Mode, st: indexStat{
		ctimeSec: uint32(s.Ctim.Sec), ctimeNsec: uint32(s.Ctim.Nsec),
		mtimeSec: uint32(s.Mtim.Sec), mtimeNsec: uint32(s.Mtim.Nsec),
		dev: uint32(s.Dev), ino: uint32(s.Ino), uid: s.Uid, gid: s.Gid, size: uint32(s.Size),
	}, bytes: s.Size}, nil
}

// lstatIn lstats name in the open directory dir (at path abs).
func lstatIn(dir *os.File, _ string, name string) (fileStat, error) {
	var s unix.Stat_t
	for {
		err := unix.Fstatat(int(dir.Fd()), name, &s, unix.AT_SYMLINK_NOFOLLOW)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fileStat{}, err
		}
		break
	}
	return fileStat{mode: s.Mode, st: indexStat{
		ctimeSec: uint32(s.Ctim.Sec), ctimeNsec: uint32(s.Ctim.Nsec),
		mtimeSec: uint32(s.Mtim.Sec), mtimeNsec: uint32(s.Mtim.Nsec),
		dev: uint32(s.Dev), ino: uint32(s.Ino), uid: s.Uid, gid: s.Gid, size: uint32(s.Size),
	}, bytes: s.Size}, nil
}

// inode is the inode number of the file info describes (0 unknown).
func inode(info os.FileInfo) uint64 {
	if s, ok := info.Sys().(*syscall.Stat_t); ok {
		return s.Ino
	}
	return 0
}
