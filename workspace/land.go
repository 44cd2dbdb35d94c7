package workspace

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"strconv"

	"golang.org/x/sys/unix"
)

// A land writes a merge's changes into the work tree all or nothing,
// even when the process is killed half-way:
//
//  1. plan: for each file, the names of its new contents (<tmp>.new)
//     and of its pre-image (<tmp>.old), both beside it in its own
//     directory, and the directories to make; the plan and the
//     changeset's patch are written to a journal in the home (home.go:
//     land/<id>.json, land/<id>.patch) before the tree is touched;
//  2. prepare: the directories are made, each file's new contents
//     written to its .new name, and its pre-image hard-linked to its
//     .old name (a symlink's own link, never what it names);
//  3. commit: the journal says "committing", then each .new is renamed
//     over its file, and each deleted file unlinked (its .old keeps it);
//  4. done: the journal says "done", the .old links and the
//     directories deletions emptied are removed, then the journal.
//
// An error in 2 or 3 rolls back: every .new removed, every file renamed
// over put back from its .old, every new file removed, every directory
// made removed; the work tree is as before and the patch is kept. A
// process killed in 1 to 4 leaves its journal: the next Open or Apply
// of the same work tree (under the apply lock, so never a live land)
// rolls back what was not done and finishes what was (recover.go).
// Everything goes through directories opened one component at a time
// without following a symlink (beneath.go). What is fsynced, and when,
// so that a land survives a power cut as it does a kill: land_sync.go.

// landFile is one file of a land.
type landFile struct {
	Path string `json:"path"`          // slash-separated, below the work tree's top
	New  string `json:"new,omitempty"` // its new contents' name beside it; "" for a deletion
	Old  string `json:"old,omitempty"` // its pre-image's name beside it; "" when it did not exist
}

// Journal states.
const (
	landPlanned    = "planned"
	landCommitting = "committing"
	landDone       = "done"
)

// landJournal is what a land records before it touches the tree.
type landJournal struct {
	ID    string     `json:"id"`
	Top   string     `json:"top"` // the work tree's top
	Run   string     `json:"run"`
	Agent string     `json:"agent"`
	State string     `json:"-"`              // a marker file beside the journal: <id>.committing, <id>.done
	Dirs  []string   `json:"dirs,omitempty"` // directories the land makes, parents first
	Files []landFile `json:"files"`
	// Base and Theirs, for a changeset too big to write twice
	// (bigLand), are the trees whose diff is its patch: the journal
	// holds no patch, and a rollback keeps git's diff of them (the
	// objects are in the store).
	Base   string `json:"base,omitempty"`
	Theirs string `json:"theirs,omitempty"`
	// changes are the contents, in the order of Files (not journaled:
	// the .new files hold them once prepared).
	changes []change
}

// landHook, when set (tests only), is called at each step of a land:
// "planned", "prepared", "renamed" (n files committed so far) and
// "done". An error it returns is an I/O error of the land.
var landHook func(step string, n int) error

// hook calls landHook when set.
func hook(step string, n int) error {
	if landHook == nil {
		return nil
	}
	return landHook(step, n)
}

// landError is an I/O error of a land that was rolled back: nothing of
// the changes is in the work tree.
type landError struct {
	err      error
	rollback error // non-nil when the rollback itself failed (the journal is kept)
}

func (e *landError) Error() string {
	if e.rollback != nil {
		return fmt.Sprintf("%v; rolling back failed too, the journal is kept for the next run: %v", e.err, e.rollback)
	}
	return e.err.Error() + " (rolled back: the workspace is as it was)"
}

func (e *landError) Unwrap() error { return e.err }

// land writes plan into the work tree whose top directory is top, all
// or nothing (see above). patch is kept in the journal until the land is
// done; a nil one is not: the journal names the trees base and theirs
// instead, whose diff a recovery keeps as the patch. A linkError (a symlink or a file met where a directory should
// be) is returned as it is, after the rollback, so the caller can call
// it a conflict.
func (r *Repo) land(top *dirFD, plan []change, run, agent string, patch patchWriter, base, theirs string) error {
	if len(plan) == 0 {
		return nil
	}
	r.landing.Lock() // no snapshot reads the tree meanwhile
	defer r.landing.Unlock()
	j, err := planLand(top, plan, r.top, run, agent)
	if err != nil {
		return err
	}
	if patch == nil {
		j.Base, j.Theirs = base, theirs
		patch = patchBytes(nil)
	}
	if err := r.writeJournal(&j, patch); err != nil {
		_ = r.removeJournal(j.ID)
		return fmt.Errorf("write the land's journal: %w", err)
	}
	err = hook(landPlanned, 0)
	if err == nil {
		err = j.prepare(top)
	}
	if err == nil {
		err = j.syncDirs(top) // the .new and .old names, the directories made
	}
	if err == nil {
		err = hook("prepared", 0)
	}
	if err == nil {
		j.State = landCommitting
		if err = r.markJournal(j.ID, landCommitting); err == nil {
			err = j.commit(top)
		}
	}
	if err == nil {
		err = j.syncDirs(top) // the renames and deletions
	}
	if err == nil {
		err = r.markJournal(j.ID, landDone)
	}
	if err != nil {
		var le *linkError
		rb := j.rollback(top)
		if rb == nil {
			rb = r.removeJournal(j.ID)
		}
		if rb == nil && errors.As(err, &le) {
			return err
		}
		return &landError{err: err, rollback: rb}
	}
	j.State = landDone
	if err := hook(landDone, len(j.Files)); err != nil {
		return err
	}
	if err := j.finish(top); err != nil {
		return err
	}
	return r.removeJournal(j.ID)
}

// planLand names the temporary files of plan's changes and the
// directories to make, reading the tree only.
func planLand(top *dirFD, plan []change, at, run, agent string) (landJournal, error) {
	var b [8]byte
	for i := range b {
		b[i] = byte(rand.Uint32())
	}
	j := landJournal{ID: hex.EncodeToString(b[:]), Top: at, Run: run, Agent: agent, State: landPlanned}
	made := map[string]bool{}
	for i, c := range plan {
		dir, name := splitPath(c.path)
		f := landFile{Path: c.path}
		tmp := ".troupe-land-" + j.ID + "-" + strconv.Itoa(i)
		d, missing, err := openOrMissing(top, dir)
		if err != nil {
			return j, fmt.Errorf("land %s: %w", c.path, err)
		}
		exists := false
		if d != nil {
			_, err := d.lstat(name)
			d.close()
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return j, fmt.Errorf("land %s: %w", c.path, err)
			}
			exists = err == nil
		}
		if !c.to.exists() && !exists {
			continue // deleted already
		}
		for _, m := range missing {
			if !made[m] {
				made[m] = true
				j.Dirs = append(j.Dirs, m)
			}
		}
		if c.to.exists() {
			f.New = tmp + ".new"
		}
		if exists {
			f.Old = tmp + ".old"
		}
		j.Files = append(j.Files, f)
		j.changes = append(j.changes, c)
	}
	return j, nil
}

// openOrMissing opens the directory dir below top; when it or some of
// its parents do not exist, d is nil and missing lists them, parents
// first.
func openOrMissing(top *dirFD, dir string) (d *dirFD, missing []string, err error) {
	d, err = top.sub(dir, false)
	if !errors.Is(err, fs.ErrNotExist) {
		return d, nil, err
	}
	for p := dir; p != "."; p, _ = splitPath(p) {
		missing = append([]string{p}, missing...)
		parent, _ := splitPath(p)
		pd, err := top.sub(parent, false)
		if err == nil {
			pd.close()
			return nil, missing, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, nil, err
		}
	}
	return nil, missing, nil
}

// prepare makes the directories, writes each file's new contents and
// links its pre-image (step 2).
func (j *landJournal) prepare(top *dirFD) error {
	for _, dir := range j.Dirs {
		parent, name := splitPath(dir)
		p, err := top.sub(parent, false)
		if err != nil {
			return fmt.Errorf("make %s: %w", dir, err)
		}
		err = unix.Mkdirat(p.fd(), name, 0o755)
		p.close()
		if err != nil {
			return fmt.Errorf("make %s: %w", dir, err)
		}
	}
	var b syncBatch // each new file's contents, fsynced in batches
	for i, f := range j.Files {
		dir, name := splitPath(f.Path)
		d, err := top.sub(dir, false)
		if err == nil {
			err = prepareOne(d, name, f, j.changes[i], &b)
			d.close()
		}
		if err != nil {
			b.close()
			return fmt.Errorf("write %s: %w", f.Path, err)
		}
	}
	if err := b.flush(); err != nil {
		return fmt.Errorf("write the changes: %w", err)
	}
	return nil
}

// prepareOne writes one file's .new (its contents left in b to be
// fsynced) and links its .old in d.
func prepareOne(d *dirFD, name string, f landFile, c change, b *syncBatch) error {
	if f.New != "" && c.src != nil {
		perm := uint32(0o644)
		if c.to.mode == "100755" {
			perm = 0o755
		}
		if err := d.writeInto(f.New, perm, c.src, b, "file "+f.Path); err != nil {
			return err
		}
	} else if f.New != "" {
		mode, _ := strconv.ParseUint(c.to.mode, 8, 32)
		if err := d.createSynced(f.New, uint32(mode), c.to.data, b, "file "+f.Path); err != nil {
			return err
		}
	}
	if f.Old == "" {
		return nil
	}
	err := unix.Linkat(d.fd(), name, d.fd(), f.Old, 0)
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EMLINK) {
		err = copyPreimage(d, name, f.Old) // no hard links here
	}
	return err
}

// copyPreimage copies the file or symlink name in d to old.
func copyPreimage(d *dirFD, name, old string) error {
	st, err := d.lstat(name)
	if err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		target, err := d.readlink(name)
		if err != nil {
			return err
		}
		return d.create(old, 0o120000, []byte(target))
	}
	data, err := d.readFile(name, 0)
	if err != nil {
		return err
	}
	return d.writeSynced(old, st.Mode&0o7777, patchBytes(data), "file "+old)
}

// commit renames each .new over its file and unlinks each deleted one
// (step 3).
func (j *landJournal) commit(top *dirFD) error {
	for i, f := range j.Files {
		dir, name := splitPath(f.Path)
		d, err := top.sub(dir, false)
		if err != nil {
			return fmt.Errorf("write %s: %w", f.Path, err)
		}
		if f.New != "" {
			err = unix.Renameat(d.fd(), f.New, d.fd(), name)
		} else {
			err = d.remove(name)
		}
		d.close()
		if err != nil {
			return fmt.Errorf("write %s: %w", f.Path, err)
		}
		if err := hook("renamed", i+1); err != nil {
			return err
		}
	}
	return nil
}
