package convo

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The journal gives back what was recorded for a round: done wins over
// started whatever the order, other rounds' records are ignored, each
// batch is one record, and a new snapshot starts the journal afresh.
func TestJournalRecordAndRead(t *testing.T) {
	t.Parallel()
	s := Store{Dir: filepath.Join(t.TempDir(), "runs", "r", "root")}
	if j, err := s.Journal(3); err != nil || len(j) != 0 {
		t.Fatalf("empty journal: %v %v", j, err)
	}
	if err := s.Record(3, true, JournalEntry{CallID: "a", Done: true}); !errors.Is(err, ErrNoCheckpoint) {
		t.Fatalf("a record without a checkpoint: %v", err)
	}
	cp := sampleCheckpoint(t)
	cp.Round = 3
	cp.Conversation = pendingConv(t, 3, "a", "b", "c")
	must(t, s.Save(cp, true))
	must(t, s.Record(3, true, JournalEntry{CallID: "a", Started: true}))
	must(t, s.Record(3, true, JournalEntry{CallID: "a", Done: true, Content: "ran a"}, JournalEntry{CallID: "b", Done: true, Content: "bad", IsError: true}))
	must(t, s.Record(3, false, JournalEntry{CallID: "b", Started: true})) // a late marker does not undo done
	must(t, s.Record(3, true, JournalEntry{CallID: "c", Started: true}))  // started, never finished
	must(t, s.Record(2, false, JournalEntry{CallID: "old", Done: true}))  // a stale round
	must(t, s.Record(3, true))                                            // nothing to record: no record
	j, err := s.Journal(3)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]JournalEntry{"a": {CallID: "a", Done: true, Content: "ran a"},
		"b": {CallID: "b", Done: true, Content: "bad", IsError: true}, "c": {CallID: "c", Started: true}}
	if len(j) != len(want) {
		t.Fatalf("journal %+v", j)
	}
	for id, w := range want {
		if !reflect.DeepEqual(j[id], w) {
			t.Errorf("%s: %+v, want %+v", id, j[id], w)
		}
	}
	if n := len(journalRecords(t, s.Dir)); n != 6 {
		t.Errorf("%d journal records, want 6 (its opening and 5 batches)", n)
	}
	cp = sampleCheckpoint(t)
	must(t, s.Save(cp, true))
	if j, err := s.Journal(5); err != nil || len(j) != 0 || len(journalRecords(t, s.Dir)) != 1 {
		t.Errorf("after a new snapshot: %v %v", j, err)
	}
}

// Checkpoints and journal batches are 0600 in a 0700 directory (made so
// when it existed looser), and pass through the filter.
func TestStorePrivateAndFiltered(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "root")
	must(t, os.MkdirAll(dir, 0o755))
	s := Store{Dir: dir, Filter: func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("SECRET-VALUE"), []byte("[redacted]")) }}
	cp := sampleCheckpoint(t)
	cp.Task = "use SECRET-VALUE"
	must(t, s.Save(cp, true))
	must(t, s.Record(1, true, JournalEntry{CallID: "x", Done: true, Content: "SECRET-VALUE printed"}))
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		fi, _ := os.Stat(p)
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v", e.Name(), fi.Mode().Perm())
		}
		if data, _ := os.ReadFile(p); strings.Contains(string(data), "SECRET-VALUE") {
			t.Errorf("%s holds the secret", e.Name())
		}
	}
	if di, _ := os.Stat(dir); di.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %v", di.Mode().Perm())
	}
	got, err := LoadCheckpoint(dir)
	if err != nil || got.Task != "use [redacted]" {
		t.Fatalf("load: %v %q", err, got.Task)
	}
}

// Temporary files a killed writer left behind go with Tidy and with
// RemoveRun; nothing else does.
func TestTidyRemovesTemporaryFiles(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	dir, _ := CheckpointDir(data, "r", "root")
	s := Store{Dir: dir}
	must(t, s.Save(sampleCheckpoint(t), true))
	for _, n := range []string{".checkpoint.json.123.tmp", ".journal-4-ab.json.9.tmp"} {
		must(t, os.WriteFile(filepath.Join(dir, n), []byte("half"), 0o600))
	}
	must(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o600))
	must(t, s.Tidy())
	entries, _ := os.ReadDir(dir)
	if len(entries) != 3 {
		t.Errorf("after Tidy: %v", entries)
	}
	must(t, s.Record(5, true, JournalEntry{CallID: "a", Done: true}))
	must(t, RemoveRun(data, "r"))
	entries, _ = os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "notes.txt" {
		t.Errorf("after RemoveRun: %v", entries)
	}
	if err := (Store{Dir: filepath.Join(data, "none")}).Tidy(); err != nil {
		t.Errorf("tidy of a missing dir: %v", err)
	}
}

// Version 1 checkpoints (before pending tool steps) still load; a newer
// version than this build knows is refused in words.
func TestCheckpointVersions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cp := sampleCheckpoint(t)
	must(t, SaveCheckpoint(dir, cp))
	raw, _ := os.ReadFile(filepath.Join(dir, CheckpointFile))
	var m map[string]json.RawMessage
	must(t, json.Unmarshal(raw, &m))
	for v, ok := range map[string]bool{"1": true, "2": true, "3": true, "4": false, "0": false} {
		m["v"] = json.RawMessage(v)
		b, _ := json.Marshal(m)
		must(t, os.WriteFile(filepath.Join(dir, CheckpointFile), b, 0o600))
		_, err := LoadCheckpoint(dir)
		if ok && err != nil {
			t.Errorf("version %s: %v", v, err)
		}
		if !ok && (!errors.Is(err, ErrCorruptCheckpoint) || !strings.Contains(err.Error(), "want 1 to 3")) {
			t.Errorf("version %s: %v", v, err)
		}
	}
}

// A journal that cannot be read stops a resume with a clear error:
// guessing could run a call twice. Version 2's batch files are read too.
func TestCorruptJournal(t *testing.T) {
	t.Parallel()
	s := Store{Dir: t.TempDir()}
	cp := sampleCheckpoint(t)
	must(t, s.Save(cp, true))
	must(t, s.Record(5, true, JournalEntry{CallID: "a", Done: true}))
	must(t, s.Record(5, true, JournalEntry{CallID: "b", Done: true}))
	path := filepath.Join(s.Dir, JournalFile)
	data, _ := os.ReadFile(path)
	last := recordHeader + 1 + len(journalRecords(t, s.Dir)[2].payload)
	data[len(data)-last-3] ^= 0xff // inside the middle record
	must(t, os.WriteFile(path, data, 0o600))
	if _, err := s.Journal(5); !errors.Is(err, ErrCorruptCheckpoint) || !strings.Contains(err.Error(), "delete it") {
		t.Errorf("damaged journal: %v", err)
	}

	legacy := Store{Dir: t.TempDir()}
	raw, _ := json.Marshal(map[string]any{"v": 2, "run": "r", "agent": "a", "round": 1,
		"conversation": json.RawMessage(mustJSON(t, sampleConv(t)))})
	must(t, os.WriteFile(filepath.Join(legacy.Dir, CheckpointFile), raw, 0o600))
	must(t, os.WriteFile(filepath.Join(legacy.Dir, "journal-1-01.json"), []byte(`{"v":1,"round":1,"entries":[{"call_id":"x","done":true}]}`), 0o600))
	if j, err := legacy.Journal(1); err != nil || !j["x"].Done {
		t.Errorf("version 2 journal: %v %v", j, err)
	}
	must(t, os.WriteFile(filepath.Join(legacy.Dir, "journal-1-00.json"), []byte(`{"v":1,"round":1,"entries":[`), 0o600))
	if _, err := legacy.Journal(1); !errors.Is(err, ErrCorruptCheckpoint) || !strings.Contains(err.Error(), "delete it") {
		t.Errorf("corrupt version 2 journal: %v", err)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
