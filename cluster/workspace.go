package cluster

import (
	"context"
	"time"

	gitws "github.com/troupe-ai/troupe/workspace"
)

// WorkspaceKey names the repository checked out in dir, so that a node
// can tell whether a task is for the repository it serves: "git:" and the
// repository's first (root) commit, which every clone of a repository
// shares whatever its remote's URL or its current branch, and no other
// repository has. Nodes may be a few commits behind the orchestrator, so
// HEAD is not part of the key. A directory that is not a git checkout (or
// a machine without git) has no key: "". git runs hardened, as for every
// command troupe runs (workspace.RootCommits).
func WorkspaceKey(dir string) string {
	if dir == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	roots, err := gitws.RootCommits(ctx, dir)
	if err != nil || len(roots) == 0 {
		return ""
	}
	// A repository with several roots (merged histories): the smallest
	// is stable whatever order git lists them in.
	first := roots[0]
	for _, r := range roots[1:] {
		first = min(first, r)
	}
	return "git:" + first
}
