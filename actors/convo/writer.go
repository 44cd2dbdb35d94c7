package convo

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// DefaultSnapshotMin is how many journal bytes a Writer appends at least
// before it writes the next snapshot.
const DefaultSnapshotMin = 1 << 20

// errNoJournal: a call record has no open journal to go to.
var errNoJournal = errors.New("no open journal (its tool step was not saved)")

// Writer keeps an agent's progress in its Store as it goes: a snapshot
// (the whole checkpoint, checkpoint.json) now and then, and in between
// one journal record per tool step (what changed) and per batch of call
// records. Each is one write; it is fsynced only when asked, and then the
// fsync covers every record before it, since they share one file.
//
// A snapshot is written at the first step, after a failed write, and when
// the journal has grown by SnapshotMin or by the last snapshot's size,
// whichever is larger: a snapshot then costs at most what the journal
// wrote since the previous one, so the bytes written per round do not grow
// with the conversation, and a resume replays a bounded journal.
//
// A Writer is not safe for concurrent use.
type Writer struct {
	s Store
	// SnapshotMin: see DefaultSnapshotMin (0 takes it).
	SnapshotMin int64

	f        *os.File
	id       string        // the open journal's ID ("": none, the next Step writes a snapshot)
	conv     *Conversation // the conversation the journal follows
	size     int64         // the journal's length
	opened   int64         // its length right after it was opened
	snapSize int64         // the last snapshot's length
	unsynced bool          // the last snapshot and the journal's creation are not fsynced yet
	written  int64
	buf      []byte
}

// Writer returns a writer for the store; it opens nothing until it writes.
func (s Store) Writer() *Writer { return &Writer{s: s} }

// Written is how many bytes the writer has written (snapshots and
// journal records).
func (w *Writer) Written() int64 { return w.written }

// Step saves cp, the checkpoint of a tool step about to run its calls,
// with cp.Conversation the live conversation (Step reads it; it must not
// change meanwhile): as one journal record of what changed since the last
// step, or as a snapshot (see Writer). With sync the write is fsynced
// before Step returns.
func (w *Writer) Step(cp *Checkpoint, sync bool) error {
	min := w.SnapshotMin
	if min <= 0 {
		min = DefaultSnapshotMin
	}
	if w.id == "" || w.conv != cp.Conversation || w.size-w.opened >= max(min, w.snapSize) {
		return w.Snapshot(cp, sync)
	}
	cp.SavedAt = time.Now().UTC()
	payload, err := json.Marshal(stepRecord{Round: cp.Round, Phase: cp.Phase, Usage: cp.Usage, Cost: cp.Cost,
		Model: cp.Model, SavedAt: cp.SavedAt, State: cp.State, Conv: cp.Conversation.delta()})
	if err != nil {
		return fmt.Errorf("save tool step: encode: %w", err)
	}
	if err := w.append(kindStep, payload, sync); err != nil {
		return fmt.Errorf("save tool step: %w", err)
	}
	cp.Conversation.markSynced()
	return nil
}

// Record appends call records of round's step (fsynced with sync).
func (w *Writer) Record(round int, sync bool, entries ...JournalEntry) error {
	if len(entries) == 0 {
		return nil
	}
	if w.id == "" {
		return fmt.Errorf("record tool calls: %w", errNoJournal)
	}
	payload, err := json.Marshal(callsRecord{Round: round, Calls: entries})
	if err != nil {
		return fmt.Errorf("record tool calls: %w", err)
	}
	if err := w.append(kindCalls, payload, sync); err != nil {
		return fmt.Errorf("record tool calls: %w", err)
	}
	return nil
}

// Snapshot writes cp whole to checkpoint.json (atomically, see
// SaveCheckpoint) and starts a new journal after it; cp.Calls are the call
// records its step already has (a resumed step). With sync both are
// fsynced, with the directory.
func (w *Writer) Snapshot(cp *Checkpoint, sync bool) error {
	w.close()
	var b [8]byte
	_, _ = rand.Read(b[:])
	cp.Journal = hex.EncodeToString(b[:])
	cp.Version = CheckpointVersion
	cp.SavedAt = time.Now().UTC()
	if err := cp.validate(); err != nil {
		return fmt.Errorf("save checkpoint in %s: %w", w.s.Dir, err)
	}
	data, err := json.Marshal(cp)
	if err != nil {
		return fmt.Errorf("save checkpoint in %s: encode: %w", w.s.Dir, err)
	}
	if err := w.s.mkdir(); err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	data = w.s.filter(data)
	if err := writeAtomic(filepath.Join(w.s.Dir, CheckpointFile), data, sync); err != nil {
		return err
	}
	w.written += int64(len(data))
	w.s.clearLegacy()
	// The journal the snapshot names: until its opening record is in, a
	// reader finds another ID there (or nothing) and takes the snapshot
	// alone, which is what it is.
	f, err := os.OpenFile(filepath.Join(w.s.Dir, JournalFile), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("open journal: %w", err)
	}
	w.f, w.id, w.conv, w.size, w.snapSize, w.unsynced = f, cp.Journal, cp.Conversation, 0, int64(len(data)), !sync
	open, _ := json.Marshal(journalOpen{V: journalVersion, ID: cp.Journal})
	if err := w.append(kindOpen, open, sync); err != nil {
		return fmt.Errorf("open journal: %w", err)
	}
	if sync {
		syncDir(w.s.Dir)
	}
	w.opened = w.size
	cp.Conversation.markSynced()
	return nil
}

// append writes one record at the journal's end. A write that fails is
// cut off again and closes the journal: the next step writes a snapshot.
func (w *Writer) append(kind byte, payload []byte, sync bool) error {
	w.buf = appendRecord(w.buf[:0], kind, w.s.filter(payload))
	n, err := w.f.WriteAt(w.buf, w.size)
	if err != nil {
		_ = w.f.Truncate(w.size)
		w.close()
		return fmt.Errorf("write journal: %w", err)
	}
	w.size += int64(n)
	w.written += int64(n)
	if !sync {
		return nil
	}
	if w.unsynced {
		// What this record depends on: the snapshot and the journal's
		// directory entry.
		if err := syncFile(filepath.Join(w.s.Dir, CheckpointFile)); err != nil {
			w.close()
			return err
		}
		syncDir(w.s.Dir)
		w.unsynced = false
	}
	if err := w.f.Sync(); err != nil {
		w.close()
		return fmt.Errorf("sync journal: %w", err)
	}
	return nil
}

// Close closes the journal; a later Step writes a snapshot.
func (w *Writer) Close() error {
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f, w.id, w.conv = nil, "", nil
	return err
}

func (w *Writer) close() { _ = w.Close() }

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("sync checkpoint: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync checkpoint: %w", err)
	}
	return nil
}

// syncDir makes renames and new files in dir durable. Some file systems
// refuse to sync a directory; the files are in place either way.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
