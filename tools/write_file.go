package tools

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

//go:embed write_file.md
var writeFileDoc string

// newFileMode is the permission of files the tools create.
const newFileMode fs.FileMode = 0o644

// WriteFileParams are write_file's arguments.
type WriteFileParams struct {
	Path    string `json:"path" jsonschema:"file path, relative to the workspace root; missing parent folders are created"`
	Content string `json:"content" jsonschema:"the complete new content of the file"`
}

// TouchedPaths names the file written.
func (p WriteFileParams) TouchedPaths() []string { return []string{p.Path} }

// WriteFile returns the write_file tool.
func WriteFile() Tool {
	return New(Spec{
		Guidance: []GuidanceLine{Line(SectionEditing, 30, "write_file is for new files or complete rewrites; prefer edit_file for changes.")},
		Name:     NameWriteFile, Truncation: HeadLines(50), Description: writeFileDoc, ReadOnly: false, Cacheable: false,
		Parallel: PerPath, Tier: TierAlways, Diff: true}, runWriteFile)
}

func runWriteFile(ctx context.Context, s *Session, p WriteFileParams) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	abs, err := s.Workspace.Resolve(p.Path)
	if err != nil {
		return Errorf("%v", err), nil
	}
	if err := s.Workspace.CheckWritable(abs); err != nil {
		return Errorf("write_file refused: %v", err), nil
	}
	display := s.Workspace.Display(abs)
	mode := newFileMode
	change := FileChange{To: display, New: []byte(p.Content)}
	fi, err := s.Workspace.Stat(abs)
	switch {
	case err == nil:
		old, res, ok := fileToChange(s, abs, display, fi, NameWriteFile)
		if !ok {
			return res, nil
		}
		mode = fi.Mode().Perm()
		change.From, change.Old = display, old
	case errors.Is(err, fs.ErrNotExist):
	default:
		return Errorf("cannot write %s: %v", display, err), nil
	}
	if res, ok := GateWrite(ctx, change); !ok {
		return res, nil
	}
	if change.From == "" {
		if res, ok := makeParents(abs, s.Workspace); !ok {
			return res, nil
		}
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	data := change.New
	if err := s.Workspace.WriteAtomic(abs, data, mode); err != nil {
		return Errorf("cannot write %s: %v", display, err), nil
	}
	s.Reads.Record(abs, data)
	n := countLines(p.Content)
	return Text(fmt.Sprintf("Wrote %d lines to %s", n, display)).
		WithMeta("path", display).WithMeta("lines", n).WithMeta("bytes", len(data)), nil
}

// makeParents creates the missing folders above abs. A file standing
// where a folder should be is an error result naming it.
func makeParents(abs string, ws *Workspace) (Result, bool) {
	dir := filepath.Dir(abs)
	if err := ws.mkdirAll(dir, 0o755); err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return Errorf("cannot create folder %s: %v", pe.Path, pe.Err), false
		}
		return Errorf("cannot create folder %s: %v", ws.Display(dir), err), false
	}
	return Result{}, true
}

// fileToChange is the content of the file edit_file or write_file (tool)
// is about to change: abs (fi its stat, display its name for the model)
// must be a regular file small enough for the read tracker, and the model
// must have read these very bytes. ok is false with the refusal in res.
func fileToChange(s *Session, abs, display string, fi fs.FileInfo, tool string) (content []byte, res Result, ok bool) {
	switch {
	case fi.IsDir():
		return nil, Errorf("%s is a directory; %s changes files, so give a file path inside it", display, tool), false
	case !fi.Mode().IsRegular():
		return nil, Errorf("%s is not a regular file (%s); %s changes regular files only", display, fi.Mode().Type(), tool), false
	case fi.Size() > maxTrackedFileBytes:
		return nil, Errorf("%s is too large for %s (%d bytes, limit %d): its read cannot be checked", display, tool, fi.Size(), maxTrackedFileBytes), false
	}
	content, err := s.Reads.Check(s.Workspace, abs, display)
	if err != nil {
		return nil, Refusal(err), false
	}
	return content, Result{}, true
}
