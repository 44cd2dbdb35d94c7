package workspace

import (
	"bytes"
	"errors"
	"io"
	"os"
	"slices"
	"sync"

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

// syncBatchSize is how many files a syncBatch holds open at most.
const syncBatchSize = 64

// syncBatch fsyncs open files together: the fsyncs of one batch run at
// once, so the filesystem commits them in one journal transaction
// rather than one each, and each file is closed once synced.
type syncBatch struct {
	files []*os.File
	whats []string
}

// add takes f (called what) into the batch, syncing the batch when it
// is full.
func (b *syncBatch) add(f *os.File, what string) error {
	b.files, b.whats = append(b.files, f), append(b.whats, what)
	if len(b.files) >= syncBatchSize {
		return b.flush()
	}
	return nil
}

// flush fsyncs every file of the batch at once and closes them.
func (b *syncBatch) flush() error {
	errs := make([]error, len(b.files))
	if syncHook != nil { // in order, before any fsync starts
		for i, what := range b.whats {
			errs[i] = syncHook(what)
		}
	}
	var wg sync.WaitGroup
	for i, f := range b.files {
		if errs[i] == nil {
			wg.Go(func() { errs[i] = unix.Fsync(int(f.Fd())) })
		}
	}
	wg.Wait()
	for i, f := range b.files {
		if err := f.Close(); errs[i] == nil {
			errs[i] = err
		}
	}
	b.files, b.whats = b.files[:0], b.whats[:0]
	return errors.Join(errs...)
}

// close closes what the batch holds, unsynced (after an error).
func (b *syncBatch) close() {
	for _, f := range b.files {
		f.Close()
	}
	b.files, b.whats = nil, nil
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
	var b syncBatch
	if err := d.writeInto(name, perm, src, &b, what); err != nil {
		return err
	}
	return b.flush()
}

// writeInto writes what src writes to the new regular file name in d
// with permissions perm (less the umask), left open in b to be fsynced
// (called what).
func (d *dirFD) writeInto(name string, perm uint32, src patchWriter, b *syncBatch, what string) error {
	fd, err := unix.Openat(d.fd(), name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	if err := src(f); err != nil {
		f.Close()
		return err
	}
	return b.add(f, what)
}

// createSynced is create (a file of git mode mode, or a symlink), a
// regular file's contents left open in b to be fsynced (called what): a
// symlink is made durable by its directory's fsync.
func (d *dirFD) createSynced(name string, mode uint32, data []byte, b *syncBatch, what string) error {
	if mode == 0o120000 {
		return d.create(name, mode, data)
	}
	perm := uint32(0o644)
	if mode == 0o100755 {
		perm = 0o755
	}
	return d.writeInto(name, perm, patchBytes(data), b, what)
}

// syncDirs fsyncs the directories below top that j's land changes: the
// directory of each file, and the parent of each directory it makes,
// each once, together (a syncBatch).
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
	var b syncBatch
	for _, dir := range slices.Backward(dirs) {
		d, err := top.sub(dir, false)
		if err == nil {
			err = b.add(d.f, "dir "+dir)
		}
		if err != nil {
			b.close()
			return err
		}
	}
	return b.flush()
}
