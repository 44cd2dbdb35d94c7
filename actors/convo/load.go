package convo

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Load reads the agent's latest state: the snapshot, brought up to date by
// replaying the journal that continues it. A journal that belongs to
// another snapshot (a kill between writing a snapshot and opening its
// journal) is ignored; a torn last record is dropped and counted in
// TornBytes. A missing snapshot is ErrNoCheckpoint; one that cannot be
// decoded, or a journal damaged before its end, is ErrCorruptCheckpoint.
func (s Store) Load() (*Checkpoint, error) {
	path := filepath.Join(s.Dir, CheckpointFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s does not exist", ErrNoCheckpoint, path)
	}
	if err != nil {
		return nil, fmt.Errorf("load checkpoint: %w", err)
	}
	cp, err := decodeCheckpoint(path, data)
	if err != nil {
		return nil, err
	}
	if cp.Journal == "" { // written before the journal (version 2 or older)
		cp.Calls, err = s.legacyJournal(cp.Round)
		return cp, err
	}
	jpath := filepath.Join(s.Dir, JournalFile)
	data, err = os.ReadFile(jpath)
	if errors.Is(err, fs.ErrNotExist) {
		return cp, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load checkpoint: %w", err)
	}
	if err := cp.replay(data); err != nil {
		return nil, fmt.Errorf("%w: %s: %v; delete it to resume from the last snapshot", ErrCorruptCheckpoint, jpath, err)
	}
	return cp, nil
}

// replay applies the journal's records to cp.
func (cp *Checkpoint) replay(data []byte) error {
	recs, _, torn, err := decodeRecords(data)
	if err != nil {
		return err
	}
	if len(recs) == 0 || recs[0].kind != kindOpen {
		return nil // its opening record was cut off: the snapshot alone
	}
	var open journalOpen
	if err := json.Unmarshal(recs[0].payload, &open); err != nil {
		return fmt.Errorf("opening record: %w", err)
	}
	if open.ID != cp.Journal {
		return nil // another snapshot's journal
	}
	if open.V != journalVersion {
		return fmt.Errorf("journal version %d, want %d", open.V, journalVersion)
	}
	cp.TornBytes = torn
	for i, r := range recs[1:] {
		if err := cp.applyRecord(r); err != nil {
			return fmt.Errorf("record %d: %w", i+1, err)
		}
	}
	return cp.Conversation.settle()
}

func (cp *Checkpoint) applyRecord(r record) error {
	switch r.kind {
	case kindStep:
		var st stepRecord
		if err := json.Unmarshal(r.payload, &st); err != nil {
			return fmt.Errorf("tool step: %w", err)
		}
		if st.Round < cp.Round {
			return fmt.Errorf("tool step of round %d after round %d", st.Round, cp.Round)
		}
		if err := cp.Conversation.apply(st.Conv); err != nil {
			return err
		}
		cp.Round, cp.Phase, cp.Usage, cp.Cost, cp.Model = st.Round, st.Phase, st.Usage, st.Cost, st.Model
		cp.SavedAt, cp.State, cp.Calls = st.SavedAt, st.State, nil
	case kindCalls:
		var c callsRecord
		if err := json.Unmarshal(r.payload, &c); err != nil {
			return fmt.Errorf("tool calls: %w", err)
		}
		if c.Round == cp.Round {
			cp.Calls = append(cp.Calls, c.Calls...)
		}
	default:
		return fmt.Errorf("unknown kind %q", r.kind)
	}
	return nil
}

// CallRecords are the step's call records by call ID (Calls merged): a
// call recorded as done is done, one recorded only as started was cut
// off.
func (cp *Checkpoint) CallRecords() map[string]JournalEntry {
	out := make(map[string]JournalEntry, len(cp.Calls))
	for _, e := range cp.Calls {
		if prev, ok := out[e.CallID]; ok && (prev.Done || !e.Done) {
			continue
		}
		out[e.CallID] = e
	}
	return out
}

// legacyPrefix starts the name of a journal batch file of version 2,
// one file per batch, which Load still reads.
const legacyPrefix = "journal-"

type legacyBatch struct {
	V       int            `json:"v"`
	Round   int            `json:"round"`
	Entries []JournalEntry `json:"entries"`
}

// legacyJournal reads the version-2 batch files of round.
func (s Store) legacyJournal(round int) ([]JournalEntry, error) {
	files, err := filepath.Glob(filepath.Join(s.Dir, legacyPrefix+"*.json"))
	if err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	var out []JournalEntry
	for _, f := range files {
		data, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read journal: %w", err)
		}
		var b legacyBatch
		if err := json.Unmarshal(data, &b); err != nil || b.V != 1 {
			return nil, fmt.Errorf("%w: journal %s cannot be read (version %d, %v); delete it to resume from the checkpoint alone",
				ErrCorruptCheckpoint, f, b.V, err)
		}
		if b.Round == round {
			out = append(out, b.Entries...)
		}
	}
	return out, nil
}

// clearLegacy removes version-2 batch files (a snapshot now holds what
// they recorded).
func (s Store) clearLegacy() {
	files, _ := filepath.Glob(filepath.Join(s.Dir, legacyPrefix+"*.json"))
	for _, f := range files {
		_ = os.Remove(f)
	}
}
