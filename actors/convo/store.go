package convo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Store is where one agent keeps what a resumed run needs, in one
// directory (<state>/runs/<run>/<agent>, 0700; files 0600; the state
// directory lies outside the workspace, see internal/statedir): a snapshot of
// its checkpoint (checkpoint.json) and the journal that continues it
// (journal.log).
//
// The journal is append-only: one record per tool step (the checkpoint's
// fields and what changed in the conversation, written before the step's
// calls run) and one per batch of call records (a call that has started,
// for mutating calls before they run, or that has completed, with its
// result). Loading replays it on the snapshot, so a run killed at any
// point resumes from its last step with the results its calls recorded,
// and a call whose result was recorded is never run again. Every so often
// (see Writer) the checkpoint is written whole again and the journal
// starts afresh.
//
// A record is on disk (in the page cache, which a killed process cannot
// undo) when its write returns. With sync it is also fsynced, so it
// survives a power loss: the agents ask for it where a side effect
// depends on it (before a mutating call starts) and spare it otherwise: a
// resumed run may simply do a read again. A record cut off mid-write is
// dropped on load and reported (Checkpoint.TornBytes).
type Store struct {
	// Dir is the agent's directory.
	Dir string
	// Filter, when set, rewrites every encoded JSON document before it is
	// written; the agents redact configured secrets with it. It must keep
	// JSON valid.
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

// Save writes cp whole as the directory's snapshot and starts a new
// journal after it (see Writer.Snapshot), fsynced when sync is set.
func (s Store) Save(cp *Checkpoint, sync bool) error {
	w := s.Writer()
	defer w.Close()
	return w.Snapshot(cp, sync)
}

// Record appends call records of round's step to the journal (fsynced
// with sync). An agent records through its Writer; this is for a process
// that has none (tools, tests): it drops a torn tail first.
func (s Store) Record(round int, sync bool, entries ...JournalEntry) error {
	cp, err := s.Load()
	if err != nil {
		return fmt.Errorf("record tool calls: %w", err)
	}
	path := filepath.Join(s.Dir, JournalFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("record tool calls: %w", err)
	}
	_, valid, _, _ := decodeRecords(data)
	f, err := os.OpenFile(path, os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("record tool calls: %w", err)
	}
	w := &Writer{s: s, f: f, id: cp.Journal, size: int64(valid)}
	defer w.Close()
	if err := f.Truncate(int64(valid)); err != nil {
		return fmt.Errorf("record tool calls: %w", err)
	}
	return w.Record(round, sync, entries...)
}

// Journal returns what was recorded of round's tool step, by call ID (see
// Checkpoint.CallRecords): empty when the latest step is another round's.
func (s Store) Journal(round int) (map[string]JournalEntry, error) {
	cp, err := s.Load()
	if errors.Is(err, ErrNoCheckpoint) {
		return map[string]JournalEntry{}, nil
	}
	if err != nil {
		return nil, err
	}
	if cp.Round != round {
		return map[string]JournalEntry{}, nil
	}
	return cp.CallRecords(), nil
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
		(strings.HasPrefix(name, "."+CheckpointFile+".") || strings.HasPrefix(name, "."+legacyPrefix))
}

// isStoreFile reports a file a Store writes (RemoveRun deletes them).
func isStoreFile(name string) bool {
	return name == CheckpointFile || name == JournalFile || isTempFile(name) ||
		(strings.HasPrefix(name, legacyPrefix) && strings.HasSuffix(name, ".json"))
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
