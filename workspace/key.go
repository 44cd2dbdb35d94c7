package workspace

import (
	"context"
	"strings"
)

// RootCommits lists the root commits of HEAD's history in the git
// checkout holding dir (none when dir is not in one), through troupe's
// hardened git: found once by git (as Open finds a workspace), then read
// with rev-list, which reads the repository's config and runs nothing
// it names.
func RootCommits(ctx context.Context, dir string) ([]string, error) {
	tool := findGit(dir)
	f, err := discover(ctx, tool, dir)
	if err != nil {
		return nil, err
	}
	out, err := (git{tool: tool, gitDir: f.gitDir}).run(ctx, nil, "rev-list", "--max-parents=0", "HEAD")
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(out)), nil
}
