package workspace

import (
	"errors"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// The lock that keeps a store's tidy (StoreKeeper.Tidy) from its uses
// (StoreKeeper.Use): within the process a read-write mutex per lock file
// (every Repo of the store shares it), between processes a POSIX record
// lock on the file, read-locked while the process has users, write-locked
// by a tidy. A record lock, unlike a flock, is the process's alone: a
// child forked while it is held (git, a filter in its sandbox, which may
// take a while to exec) never holds it on.

// storeLock is the lock of one store.
type storeLock struct {
	rw    sync.RWMutex // users share it; a tidy takes it whole
	mu    sync.Mutex   // guards users and f
	users int          // the process's users
	f     *os.File     // the lock file, read-locked while users > 0
}

// storeLocks are the process's store locks by their file's path.
var storeLocks sync.Map

// storeLockAt is the lock of the store whose lock file is path.
func storeLockAt(path string) *storeLock {
	l, _ := storeLocks.LoadOrStore(path, &storeLock{})
	return l.(*storeLock)
}

// share marks the store in use, waiting for a tidy, this process's or
// another's, to end; the returned function (which may be called more
// than once) ends the use.
func (l *storeLock) share(path string) (func(), error) {
	l.rw.RLock()
	l.mu.Lock()
	if l.users == 0 {
		f, err := openLockFile(path)
		if err == nil {
			err = recordLock(f, unix.F_RDLCK, true)
			if err != nil {
				f.Close()
			}
		}
		if err != nil {
			l.mu.Unlock()
			l.rw.RUnlock()
			return nil, err
		}
		l.f = f
	}
	l.users++
	l.mu.Unlock()
	return sync.OnceFunc(func() {
		l.mu.Lock()
		if l.users--; l.users == 0 {
			l.f.Close() // releases the record lock
			l.f = nil
		}
		l.mu.Unlock()
		l.rw.RUnlock()
	}), nil
}

// try takes the store whole when no one, in this process or another,
// uses it: ok false, at once, when someone does.
func (l *storeLock) try(path string) (release func(), ok bool, err error) {
	if !l.rw.TryLock() {
		return nil, false, nil
	}
	f, err := openLockFile(path)
	if err == nil {
		if err = recordLock(f, unix.F_WRLCK, false); err != nil {
			f.Close()
		}
	}
	if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
		l.rw.Unlock()
		return nil, false, nil
	}
	if err != nil {
		l.rw.Unlock()
		return nil, false, err
	}
	return func() {
		f.Close()
		l.rw.Unlock()
	}, true, nil
}

// openLockFile opens the lock file at path, made if need be, never
// through a symlink.
func openLockFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, 0o600)
}

// recordLock takes a POSIX record lock of type typ on all of f, waiting
// for it when wait.
func recordLock(f *os.File, typ int16, wait bool) error {
	cmd := unix.F_SETLK
	if wait {
		cmd = unix.F_SETLKW
	}
	lk := unix.Flock_t{Type: typ, Whence: 0, Start: 0, Len: 0}
	for {
		err := unix.FcntlFlock(f.Fd(), cmd, &lk)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
