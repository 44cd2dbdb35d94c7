package convo

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/troupe-ai/troupe/llm"
)

// CheckpointVersion is the version of the checkpoint file format written.
// Version 2 added checkpoints written as a tool step starts: the
// conversation ends with tool calls still pending, and the results the step
// completed are in the journal beside it. Version 3 is a snapshot that a
// journal of steps continues (Journal, see Store). Versions 1 (never
// pending) and 2 (one journal file per batch of call records) are still
// read.
const CheckpointVersion = 3

// oldestCheckpointVersion is the oldest version still read.
const oldestCheckpointVersion = 1

// CheckpointFile is the name of an agent's checkpoint in its directory.
const CheckpointFile = "checkpoint.json"

// Checkpoint is everything needed to resume one agent: who it is, where it
// was, its conversation and what it has spent so far. State holds the agent
// loop's own extra state, opaque here.
type Checkpoint struct {
	Version      int             `json:"v"`
	Run          string          `json:"run"`
	Agent        string          `json:"agent"`
	Parent       string          `json:"parent,omitempty"` // empty for the root agent
	Kind         string          `json:"kind"`
	Task         string          `json:"task"`
	Round        int             `json:"round"`
	Phase        string          `json:"phase,omitempty"`
	Conversation *Conversation   `json:"conversation"`
	Usage        llm.Usage       `json:"usage"` // totals so far
	Cost         float64         `json:"cost"`  // USD so far
	Model        string          `json:"model"`
	SavedAt      time.Time       `json:"saved_at"`
	State        json.RawMessage `json:"state,omitempty"`
	// Journal is the ID of the journal that continues this snapshot.
	Journal string `json:"journal,omitempty"`
	// Calls are the call records of Round's step made before the
	// snapshot (a resumed step) and, once loaded, since (CallRecords).
	Calls []JournalEntry `json:"calls,omitempty"`
	// TornBytes, when loaded, is the size of a journal record cut off
	// mid-write (by a kill or a power loss) that was dropped.
	TornBytes int `json:"-"`
}

// DataDir is the agent-visible data folder of a workspace: <root>/.troupe
// (worktrees, spilled outputs). Checkpoints live in the state directory
// instead (internal/statedir), out of the agents' reach.
func DataDir(workspaceRoot string) string { return filepath.Join(workspaceRoot, ".troupe") }

// RunDir is <dataDir>/runs/<run>, dataDir being the run's state
// directory. The run ID must be a single path element.
func RunDir(dataDir, run string) (string, error) {
	if err := checkID("run", run); err != nil {
		return "", err
	}
	return filepath.Join(dataDir, "runs", run), nil
}

// CheckpointDir is <dataDir>/runs/<run>/<agent>, where an agent's
// checkpoint lives. Both IDs must be single path elements.
func CheckpointDir(dataDir, run, agent string) (string, error) {
	rd, err := RunDir(dataDir, run)
	if err != nil {
		return "", err
	}
	if err := checkID("agent", agent); err != nil {
		return "", err
	}
	return filepath.Join(rd, agent), nil
}

// checkID refuses an ID that would not name one directory below its parent.
func checkID(what, id string) error {
	if id == "" || id == "." || id == ".." || strings.ContainsAny(id, `/\`+"\x00") {
		return fmt.Errorf("%s id %q: must be a non-empty name without path separators, \".\" or \"..\"", what, id)
	}
	return nil
}

// validate reports what makes cp unusable as a checkpoint.
func (cp *Checkpoint) validate() error {
	switch {
	case cp.Version < oldestCheckpointVersion || cp.Version > CheckpointVersion:
		return fmt.Errorf("version %d, want %d to %d (written by a newer troupe?)", cp.Version, oldestCheckpointVersion, CheckpointVersion)
	case cp.Run == "" || cp.Agent == "":
		return errors.New("missing run or agent id")
	case cp.Conversation == nil:
		return errors.New("missing conversation")
	case cp.Round < 0:
		return fmt.Errorf("round %d", cp.Round)
	}
	return nil
}

// SaveCheckpoint writes cp to <dir>/checkpoint.json atomically: a
// temporary file in dir, written and fsynced, then renamed over the old
// one, so a reader sees the old or the new checkpoint, never a part. It
// sets cp.Version and cp.SavedAt. dir is created if needed (0700; the file
// is 0600). On error the previous checkpoint is intact and no temporary
// file is left. cp.Conversation must not change while it runs: to save
// from another goroutine than the conversation's owner, give it a Clone.
func SaveCheckpoint(dir string, cp *Checkpoint) error { return Store{Dir: dir}.Save(cp, true) }

// writeAtomic writes data to path through a temporary file in the same
// directory and a rename, so a reader (or a resumed run after a kill)
// sees the old or the new file, never a part. With sync it also fsyncs
// the file before the rename and the directory after, so the new file
// survives a power loss too.
func writeAtomic(path string, data []byte, sync bool) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp") // 0600
	if err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("save checkpoint: write %s: %w", tmp, err)
	}
	if sync {
		if err = f.Sync(); err != nil {
			return fmt.Errorf("save checkpoint: sync %s: %w", tmp, err)
		}
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("save checkpoint: close %s: %w", tmp, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	// The rename is durable once the directory is synced. Some file systems
	// refuse to sync a directory; the checkpoint is in place either way.
	if sync {
		if d, derr := os.Open(dir); derr == nil {
			_ = d.Sync()
			d.Close()
		}
	}
	return nil
}

// LoadCheckpoint reads the latest state of the agent whose store is dir
// (Store.Load: <dir>/checkpoint.json and the journal that continues it). A
// missing file is ErrNoCheckpoint; one that cannot be decoded or checked
// is ErrCorruptCheckpoint, with the file's path and the problem.
func LoadCheckpoint(dir string) (*Checkpoint, error) { return Store{Dir: dir}.Load() }

func decodeCheckpoint(path string, data []byte) (*Checkpoint, error) {
	var cp Checkpoint
	if err := json.Unmarshal(data, &cp); err != nil {
		return nil, fmt.Errorf("%w: %s (%d bytes) is corrupt or truncated: %v; delete it to start afresh",
			ErrCorruptCheckpoint, path, len(data), err)
	}
	if err := cp.validate(); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorruptCheckpoint, path, err)
	}
	return &cp, nil
}
