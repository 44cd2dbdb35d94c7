package actors

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/workspace"
)

// An agent that works in a directory other than the run's workspace (a
// worktree of its own, or a node's worktree of its requester's snapshot)
// is the workspace of the agents it starts: a child sees that directory
// as it is (shared, or in a worktree of a snapshot of it) and its
// changes are merged into it, so they leave with the agent's own. Its
// children's worktrees and patches live under the run's data directory,
// in nested/<pid>-<run>-<agent>.

// nestedIsolation is an agent's isolation for its children, opened on
// the first delegation. Tool goroutines use it, hence its own mutex.
type nestedIsolation struct {
	mu sync.Mutex
	is *isolation
}

// dir is the directory the agent works in when it is not the run's
// workspace (nil: the run's).
func (s agentSpec) dir() *tools.Workspace {
	if s.iso != nil {
		return s.iso.ws
	}
	return s.ws
}

// childIsolation is the isolation the agent's children enter: the run's
// when the agent works in the run's workspace, else its own, rooted at
// its directory. Changes merged into an agent's directory are always
// applied: what the run's changes mode says is done with the agent's
// whole changeset.
func (a *agent) childIsolation(ctx context.Context) (*isolation, error) {
	dir := a.spec.dir()
	if dir == nil || a.rt.iso == nil {
		return a.rt.iso, nil
	}
	n := &a.nested
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.is != nil {
		return n.is, nil
	}
	s := a.rt.settings
	s.Changes = string(workspace.ModeApply)
	data := filepath.Join(a.rt.dataDir, nestedDir, strconv.Itoa(os.Getpid())+"-"+a.rt.run+"-"+a.spec.id)
	is, err := newIsolation(ctx, s, dir.Root(), data, false, a.log)
	if err != nil {
		return nil, fmt.Errorf("isolate the children of %s: %w", a.spec.id, err)
	}
	is.home = a.rt.home()
	n.is = is
	return is, nil
}

// closeNested removes what the agent's isolation for its children kept;
// its children have ended.
func (a *agent) closeNested() {
	n := &a.nested
	n.mu.Lock()
	is := n.is
	n.is = nil
	n.mu.Unlock()
	if is == nil {
		return
	}
	is.close()
	if err := workspace.RemoveBeneath(a.rt.ws.Root(), is.dataDir); err != nil {
		a.log.Warn().Err(err).Msg("remove the children's worktrees")
	}
}

// nestedDir holds, under the run's data directory, the data of agents'
// isolations for their children.
const nestedDir = "nested"

// pruneNested removes what processes no longer running left in
// dataDir/nested (following no symlink below root, the workspace); the
// worktrees' git records go with the repository's own prune.
func pruneNested(root, dataDir string) error {
	dir := filepath.Join(dataDir, nestedDir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("prune nested worktrees: %w", err)
	}
	for _, e := range entries {
		pid, _, ok := strings.Cut(e.Name(), "-")
		n, err := strconv.Atoi(pid)
		if !ok || err != nil || n <= 0 || n == os.Getpid() || syscall.Kill(n, 0) != syscall.ESRCH {
			continue
		}
		if err := workspace.RemoveBeneath(root, filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("prune nested worktrees: %w", err)
		}
	}
	return nil
}
