//go:build unix

package tools

import (
	"time"

	"golang.org/x/sys/unix"
)

// lchtimes sets the access and modification times of p without following
// a symbolic link.
func lchtimes(p string, mt time.Time) error {
	ts := unix.NsecToTimespec(mt.UnixNano())
	return unix.UtimesNanoAt(unix.AT_FDCWD, p, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW)
}
