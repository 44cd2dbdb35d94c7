package workspace

import (
	"bytes"
	"io"
	"os"
	"slices"

	"golang.org/x/sys/unix"
)

// What a land makes durable, and when (the steps of land.go), so that a
// power cut never leaves a journal that says more than the disk holds:
//
//   - the journal and its patch are fsynced, and the journals' directory,
//     before the tree is touched;
//   - each new file's contents (and a pre-image copied where no hard
//     link can be made) are fsynced as they are written; once all are
//     prepared, every directory that gained a .new or .old name or a
//     directory of the land's is fsynced, before the journal says
//     "committing" (its marker fsynced too): a rename the disk kept then
//     always has its pre-image to roll back to;
//   - after the renames, those directories are fsynced again, and only
//     then does the journal say "done" (marker and directory fsynced).
//
// A failed fsync is an I/O error of the land: it rolls back and keeps
// the patch.

// syncHook, when set (tests only), is called before each fsync of a
// land with what is synced: "journal <name>", "file <path>", "dir
// <path>" (below the work tree's top; "." for the top) or "marker
// <state>"; an error it returns is that fsync's.
var syncHook func(what string) error

// syncFD fsyncs fd, called what for syncHook.
func syncFD(fd int, what string) error {
	if syncHook != nil {
		if err := syncHook(what); err != nil {
			return err
		}
	}
	return unix.Fsync(fd)
}

// patchWriter writes a changeset's patch to w, streaming: a land's
// journal and a kept patch are written through one, never gathered in
// a buffer of their own.
type patchWriter func(w io.Writer) error

// patchBytes is the patchWriter of a patch held in memory.
func patchBytes(patch []byte) patchWriter {
	return func(w io.Writer) error {
		_, err := io.Copy(w, bytes.NewReader(patch))
		return err
	}
}

// writeSynced writes what src writes to the new regular file name in d
// with permissions perm (less the umask), fsynced (called what) before
// it is closed.
func (d *dirFD) writeSynced(name string, perm uint32, src patchWriter, what string) error {
	fd, err := unix.Openat(d.fd(), name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	err = src(f)
	if err == nil {
		err = syncFD(fd, what)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// createSynced is create (a file of git mode mode, or a symlink),
// a regular file's contents fsynced: a symlink is made durable by its
// directory's fsync.
func (d *dirFD) createSynced(name string, mode uint32, data []byte, what string) error {
	if mode == 0o120000 {
		return d.create(name, mode, data)
	}
	perm := uint32(0o644)
	if mode == 0o100755 {
		perm = 0o755
	}
	return d.writeSynced(name, perm, patchBytes(data), what)
}

// syncDirs fsyncs the directories below top that j's land changes: the
// directory of each file, and the parent of each directory it makes,
// each once, deepest first.
func (j *landJournal) syncDirs(top *dirFD) error {
	var dirs []string
	for _, f := range j.Files {
		dir, _ := splitPath(f.Path)
		dirs = append(dirs, dir)
	}
	for _, m := range j.Dirs {
		parent, _ := splitPath(m)
		dirs = append(dirs, parent)
	}
	slices.Sort(dirs)
	dirs = slices.Compact(dirs)
	for _, dir := range slices.Backward(dirs) {
		d, err := top.sub(dir, false)
		if err != nil {
			return err
		}
		err = syncFD(d.fd(), "dir "+dir)
		d.close()
		if err != nil {
			return err
		}
	}
	return nil
}
