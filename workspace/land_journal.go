package workspace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// journalDir is the directory of land journals: land/ in the home,
// which only troupe writes (an agent that could write a journal could
// make a recovery rename or remove files of its choosing), as base and
// a path below it.
func (r *Repo) journalDir() (base, rel string) {
	return r.home.dir, "land"
}

// writeJournal writes j and the patch beside it, as new files (the ID
// is new), both fsynced and then their directory (and the home's, when
// the journals' directory is new there): a journal cut short by a kill
// was written before the tree was touched, and the recovery drops it.
func (r *Repo) writeJournal(j *landJournal, patch patchWriter) error {
	base, rel := r.journalDir()
	d, err := openBeneath(base, rel, false)
	if errors.Is(err, fs.ErrNotExist) {
		if d, err = openBeneath(base, rel, true); err == nil {
			err = syncPath(base, "journal "+rel+"/..")
		}
	}
	if err != nil {
		return err
	}
	defer d.close()
	data, err := json.Marshal(j)
	if err != nil {
		return err
	}
	var b syncBatch // both fsynced together
	err = d.writeInto(j.ID+".patch", 0o600, patch, &b, "journal "+j.ID+".patch")
	if err == nil {
		err = d.writeInto(j.ID+".json", 0o600, patchBytes(data), &b, "journal "+j.ID+".json")
	}
	if err != nil {
		b.close()
		return err
	}
	if err := b.flush(); err != nil {
		return err
	}
	return syncFD(d.fd(), "journal "+rel)
}

// syncPath fsyncs the directory at path (called what).
func syncPath(path, what string) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return syncFD(fd, what)
}

// markJournal records that land id reached state (landCommitting,
// landDone): an empty file beside its journal, cheaper than rewriting
// it, made durable by fsyncing their directory. A marker that could not
// be made durable is removed again.
func (r *Repo) markJournal(id, state string) error {
	base, rel := r.journalDir()
	d, err := openBeneath(base, rel, false)
	if err != nil {
		return fmt.Errorf("write the land's journal: %w", err)
	}
	defer d.close()
	err = d.writeNew(id+"."+state, 0o644, nil)
	if err == nil {
		if err = syncFD(d.fd(), "marker "+state); err != nil {
			_ = d.remove(id + "." + state)
		}
	}
	if err != nil {
		return fmt.Errorf("write the land's journal: %w", err)
	}
	return nil
}

// journalState is the state the markers beside land id's journal in d
// say.
func journalState(d *dirFD, id string) string {
	for _, state := range []string{landDone, landCommitting} {
		if _, err := d.lstat(id + "." + state); err == nil {
			return state
		}
	}
	return landPlanned
}

// removeJournal removes land id's journal, then its patch and markers.
func (r *Repo) removeJournal(id string) error {
	base, rel := r.journalDir()
	d, err := openBeneath(base, rel, false)
	if err != nil {
		return fmt.Errorf("remove the land's journal: %w", err)
	}
	defer d.close()
	for _, ext := range []string{".json", ".patch", "." + landCommitting, "." + landDone} {
		if err := d.remove(id + ext); err != nil {
			return fmt.Errorf("remove the land's journal: %w", err)
		}
	}
	return nil
}

// valid reports whether j, read back from its file, names only paths in
// the work tree and temporary names a land makes.
func (j *landJournal) valid(id string) bool {
	if j.ID != id || len(id) != 16 || strings.Trim(id, "0123456789abcdef") != "" {
		return false
	}
	for i, f := range j.Files {
		tmp := ".troupe-land-" + id + "-" + strconv.Itoa(i)
		if !filepath.IsLocal(filepath.FromSlash(f.Path)) || (f.New != "" && f.New != tmp+".new") || (f.Old != "" && f.Old != tmp+".old") {
			return false
		}
	}
	for _, d := range j.Dirs {
		if !filepath.IsLocal(filepath.FromSlash(d)) {
			return false
		}
	}
	return true
}
