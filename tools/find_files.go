package tools

import (
	"context"
	_ "embed"
	"strings"

	"github.com/troupe-ai/troupe/internal/search"
)

//go:embed find_files.md
var findFilesDoc string

const (
	findFilesDefaultLimit = 100
	findFilesMaxLimit     = 1000
)

// FindFilesParams are find_files' arguments.
type FindFilesParams struct {
	Pattern string `json:"pattern" jsonschema:"glob to match, e.g. *.go or **/testdata/*.json; without a slash it matches base names anywhere"`
	Path    string `json:"path,omitempty" jsonschema:"directory to search, relative to the workspace root (default the root)"`
	Limit   int    `json:"limit,omitempty" jsonschema:"maximum paths to show (default 100, at most 1000)"`
	Offset  int    `json:"offset,omitempty" jsonschema:"number of paths to skip, for the next page (default 0)"`
}

// TouchedPaths names the searched directory, so the cache drops the result
// when something under it changes.
func (p FindFilesParams) TouchedPaths() []string { return dirScope(p.Path) }

// FindFiles returns the find_files tool.
func FindFiles() Tool {
	return New(Spec{
		Guidance: []GuidanceLine{Line(SectionWhichTool, 10, "Find files by name or path pattern with find_files.")},
		Name:     NameFindFiles, Truncation: Head(30 * 1024), Description: findFilesDoc, ReadOnly: true, Cacheable: true,
		Parallel: ParallelSafe, Tier: TierAlways}, runFindFiles,
		Minimum("limit", 1), Minimum("offset", 0))
}

func runFindFiles(ctx context.Context, s *Session, p FindFilesParams) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	if strings.TrimSpace(p.Pattern) == "" {
		return Errorf("pattern is empty: give a glob such as *.go or **/config/*.yaml"), nil
	}
	g, err := search.CompileGlob(p.Pattern, true)
	if err != nil {
		return Errorf("%v", err), nil
	}
	sc, res := openScope(s, p.Path, "a directory")
	if sc == nil {
		return res, nil
	}
	found, err := search.Find(ctx, sc.target, g)
	if err != nil {
		return sc.failed(ctx, err)
	}
	if len(found) == 0 {
		return Text("No files match "+p.Pattern).WithMeta("files", 0), nil
	}
	limit := findFilesDefaultLimit
	if p.Limit > 0 {
		limit = min(p.Limit, findFilesMaxLimit)
	}
	return listPage(len(found), p.Offset, limit, "paths match "+p.Pattern, func(b *strings.Builder, i int) {
		b.WriteString(listPath(s.Workspace.Rel(found[i].Path)))
		if found[i].Dir {
			b.WriteByte('/')
		}
	}).WithMeta("files", len(found)), nil
}
