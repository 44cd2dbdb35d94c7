package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// version is one side of a file in a three-way merge.
type version struct {
	mode string // git mode: 100644, 100755, 120000, 160000; "" when absent; "dir" for a directory
	data []byte // contents, or a symlink's target
}

func (v version) exists() bool { return v.mode != "" }

func (v version) equal(o version) bool { return v.mode == o.mode && bytes.Equal(v.data, o.data) }

func (v version) regular() bool { return v.mode == "100644" || v.mode == "100755" }

// change is one file the merge writes: its new version (absent: delete).
type change struct {
	path string
	to   version
}

// entry is one changed path between two trees.
type entry struct {
	path             string
	oldMode, newMode string
	oldBlob, newBlob string
}

// merge merges the difference between trees base and theirs into the
// work tree, file by file. It returns the conflicting paths, and then
// has written nothing.
func (r *Repo) merge(ctx context.Context, base, theirs string) ([]string, error) {
	entries, err := r.changedEntries(ctx, base, theirs)
	if err != nil {
		return nil, err
	}
	blobs, err := r.readBlobs(ctx, entries)
	if err != nil {
		return nil, err
	}
	var plan []change
	var conflicts []string
	for _, e := range entries {
		b := version{mode: e.oldMode, data: blobs[e.oldBlob]}
		t := version{mode: e.newMode, data: blobs[e.newBlob]}
		c, ok, err := r.mergeOne(ctx, e.path, b, t)
		if err != nil {
			return nil, err
		}
		if !ok {
			conflicts = append(conflicts, e.path)
		} else if c != nil {
			plan = append(plan, *c)
		}
	}
	if len(conflicts) > 0 {
		return conflicts, nil
	}
	for _, c := range plan {
		if err := r.write(c); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// mergeOne decides one file: the change to make (nil: none) and whether
// it merges at all.
func (r *Repo) mergeOne(ctx context.Context, path string, base, theirs version) (*change, bool, error) {
	if !filepath.IsLocal(filepath.FromSlash(path)) {
		return nil, false, fmt.Errorf("%s: %w", path, errOutside)
	}
	ours, err := r.current(path)
	if err != nil {
		return nil, false, err
	}
	switch {
	case ours.equal(theirs):
		return nil, true, nil
	case ours.equal(base):
		if theirs.exists() && !r.parentsFree(path) {
			return nil, false, nil
		}
		return &change{path: path, to: theirs}, true, nil
	case !ours.regular() || !base.regular() || !theirs.regular() || binary(ours.data) || binary(base.data) || binary(theirs.data):
		return nil, false, nil
	}
	merged, ok, err := r.mergeFile(ctx, ours.data, base.data, theirs.data)
	if err != nil || !ok {
		return nil, ok, err
	}
	mode := ours.mode
	if ours.mode == base.mode {
		mode = theirs.mode
	}
	return &change{path: path, to: version{mode: mode, data: merged}}, true, nil
}

// current is the work tree's version of path.
func (r *Repo) current(path string) (version, error) {
	abs := filepath.Join(r.top, filepath.FromSlash(path))
	info, err := os.Lstat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		return version{}, nil
	case err != nil:
		return version{}, fmt.Errorf("read %s: %w", path, err)
	case info.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(abs)
		return version{mode: "120000", data: []byte(target)}, err
	case info.IsDir():
		return version{mode: "dir"}, nil
	case !info.Mode().IsRegular():
		return version{mode: "other"}, nil
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return version{}, fmt.Errorf("read %s: %w", path, err)
	}
	mode := "100644"
	if info.Mode()&0o111 != 0 {
		mode = "100755"
	}
	return version{mode: mode, data: data}, nil
}

// parentsFree reports whether every directory above path is a directory
// or absent, so the file can be written.
func (r *Repo) parentsFree(path string) bool {
	dir := filepath.Dir(filepath.FromSlash(path))
	for dir != "." && dir != string(filepath.Separator) {
		info, err := os.Lstat(filepath.Join(r.top, dir))
		if err == nil && !info.IsDir() {
			return false
		}
		dir = filepath.Dir(dir)
	}
	return true
}

// binary reports whether data looks binary (a NUL in its first 8 KB).
func binary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0
}

// mergeFile merges text files with git merge-file: the result, and false
// when they conflict.
func (r *Repo) mergeFile(ctx context.Context, ours, base, theirs []byte) ([]byte, bool, error) {
	dir, err := os.MkdirTemp(filepath.Join(r.dataDir, "tmp"), "merge-*")
	if err != nil {
		return nil, false, fmt.Errorf("merge: %w", err)
	}
	defer os.RemoveAll(dir)
	names := []string{"ours", "base", "theirs"}
	for i, data := range [][]byte{ours, base, theirs} {
		if err := os.WriteFile(filepath.Join(dir, names[i]), data, 0o600); err != nil {
			return nil, false, fmt.Errorf("merge: %w", err)
		}
	}
	out, code, err := (git{dir: dir}).runCode(ctx, nil, "merge-file", "-p", "ours", "base", "theirs")
	if err != nil {
		return nil, false, fmt.Errorf("merge: %w", err)
	}
	return out, code == 0, nil
}

// write makes c's change in the work tree (see writeChange).
func (r *Repo) write(c change) error { return writeChange(r.top, c) }

// writeChange makes c's change in the tree at top: the file replaced
// atomically, or removed with the directories it leaves empty.
func writeChange(top string, c change) error {
	abs := filepath.Join(top, filepath.FromSlash(c.path))
	if !c.to.exists() {
		if err := os.Remove(abs); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("delete %s: %w", c.path, err)
		}
		for dir := filepath.Dir(abs); dir != top && strings.HasPrefix(dir, top); dir = filepath.Dir(dir) {
			if os.Remove(dir) != nil {
				break
			}
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", c.path, err)
	}
	tmp := filepath.Join(filepath.Dir(abs), ".troupe-"+strconv.FormatUint(rand.Uint64(), 16)+".tmp")
	var err error
	switch c.to.mode {
	case "120000":
		err = os.Symlink(string(c.to.data), tmp)
	case "100755":
		err = os.WriteFile(tmp, c.to.data, 0o755)
	default:
		err = os.WriteFile(tmp, c.to.data, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, abs)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", c.path, err)
	}
	return nil
}
