package tools

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/troupe-ai/troupe/internal/ignore"
	"github.com/troupe-ai/troupe/internal/search"
)

//go:embed list_dir.md
var listDirDoc string

const (
	listDirDefaultDepth = 2
	listDirDefaultLimit = 50
	// listDirMaxNameChars is where list_dir cuts a long entry name.
	listDirMaxNameChars = 500
)

// ListDirParams are list_dir's arguments.
type ListDirParams struct {
	Path   string `json:"path,omitempty" jsonschema:"directory to list, relative to the workspace root (default the root)"`
	Depth  int    `json:"depth,omitempty" jsonschema:"how many levels to descend; 1 lists only the directory's own entries (default 2)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"maximum number of entries to show (default 50)"`
	Offset int    `json:"offset,omitempty" jsonschema:"first entry to show, 1-based, counted in tree order (default 1)"`
}

// TouchedPaths names the directory listed.
func (p ListDirParams) TouchedPaths() []string { return dirScope(p.Path) }

// ListDir returns the list_dir tool.
func ListDir() Tool {
	return New(Spec{
		Guidance: []GuidanceLine{Line(SectionWhichTool, 30, "See a directory's layout with list_dir.")},
		Name:     NameListDir, Truncation: Head(30 * 1024), Description: listDirDoc, ReadOnly: true, Cacheable: true,
		Parallel: ParallelSafe, Tier: TierAlways}, runListDir,
		Minimum("depth", 1), Minimum("limit", 1), Minimum("offset", 1))
}

func runListDir(ctx context.Context, s *Session, p ListDirParams) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	abs, err := s.Workspace.Resolve(p.Path)
	if err != nil {
		return Errorf("%v", err), nil
	}
	display := s.Workspace.Display(abs)
	fi, err := s.Workspace.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		msg := "Directory not found: " + display
		if names := similarNames(s, abs); len(names) > 0 {
			msg += "\nDid you mean: " + strings.Join(names, ", ") + "?"
		}
		return Errorf("%s", msg), nil
	case err != nil:
		return Errorf("cannot list %s: %v", display, err), nil
	case !fi.IsDir():
		return Errorf("%s is a file, not a directory; use read_file to read it", display), nil
	}
	dir, err := s.Workspace.openRoot(abs)
	if err != nil {
		return Errorf("cannot list %s: %v", display, err), nil
	}
	defer dir.Close()
	w := dirWalk{
		ctx:     ctx,
		matcher: s.Workspace.matcher(),
		depth:   listDirDefaultDepth,
		first:   max(p.Offset, 1),
		limit:   listDirDefaultLimit,
	}
	if p.Depth > 0 {
		w.depth = p.Depth
	}
	if p.Limit > 0 {
		w.limit = p.Limit
	}
	if err := w.walk(dir, abs); err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		return Errorf("cannot list %s: %v", display, s.Workspace.explain(err, abs)), nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Absolute path: %s", display)
	switch {
	case w.seen == 0:
		b.WriteString("\n(empty directory)")
	case w.first > w.seen:
		return Errorf("offset %d is past the end: %s has %d entries up to depth %d; use an offset from 1 to %d",
			w.first, display, w.seen, w.depth, w.seen), nil
	}
	for _, l := range w.lines {
		b.WriteByte('\n')
		b.WriteString(l)
	}
	if w.more {
		last := w.first + w.limit - 1
		fmt.Fprintf(&b, "\nMore than %d entries found; use offset=%d to see more", last, last+1)
	}
	return Text(b.String()).WithMeta("path", display).WithMeta("entries", len(w.lines)).
		WithMeta("truncated", w.more), nil
}

// dirWalk lists a tree depth first, children sorted by name, counting
// entries in that order and keeping the lines of the requested page. It
// stops as soon as it knows whether entries follow the page.
type dirWalk struct {
	ctx     context.Context
	matcher *ignore.Matcher
	depth   int
	first   int // 1-based index of the first entry to keep
	limit   int

	seen  int // entries counted so far
	lines []string
	more  bool // entries exist after the page
}

// errListDirPageDone ends a walk that has seen enough.
var errListDirPageDone = errors.New("list_dir: page complete")

// walk lists the tree of the open directory dir (at path) until the page
// is complete or the tree ends.
func (w *dirWalk) walk(dir *os.Root, path string) error {
	err := w.dir(dir, path, 0)
	if errors.Is(err, errListDirPageDone) {
		return nil
	}
	return err
}

// dir lists one open directory's entries at indentation level,
// descending into subdirectories while the depth allows. Each
// subdirectory is opened beneath its parent's handle, so a name swapped
// for a symlink since the listing cannot lead out of the parent.
func (w *dirWalk) dir(d *os.Root, path string, level int) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	entries, err := readDirSorted(d)
	// Below the top, an unreadable directory is shown with what could be
	// read of it, often nothing.
	if err != nil && level == 0 {
		return err
	}
	var pr ignore.Presence
	for _, e := range entries {
		switch e.Name {
		case ".gitignore":
			pr.Gitignore = true
		case ".ignore":
			pr.Ignore = true
		case ".git":
			pr.Git = true
		}
	}
	w.matcher.Prime(path, pr)
	rules := w.matcher.Dir(path)
	for _, e := range entries {
		name, typ := e.Name, e.Type
		isDir := typ.IsDir()
		if name == ".git" || rules.Match(name, isDir) {
			continue
		}
		w.seen++
		if w.seen >= w.first+w.limit {
			w.more = true
			return errListDirPageDone
		}
		if w.seen >= w.first {
			w.lines = append(w.lines, strings.Repeat("  ", level)+entryLabel(name, typ))
		}
		if isDir && level+1 < w.depth {
			sub, err := d.OpenRoot(name)
			if err != nil {
				continue // gone or swapped since the listing: shown without entries
			}
			err = w.dir(sub, filepath.Join(path, name), level+1)
			sub.Close()
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// readDirSorted lists the open directory d sorted by name, with what it
// could read when it fails partway.
func readDirSorted(d *os.Root) ([]search.Dirent, error) {
	f, err := d.Open(".")
	if err != nil {
		return nil, err
	}
	entries, err := search.ReadDir(f)
	f.Close()
	slices.SortFunc(entries, func(a, b search.Dirent) int { return strings.Compare(a.Name, b.Name) })
	return entries, err
}

// entryLabel is an entry's name, cut when very long, with / after a
// directory and @ after a symlink.
func entryLabel(name string, typ fs.FileMode) string {
	name = listPath(name)
	if utf8.RuneCountInString(name) > listDirMaxNameChars {
		name = string([]rune(name)[:listDirMaxNameChars]) + "..."
	}
	name = strings.ToValidUTF8(name, "\uFFFD")
	switch {
	case typ&fs.ModeSymlink != 0:
		return name + "@"
	case typ.IsDir():
		return name + "/"
	}
	return name
}
