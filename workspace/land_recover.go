package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// rollback undoes what of j is in the tree (see land.go): every .new
// removed, every file committed put back from its .old (or removed when
// it is new), every deletion undone, every directory the land made
// removed. It may run again on the same journal after being killed.
func (j *landJournal) rollback(top *dirFD) error {
	var errs []error
	n := 0
	for _, f := range slices.Backward(j.Files) {
		if err := j.rollbackOne(top, f); err != nil {
			errs = append(errs, fmt.Errorf("roll back %s: %w", f.Path, err))
		}
		n++
		recoverHook("undone", n)
	}
	for _, dir := range slices.Backward(j.Dirs) {
		parent, name := splitPath(dir)
		if p, err := top.sub(parent, false); err == nil {
			p.rmdir(name)
			p.close()
		}
	}
	return errors.Join(errs...)
}

// rollbackOne undoes one file of j.
func (j *landJournal) rollbackOne(top *dirFD, f landFile) error {
	dir, name := splitPath(f.Path)
	d, err := top.sub(dir, false)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNotDir) {
		return nil // never made: nothing of the land's is below
	}
	if err != nil {
		return err
	}
	defer d.close()
	renamed := j.State == landCommitting
	if f.New != "" {
		_, err := d.lstat(f.New)
		if err == nil {
			renamed = false // its rename did not happen
			if err := d.remove(f.New); err != nil {
				return err
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if !renamed {
		if f.Old != "" {
			return d.remove(f.Old)
		}
		return nil
	}
	if f.Old == "" {
		return d.remove(name) // a new file
	}
	if _, err := d.lstat(f.Old); errors.Is(err, fs.ErrNotExist) {
		return nil // put back already
	}
	if err := unix.Renameat(d.fd(), f.Old, d.fd(), name); err != nil {
		return err
	}
	// Renaming a link over the same file leaves both names.
	return d.remove(f.Old)
}

// finish removes the pre-images of a land that is done and the
// directories its deletions left empty (step 4).
func (j *landJournal) finish(top *dirFD) error {
	for _, f := range j.Files {
		dir, _ := splitPath(f.Path)
		d, err := top.sub(dir, false)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("finish %s: %w", f.Path, err)
		}
		if f.Old != "" {
			err = d.remove(f.Old)
		}
		d.close()
		if err != nil {
			return fmt.Errorf("finish %s: %w", f.Path, err)
		}
		if f.New == "" {
			pruneEmpty(top, dir)
		}
	}
	return nil
}

// pruneEmpty removes dir below top and its parents while they are
// empty.
func pruneEmpty(top *dirFD, dir string) {
	for dir != "." {
		parent, base := splitPath(dir)
		p, err := top.sub(parent, false)
		if err != nil {
			return
		}
		gone := p.rmdir(base)
		p.close()
		if !gone {
			return
		}
		dir = parent
	}
}

// recoverStep, when set (tests only), is called at each step of a
// rollback: "undone" (n files put back so far, a land's own rollback
// or a recovery's) and, in a recovery, "kept" (the patch kept, the
// journal not yet removed).
var recoverStep func(step string, n int)

// recoverHook calls recoverStep when set.
func recoverHook(step string, n int) {
	if recoverStep != nil {
		recoverStep(step, n)
	}
}

// maxJournal bounds a land's journal file.
const maxJournal = 64 << 20

// recoverLands finishes or rolls back the lands of this work tree a
// killed process left (their journals), keeping the patch of each one
// rolled back as runs/<run>/changes/<agent>.patch. The caller holds the
// apply lock.
func (r *Repo) recoverLands() error {
	r.landing.Lock() // a recovery writes the tree as a land does
	defer r.landing.Unlock()
	base, rel := r.journalDir()
	d, err := openBeneath(base, rel, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("recover lands: %w", err)
	}
	defer d.close()
	names, err := d.f.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("recover lands: %w", err)
	}
	slices.Sort(names)
	for _, name := range names {
		id, ok := strings.CutSuffix(name, ".json")
		if !ok {
			// A patch or marker whose journal is gone: a land removed
			// its journal first and was killed before the rest.
			if id, _, _ := strings.Cut(name, "."); !slices.Contains(names, id+".json") {
				_ = d.remove(name)
			}
			continue
		}
		data, err := d.readFile(name, maxJournal)
		if err != nil {
			return fmt.Errorf("recover land %s: %w", id, err)
		}
		var j landJournal
		if err := json.Unmarshal(data, &j); err != nil || !j.valid(id) {
			if journalState(d, id) == landPlanned && err != nil {
				// Cut short as it was written: the tree was not touched.
				if err := r.removeJournal(id); err != nil {
					return err
				}
				continue
			}
			return fmt.Errorf("recover land %s: unreadable journal %s (%v): move it away to go on", id, name, err)
		}
		if j.Top != r.top {
			continue
		}
		j.State = journalState(d, id)
		if err := r.recoverLand(d, j); err != nil {
			return fmt.Errorf("recover land %s of %s (journal %s): %w", id, j.Agent, name, err)
		}
	}
	return nil
}

// recoverLand finishes j when it was done, else rolls it back and keeps
// its patch; then removes its journal.
func (r *Repo) recoverLand(jd *dirFD, j landJournal) error {
	top, err := openBeneath(r.at, ".", false)
	if err != nil {
		return err
	}
	defer top.close()
	if j.State == landDone {
		if err := j.finish(top); err != nil {
			return err
		}
		return r.removeJournal(j.ID)
	}
	if err := j.rollback(top); err != nil {
		return err
	}
	fd, err := unix.Openat(jd.fd(), j.ID+".patch", unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == nil {
		f := os.NewFile(uintptr(fd), j.ID+".patch")
		st, serr := f.Stat()
		if serr == nil && st.Mode().IsRegular() && st.Size() > 0 && pathSafe(j.Run) && pathSafe(j.Agent) {
			_, err = r.keepPatch(j.Run, j.Agent, func(w io.Writer) error {
				_, err := io.Copy(w, f)
				return err
			})
		}
		f.Close()
		if err != nil {
			return err
		}
	}
	if j.Base != "" && j.Theirs != "" && pathSafe(j.Run) && pathSafe(j.Agent) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		_, err := r.keepPatch(j.Run, j.Agent, func(w io.Writer) error { return r.writeDiff(ctx, j.Base, j.Theirs, w) })
		cancel()
		if err != nil {
			return err
		}
	}
	recoverHook("kept", 0)
	return r.removeJournal(j.ID)
}

// recoverOnOpen runs recoverLands under the apply lock when a land's
// journal is there.
func (r *Repo) recoverOnOpen() error {
	base, rel := r.journalDir()
	d, err := openBeneath(base, rel, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("recover lands: %w", err)
	}
	names, _ := d.f.Readdirnames(-1)
	d.close()
	if !slices.ContainsFunc(names, func(n string) bool { return strings.HasSuffix(n, ".json") }) {
		return nil
	}
	unlock, err := r.lock("apply")
	if err != nil {
		return err
	}
	defer unlock()
	return r.recoverLands()
}
