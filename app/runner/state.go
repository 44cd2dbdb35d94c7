package runner

import (
	"fmt"
	"io"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/internal/statedir"
)

// StateDir is the state directory of the workspace dir: what troupe
// trusts of its runs (checkpoints, kept patches, task records, the
// embedded NATS server's store and credentials) lives there, outside the
// workspace (see actors.StateDir).
func StateDir(workspace string) (string, error) {
	dir, err := actors.StateDir(Abs(workspace))
	if err != nil {
		return "", Usage("%v", err)
	}
	return dir, nil
}

// MigrateState moves what an older version kept in the workspace's
// .troupe folder and troupe now keeps in its state directory (so resume
// finds an older run's checkpoints), saying so on w; see statedir.Migrate.
func MigrateState(workspace string, w io.Writer) error {
	ws := Abs(workspace)
	state, err := StateDir(ws)
	if err != nil {
		return err
	}
	lines, err := statedir.Migrate(ws, actors.DataDir(ws), state)
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
	if err != nil {
		fmt.Fprintf(w, "troupe: %v\n", err)
	}
	return nil
}
