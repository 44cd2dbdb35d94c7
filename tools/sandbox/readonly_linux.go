package sandbox

import (
	"errors"
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// protectHoles keeps holes read-only for what this thread (or, in the
// launcher, this process) starts, and returns the policy Landlock is then
// to apply: p when every hole is bound read-only in a mount namespace of
// our own (made here when unshare is set: the thread path; the launcher
// was cloned into one), or p with its writes split around the holes when
// that cannot be done (see readonly.go).
func protectHoles(p Policy, holes []string, unshare bool) Policy {
	if len(holes) == 0 {
		return p
	}
	if err := mountReadOnly(holes, unshare); err != nil {
		if unshare { // this process's thread: say so (a launcher cannot)
			noteFallback(err.Error())
		}
		return p.splitWrites(holes)
	}
	return p
}

// mountReadOnly binds each hole read-only onto itself in this thread's
// mount namespace (a new one first when unshare is set), after cutting
// the propagation of our mounts back to the namespace we came from.
func mountReadOnly(holes []string, unshare bool) error {
	if unshare {
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			return fmt.Errorf("make a mount namespace: %w", err)
		}
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("cut mount propagation: %w", err)
	}
	for _, h := range holes {
		if err := bindReadOnly(h); err != nil {
			return fmt.Errorf("bind %s read-only: %w", h, err)
		}
	}
	return nil
}

// bindReadOnly mounts a read-only copy of the tree (or file) at path onto
// itself, submounts included: with the new mount API where the kernel
// has it (5.12), which sets the read-only flag alone; else by a bind and
// a remount that keeps the flags the mount already has (a user
// namespace may not drop nosuid, nodev or noexec).
func bindReadOnly(path string) error {
	fd, err := unix.OpenTree(unix.AT_FDCWD, path, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_SYMLINK_NOFOLLOW)
	if err == nil {
		defer unix.Close(fd)
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
		if err = unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err == nil {
			return unix.MoveMount(fd, "", unix.AT_FDCWD, path, unix.MOVE_MOUNT_F_EMPTY_PATH)
		}
	}
	if !errors.Is(err, unix.ENOSYS) {
		return err
	}
	if err := unix.Mount(path, path, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return err
	}
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return err
	}
	keep := uintptr(st.Flags) & (unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_NOATIME | unix.MS_NODIRATIME | unix.MS_RELATIME)
	return unix.Mount("", path, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|keep, "")
}

// probeThreadMountNS reports whether this process can make a mount
// namespace on a thread and cut its propagation (CAP_SYS_ADMIN); the
// thread is retired afterwards.
func probeThreadMountNS() error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			errc <- err
			return
		}
		errc <- unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, "")
	}()
	return <-errc
}
