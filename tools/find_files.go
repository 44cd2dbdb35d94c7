package tools

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
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
	abs, err := s.Workspace.Resolve(p.Path)
	if err != nil {
		return Errorf("%v", err), nil
	}
	display := s.Workspace.Display(abs)
	if _, err := s.Workspace.Stat(abs); errors.Is(err, fs.ErrNotExist) {
		return Errorf("path %s does not exist; give a directory relative to the workspace root", display), nil
	} else if err != nil {
		return Errorf("cannot search %s: %v", display, err), nil
	}
	found, err := search.Find(ctx, s.Workspace.target(abs), g)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return Result{}, ctxErr
		}
		return Errorf("search %s: %v", display, s.Workspace.explain(err, abs)), nil
	}
	if len(found) == 0 {
		return Text("No files match "+p.Pattern).WithMeta("files", 0), nil
	}
	limit := findFilesDefaultLimit
	if p.Limit > 0 {
		limit = min(p.Limit, findFilesMaxLimit)
	}
	start := min(p.Offset, len(found))
	end := min(start+limit, len(found))
	if start == end {
		return Text(fmt.Sprintf("No more results: offset=%d but only %d paths match %s", p.Offset, len(found), p.Pattern)), nil
	}
	var b strings.Builder
	for _, f := range found[start:end] {
		b.WriteString(listPath(s.Workspace.Rel(f.Path)))
		if f.Dir {
			b.WriteByte('/')
		}
		b.WriteByte('\n')
	}
	if end < len(found) {
		fmt.Fprintf(&b, "[more results: use offset=%d]\n", end)
	}
	return Text(strings.TrimSuffix(b.String(), "\n")).WithMeta("files", len(found)), nil
}
