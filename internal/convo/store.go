package convo

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Store is where one agent keeps what a resumed run needs: its checkpoint
// and the journal of its tool step in progress, in one directory
// (<data>/runs/<run>/<agent>, 0700; files 0600).
//
// The journal makes a completed tool call survive a crash: a tool step
// first saves the checkpoint with its calls pending, then records each
// result as it completes (Record: one small file per batch, atomic
// rename); the next step's checkpoint holds them all and clears the
// journal. A run killed in between resumes from the pending checkpoint
// plus the journal, so a call whose result was recorded is never run
// again.
//
// Every write is a temporary file renamed into place, which a killed
// process cannot leave half done. With sync the file and the directory are
// also fsynced, so the write survives a power loss: the agents ask for it
// where a side effect depends on it (a step with mutating calls, a
// mutating call's start and result) and spare it for reads, which a
// resumed run may simply do again.
type Store struct {
	// Dir is the agent's directory.
	Dir string
	// Filter, when set, rewrites every encoded file before it is written;
	// the agents redact configured secrets with it. It must keep JSON
	// valid.
	Filter func([]byte) []byte
}

// JournalEntry is one record of a tool step in progress: a call that has
// started (mutating calls are recorded before they run) or that has
// completed, with its result.
type JournalEntry struct {
	CallID  string `json:"call_id"`
	Started bool   `json:"started,omitempty"`
	Done    bool   `json:"done,omitempty"`
	Content string `json:"content,omitempty"`
	IsError bool   `json:"is_error,omitempty"`
	// Reads are the read-before-write tracker's entries for the files the
	// call touched (path → hex content hash), restored on resume.
	Reads map[string]string `json:"reads,omitempty"`
	// Loaded are the deferred tools the call loaded (search_tools), so a
	// resumed agent keeps them.
	Loaded []string `json:"loaded,omitempty"`
}

// journalVersion is the version of a journal batch file.
const journalVersion = 1

// journalPrefix starts every journal batch file's name.
const journalPrefix = "journal-"

type journalBatch struct {
	V       int            `json:"v"`
	Round   int            `json:"round"`
	Entries []JournalEntry `json:"entries"`
}

// Save writes cp to the directory's checkpoint.json (see SaveCheckpoint),
// fsynced when sync is set.
func (s Store) Save(cp *Checkpoint, sync bool) error {
	cp.Version = CheckpointVersion
	cp.SavedAt = time.Now().UTC()
	if err := cp.validate(); err != nil {
		return fmt.Errorf("save checkpoint in %s: %w", s.Dir, err)
	}
	data, err := json.Marshal(cp)
	if err != nil {
		return fmt.Errorf("save checkpoint in %s: encode: %w", s.Dir, err)
	}
	if err := s.mkdir(); err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	return writeAtomic(filepath.Join(s.Dir, CheckpointFile), s.filter(data), sync)
}

// Record adds entries to round's journal: one batch file, written to a
// temporary file and renamed into place; with sync the file and the
// directory are fsynced too. Calls that complete together are recorded in
// one batch.
func (s Store) Record(round int, sync bool, entries ...JournalEntry) error {
	if len(entries) == 0 {
		return nil
	}
	data, err := json.Marshal(journalBatch{V: journalVersion, Round: round, Entries: entries})
	if err != nil {
		return fmt.Errorf("record tool results: %w", err)
	}
	if err := s.mkdir(); err != nil {
		return fmt.Errorf("record tool results: %w", err)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	name := journalPrefix + strconv.Itoa(round) + "-" + hex.EncodeToString(b[:]) + ".json"
	if err := writeAtomic(filepath.Join(s.Dir, name), s.filter(data), sync); err != nil {
		return fmt.Errorf("record tool results: %w", err)
	}
	return nil
}

// Journal returns what was recorded of round's tool step, by call ID; a
// call recorded as started and as done is done. Batches of other rounds
// are stale and ignored. A batch that cannot be read is an error
// (ErrCorruptCheckpoint), since guessing could run a call twice.
func (s Store) Journal(round int) (map[string]JournalEntry, error) {
	files, err := filepath.Glob(filepath.Join(s.Dir, journalPrefix+"*.json"))
	if err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	out := map[string]JournalEntry{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read journal: %w", err)
		}
		var b journalBatch
		if err := json.Unmarshal(data, &b); err != nil || b.V != journalVersion {
			return nil, fmt.Errorf("%w: journal %s cannot be read (version %d, %v); delete it to resume from the checkpoint alone",
				ErrCorruptCheckpoint, f, b.V, err)
		}
		if b.Round != round {
			continue
		}
		for _, e := range b.Entries {
			if prev, ok := out[e.CallID]; ok && prev.Done {
				continue
			}
			if prev, ok := out[e.CallID]; ok && prev.Started && !e.Done {
				continue
			}
			out[e.CallID] = e
		}
	}
	return out, nil
}

// ClearJournal removes every journal batch (the checkpoint now holds their
// results).
func (s Store) ClearJournal() error {
	files, err := filepath.Glob(filepath.Join(s.Dir, journalPrefix+"*.json"))
	if err != nil {
		return fmt.Errorf("clear journal: %w", err)
	}
	var errs []error
	for _, f := range files {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("clear journal: %w", errors.Join(errs...))
	}
	return nil
}

// Tidy removes the temporary files a killed process left behind in the
// directory. Call it before the first write of an agent.
func (s Store) Tidy() error {
	entries, err := os.ReadDir(s.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("tidy %s: %w", s.Dir, err)
	}
	var errs []error
	for _, e := range entries {
		if isTempFile(e.Name()) {
			if err := os.Remove(filepath.Join(s.Dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("tidy %s: %w", s.Dir, errors.Join(errs...))
	}
	return nil
}

// isTempFile reports a temporary file of writeAtomic's in a store.
func isTempFile(name string) bool {
	return strings.HasSuffix(name, ".tmp") &&
		(strings.HasPrefix(name, "."+CheckpointFile+".") || strings.HasPrefix(name, "."+journalPrefix))
}

// isStoreFile reports a file a Store writes (RemoveRun deletes them).
func isStoreFile(name string) bool {
	return name == CheckpointFile || isTempFile(name) ||
		(strings.HasPrefix(name, journalPrefix) && strings.HasSuffix(name, ".json"))
}

// mkdir creates the directory private to the user, and makes it so when
// an older version created it looser.
func (s Store) mkdir() error {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return err
	}
	return os.Chmod(s.Dir, 0o700)
}

func (s Store) filter(data []byte) []byte {
	if s.Filter == nil {
		return data
	}
	return s.Filter(data)
}
