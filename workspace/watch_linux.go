//go:build linux

package workspace

import (
	"errors"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// watchMask is every change to a directory's entries or their contents
// and metadata that inotify reports (reads are not among them).
const watchMask = unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE | unix.IN_CREATE | unix.IN_DELETE |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_DONT_FOLLOW | unix.IN_ONLYDIR

// dirWatch is an inotify instance watching the tracked directories of a
// worktree: it tells whether anything was written there since it was
// set, so the scan a capture made can stand for the worktree later.
type dirWatch struct{ fd int }

// watchTracked watches the directories of top that m tracks (no symlink
// followed). A directory already gone is not watched: its parent's
// watch reports its return.
func watchTracked(top string, m *manifest) (*dirWatch, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, err
	}
	w := &dirWatch{fd: fd}
	var add func(rel string, d *mdir) error
	add = func(rel string, d *mdir) error {
		// Not joined (which would clean "top/."): top may be an anchored
		// path (/proc/self/fd/N), a symlink IN_DONT_FOLLOW would watch.
		_, err := unix.InotifyAddWatch(fd, top+string(filepath.Separator)+filepath.FromSlash(rel), watchMask)
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			return nil
		}
		if err != nil {
			return err
		}
		for i := range d.ents {
			if d.ents[i].isDir() {
				if err := add(rel+"/"+d.ents[i].name, d.ents[i].sub); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := add(".", m.root); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

// quiet reports whether no change was reported since the watch was set
// (nor an overflow of inotify's queue).
func (w *dirWatch) quiet() bool {
	var buf [4096]byte
	_, err := unix.Read(w.fd, buf[:])
	return errors.Is(err, unix.EAGAIN)
}

// close ends the watch.
func (w *dirWatch) close() {
	if w != nil {
		unix.Close(w.fd)
	}
}
