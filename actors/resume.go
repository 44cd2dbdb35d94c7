package actors

import (
	"github.com/troupe-ai/troupe/internal/convo"
)

// Checkpoint is a point a run can be resumed from: the root agent's last
// saved round. Get one with FindCheckpoint and pass it as Options.Resume.
type Checkpoint struct {
	// Run is the run's ID; the resumed run keeps it.
	Run string
	// Task is the run's task.
	Task string
	// Round is the root agent's last completed round.
	Round int
	// Model is the model the root agent was on.
	Model string
	// Path is the checkpoint's directory.
	Path string

	cp *convo.Checkpoint
}

// FindCheckpoint finds the root agent's latest checkpoint of run (of the
// run written last when run is "") under dataDir, which is
// <workspace>/.troupe unless a run was started with another
// Options.DataDir. A run that finished cleanly has none (its checkpoints
// are removed unless Settings.KeepCheckpoints).
func FindCheckpoint(dataDir, run string) (*Checkpoint, error) {
	cp, path, err := convo.LatestCheckpoint(dataDir, run)
	if err != nil {
		return nil, err
	}
	return &Checkpoint{Run: cp.Run, Task: cp.Task, Round: cp.Round, Model: cp.Model, Path: path, cp: cp}, nil
}

// DataDir is the directory where a run in workspace keeps its checkpoints
// and spilled outputs by default: <workspace>/.troupe.
func DataDir(workspace string) string { return convo.DataDir(workspace) }

func (c *Checkpoint) checkpoint() *convo.Checkpoint {
	if c == nil {
		return nil
	}
	return c.cp
}
