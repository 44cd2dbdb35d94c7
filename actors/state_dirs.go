package actors

import (
	"fmt"

	"github.com/troupe-ai/troupe/actors/convo"
	"github.com/troupe-ai/troupe/internal/statedir"
)

// StateDir is the state directory of workspace: where a run keeps what
// troupe trusts (checkpoints, journals, kept patches, task records, the
// embedded NATS server's store and credentials), outside the workspace:
// $XDG_STATE_HOME/troupe/<workspace id>, by default
// ~/.local/state/troupe/<workspace id>.
func StateDir(workspace string) (string, error) { return statedir.For(workspace) }

// prepareDirs fills in the data and state directories of a run in the
// workspace root and makes them: the data folder (agent-visible, with a
// .gitignore holding "*", never reached through a link) and the state
// directory (0700), which may not lie inside the workspace.
func (o *Options) prepareDirs(root string) error {
	if o.DataDir == "" {
		o.DataDir = convo.DataDir(root)
	}
	if o.Tools.DataDir == "" {
		o.Tools.DataDir = o.DataDir
	}
	if o.StateDir == "" {
		dir, err := statedir.For(root)
		if err != nil {
			return fmt.Errorf("run: %w", err)
		}
		o.StateDir = dir
	}
	if o.Tools.StateDir == "" {
		o.Tools.StateDir = o.StateDir
	}
	if statedir.Inside(root, o.StateDir) {
		return fmt.Errorf("run: the state directory %s is inside the workspace %s, where agents write: it holds what troupe trusts (checkpoints, credentials); choose one outside", o.StateDir, root)
	}
	if err := statedir.Make(o.StateDir); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	if err := statedir.PrepareData(root, o.DataDir); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	return nil
}
