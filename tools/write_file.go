package tools

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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
	return New(Spec{Name: NameWriteFile, Kinds: changeKinds, Truncation: HeadLines(50), Description: writeFileDoc, ReadOnly: false, Cacheable: false,
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
	display := s.Workspace.Display(abs)
	mode := newFileMode
	change := fileChange{To: display, New: []byte(p.Content)}
	fi, err := os.Stat(abs)
	switch {
	case err == nil:
		if fi.IsDir() {
			return Errorf("%s is a directory; write_file writes files, so give a file path inside it", display), nil
		}
		if !fi.Mode().IsRegular() {
			return Errorf("%s is not a regular file (%s); write_file replaces regular files only", display, fi.Mode().Type()), nil
		}
		if fi.Size() > maxTrackedFileBytes {
			return Errorf("%s is too large to replace with write_file (%d bytes, limit %d): its read cannot be checked", display, fi.Size(), maxTrackedFileBytes), nil
		}
		if err := s.Reads.Check(abs, display); err != nil {
			return refusal(err), nil
		}
		mode = fi.Mode().Perm()
		old, err := os.ReadFile(abs)
		if err != nil {
			return Errorf("cannot read %s: %v", display, err), nil
		}
		// Check read the file once already; the diff must be of the very
		// bytes it accepted.
		if !s.Reads.readCurrent(abs, old) {
			return Errorf("file %s changed on disk while it was being written: read it again with read_file, then retry", display), nil
		}
		change.From, change.Old = display, old
	case errors.Is(err, fs.ErrNotExist):
	default:
		return Errorf("cannot write %s: %v", display, err), nil
	}
	if res, ok := gateWrite(ctx, change); !ok {
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
	if err := replaceFileAtomically(abs, data, mode); err != nil {
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
	if err := os.MkdirAll(dir, 0o755); err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return Errorf("cannot create folder %s: %v", ws.Display(pe.Path), pe.Err), false
		}
		return Errorf("cannot create folder %s: %v", ws.Display(dir), err), false
	}
	return Result{}, true
}

// replaceFileAtomically writes data to abs through a temporary file in the
// same directory and a rename, so that a reader sees the old content or the
// new, never a mix, and a failure leaves the old file whole. The file ends
// with permission perm.
func replaceFileAtomically(abs string, data []byte, perm fs.FileMode) (err error) {
	dir, base := filepath.Split(abs)
	tmp, err := os.CreateTemp(dir, "."+strings.TrimPrefix(base, ".")+".troupe-*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	if err = tmp.Chmod(perm); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), abs)
}
