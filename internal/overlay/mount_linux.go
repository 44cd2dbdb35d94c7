package overlay

import (
	"errors"
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
)

// An overlay is mounted by descriptor, never by path (the new mount API:
// fsopen, fsconfig, fsmount, move_mount): the holder opens the lower,
// upper and work directories and the mount point beneath the request's
// root, each walk refusing a symbolic link and any step out of root,
// hands overlayfs the layers as descriptors (FSCONFIG_SET_FD, Linux
// 6.13; before, the descriptors' /proc/self/fd/N paths, which the
// kernel resolves to the very directories opened) and moves the new
// mount onto the mount point's descriptor. Between the walk and the
// mount nothing is looked up by name again, so a path component swapped
// for a symlink meanwhile is either refused by the walk or not seen at
// all.

// beneath is how the holder opens a directory below the request's root.
var beneath = unix.OpenHow{
	Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
	Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
}

// mountBeneath mounts the overlay req asks for and returns its root
// directory, opened for reading.
func mountBeneath(req request) (int, error) {
	if req.LowerRoot == "" {
		req.LowerRoot = req.Root
	}
	var fds [4]int
	for i, rel := range []string{req.Lower, req.Upper, req.Work, req.Target} {
		base := req.Root
		if i == 0 {
			base = req.LowerRoot
		}
		fd, err := openBeneath(base, rel)
		if err != nil {
			for _, f := range fds[:i] {
				unix.Close(f)
			}
			return -1, err
		}
		fds[i] = fd
	}
	defer func() {
		for _, f := range fds {
			unix.Close(f)
		}
	}()
	mnt, err := makeOverlay(fds[0], fds[1], fds[2])
	if err != nil {
		return -1, fmt.Errorf("mount overlay at %s: %w", req.Target, err)
	}
	defer unix.Close(mnt)
	if err := unix.MoveMount(mnt, "", fds[3], "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return -1, fmt.Errorf("mount overlay at %s: %w", req.Target, err)
	}
	dir, err := unix.Openat(mnt, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = unix.Unmount("/proc/self/fd/"+strconv.Itoa(mnt), unix.MNT_DETACH)
		return -1, fmt.Errorf("mount overlay at %s: %w", req.Target, err)
	}
	return dir, nil
}

// openBeneath opens the directory rel beneath root (O_PATH), refusing a
// symbolic link anywhere on the way and any step out of root.
func openBeneath(root, rel string) (int, error) {
	dir, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("mount overlay: open %s: %w", root, err)
	}
	defer unix.Close(dir)
	fd, err := unix.Openat2(dir, rel, &beneath)
	if err != nil {
		return -1, fmt.Errorf("mount overlay: open %s beneath %s: %w", rel, root, err)
	}
	return fd, nil
}

// readOnlyBeneath bind-mounts the directory rel below root on itself,
// read-only (open_tree, mount_setattr, move_mount, all by descriptor).
func readOnlyBeneath(root, rel string) error {
	dir, err := openBeneath(root, rel)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	tree, err := unix.OpenTree(dir, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
	if err != nil {
		return fmt.Errorf("read-only %s: open_tree: %w", rel, err)
	}
	defer unix.Close(tree)
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return fmt.Errorf("read-only %s: mount_setattr: %w", rel, err)
	}
	if err := unix.MoveMount(tree, "", dir, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("read-only %s: move_mount: %w", rel, err)
	}
	return nil
}

// makeOverlay makes a detached overlay mount of the layers lower, upper
// and work (descriptors) and returns it.
func makeOverlay(lower, upper, work int) (int, error) {
	fs, err := unix.Fsopen("overlay", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("fsopen: %w", err)
	}
	defer unix.Close(fs)
	if err := setLayers(fs, lower, upper, work); err != nil {
		return -1, err
	}
	if err := unix.FsconfigSetFlag(fs, "userxattr"); err != nil {
		return -1, fmt.Errorf("fsconfig userxattr: %w", err)
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return -1, fmt.Errorf("fsconfig create: %w", err)
	}
	return unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOSUID)
}

// layersByFD is false once the kernel refused a layer given as a
// descriptor: the holder gives their /proc/self/fd paths from then on.
var layersByFD = true

// setLayers gives the overlay context fs its layers.
func setLayers(fs, lower, upper, work int) error {
	if layersByFD {
		err := unix.FsconfigSetFd(fs, "lowerdir+", lower)
		if err == nil {
			err = unix.FsconfigSetFd(fs, "upperdir", upper)
		}
		if err == nil {
			return wrap("workdir", unix.FsconfigSetFd(fs, "workdir", work))
		}
		if !errors.Is(err, unix.EINVAL) || !fdLayersRefused(lower) {
			return fmt.Errorf("fsconfig layers: %w", err)
		}
		layersByFD = false
	}
	for _, kv := range [][2]string{{"lowerdir", fdPath(lower)}, {"upperdir", fdPath(upper)}, {"workdir", fdPath(work)}} {
		if err := unix.FsconfigSetString(fs, kv[0], kv[1]); err != nil {
			return wrap(kv[0], err)
		}
	}
	return nil
}

// fdLayersRefused reports whether this kernel's overlayfs takes no
// layer as a descriptor (asked on a fresh context, as the failed one may
// hold half a configuration).
func fdLayersRefused(lower int) bool {
	fs, err := unix.Fsopen("overlay", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return false
	}
	defer unix.Close(fs)
	return errors.Is(unix.FsconfigSetFd(fs, "lowerdir+", lower), unix.EINVAL)
}

func fdPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

func wrap(key string, err error) error {
	if err != nil {
		return fmt.Errorf("fsconfig %s: %w", key, err)
	}
	return nil
}

// UnlockWork makes the directory overlayfs keeps in a work directory
// (work, which it makes with no permissions, and in which it can leave
// entries) its owner's to remove: work is the work directory named in
// the directory dirfd. Without it a user other than root cannot remove
// a used work directory. No symbolic link is followed: an O_PATH
// descriptor of work/work, opened beneath dirfd without following any,
// is changed through its /proc/self/fd path.
func UnlockWork(dirfd int, work string) error {
	fd, err := unix.Openat2(dirfd, work+"/work", &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("unlock overlay work directory: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Chmod(fdPath(fd), 0o700); err != nil {
		return fmt.Errorf("unlock overlay work directory: %w", err)
	}
	return nil
}
