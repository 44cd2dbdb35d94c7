package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/troupe-ai/troupe/internal/search"
)

// searchScope is the opening grep and find_files share: the call's path
// resolved beneath the workspace root and found to exist, as the target
// a search walks.
type searchScope struct {
	ws     *Workspace
	target search.Target
	info   fs.FileInfo
}

// openScope resolves path for a search; want says what the path may name
// ("a directory") in the error when it does not exist.
func openScope(s *Session, path, want string) (*searchScope, Result) {
	abs, err := s.Workspace.Resolve(path)
	if err != nil {
		return nil, Errorf("%v", err)
	}
	sc := &searchScope{ws: s.Workspace, target: s.Workspace.target(abs)}
	sc.info, err = s.Workspace.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, Errorf("path %s does not exist; give %s relative to the workspace root", sc.display(), want)
	case err != nil:
		return nil, Errorf("cannot search %s: %v", sc.display(), err)
	}
	return sc, Result{}
}

// display is the searched path as the model wrote it.
func (sc *searchScope) display() string { return sc.ws.Display(sc.target.Path) }

// failed is the outcome of a search that returned err: the context's
// error when the call was cancelled, else an error result explaining err.
func (sc *searchScope) failed(ctx context.Context, err error) (Result, error) {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return Result{}, ctxErr
	}
	return Errorf("search %s: %v", sc.display(), sc.ws.explain(err, sc.target.Path)), nil
}

// listPage writes the page of n results a call asks for, from offset and
// at most limit, one line each (line writes result i), and says where the
// next page starts; an offset past the end is a sentence naming what
// (e.g. "files match PATTERN").
func listPage(n, offset, limit int, what string, line func(b *strings.Builder, i int)) Result {
	start := min(offset, n)
	end := min(start+limit, n)
	if start == end {
		return Text(fmt.Sprintf("No more results: offset=%d but only %d %s", offset, n, what))
	}
	var b strings.Builder
	for i := start; i < end; i++ {
		line(&b, i)
		b.WriteByte('\n')
	}
	if end < n {
		fmt.Fprintf(&b, "[more results: use offset=%d]\n", end)
	}
	return Text(strings.TrimSuffix(b.String(), "\n"))
}
