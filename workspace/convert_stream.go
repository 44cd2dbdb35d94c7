package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Converting a file streams it: its bytes go from their source (a file,
// git cat-file) through the user's filter (confined, filter_confined.go,
// filter_process.go) and git's conversion of line endings (git
// hash-object --path, git cat-file --filters) to their destination (the
// object store, a file) in pieces, so troupe's memory does not follow
// the file's size. git's conversion of line endings holds one file in
// git's process (as git add and git checkout do), not in troupe's.

// errAsIs is returned by a filter run that failed when its driver is not
// required, or whose process does not offer the command: git then takes
// the contents as they are, and so does the caller (from the start).
var errAsIs = errors.New("the filter left the contents as they are")

// cleanID is the blob ID git add would make of what src writes at path,
// stored: the user's filter (when path goes through one) then git
// hash-object -w --path, streamed.
func (c *converter) cleanID(ctx context.Context, path string, src patchWriter) (string, error) {
	if d, ok := c.filtered[path]; ok {
		id, err := c.hashThrough(ctx, path, func(w io.Writer) error { return c.runTo(ctx, d, "clean", path, src, w) })
		if !errors.Is(err, errAsIs) {
			return id, err
		}
	}
	return c.hashThrough(ctx, path, src)
}

// hashThrough stores what fill writes as git add stores it at path (git
// hash-object -w --stdin --path: git's conversion of line endings) and
// returns its blob ID. When fill fails, git is stopped before it could
// store a part.
func (c *converter) hashThrough(ctx context.Context, path string, fill patchWriter) (string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd, err := c.g.command(ctx, "hash-object", "-w", "--stdin", "--path="+path)
	if err != nil {
		return "", err
	}
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &limitedWriter{w: &out, n: 256}, &limitedWriter{w: &stderr, n: 4 << 10}
	in, err := cmd.StdinPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("read %s as git adds it: %w", path, err)
	}
	ferr := fill(in)
	if ferr != nil {
		cancel()
	}
	in.Close()
	werr := cmd.Wait()
	switch {
	case ferr != nil:
		return "", ferr
	case werr != nil:
		return "", fmt.Errorf("read %s as git adds it: %w: %s", path, werr, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// smudgeTo writes to dst what git checkout writes at path for the blob
// id, streamed: git cat-file --filters --path (git's conversion of line
// endings), then the user's filter when path goes through one. A filter
// that leaves the contents as they are after it wrote some to dst (an
// *os.File) has them written again from the start.
func (c *converter) smudgeTo(ctx context.Context, path, id string, dst io.Writer) error {
	src := func(w io.Writer) error {
		cmd, err := c.g.command(ctx, "cat-file", "--filters", "--path="+path, id)
		if err != nil {
			return err
		}
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = w, &limitedWriter{w: &stderr, n: 4 << 10}
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("write %s as git checks it out: %w: %s", path, err, strings.TrimSpace(stderr.String()))
		}
		return nil
	}
	d, ok := c.filtered[path]
	if !ok {
		return src(dst)
	}
	cw := &countWriter{w: dst}
	err := c.runTo(ctx, d, "smudge", path, src, cw)
	if !errors.Is(err, errAsIs) {
		return err
	}
	if cw.n > 0 {
		if err := rewind(dst); err != nil {
			return fmt.Errorf("write %s as git checks it out: its filter failed after it wrote: %w", path, err)
		}
	}
	return src(dst)
}

// rewind empties dst (an *os.File or a *bytes.Buffer) for writing again.
func rewind(dst io.Writer) error {
	switch f := dst.(type) {
	case *bytes.Buffer:
		f.Reset()
		return nil
	case *os.File:
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		return f.Truncate(0)
	}
	return errors.New("it cannot be written again")
}

// smudgeSrc is the patchWriter of what git checkout writes at path for
// the blob id (smudgeTo).
func (c *converter) smudgeSrc(ctx context.Context, path, id string) patchWriter {
	return func(w io.Writer) error { return c.smudgeTo(ctx, path, id, w) }
}

// runTo converts what src writes at path by the driver d (command:
// clean or smudge), confined, into dst, at most the Repo's limit:
// its process when it has one, else its command; errAsIs when git would
// take the contents as they are.
func (c *converter) runTo(ctx context.Context, d filterDriver, command, path string, src patchWriter, dst io.Writer) error {
	if d.process != "" {
		return c.runProcessFilter(ctx, d, command, path, src, dst)
	}
	if command == "clean" {
		return c.runFilter(ctx, d, d.clean, path, src, dst)
	}
	return c.runFilter(ctx, d, d.smudge, path, src, dst)
}

// fileSrc is the patchWriter of the regular file at abs (not followed
// when a symlink), read in pieces; an error when its size changes
// meanwhile.
func fileSrc(abs string) patchWriter {
	return func(w io.Writer) error {
		f, size, err := openRegular(abs)
		if err != nil {
			return err
		}
		defer f.Close()
		return copyExactly(w, f, size)
	}
}

// replaceFrom replaces the file at path beneath top (its directories
// made, no symlink followed) by a regular file of permissions perm
// holding what src writes: written to a temporary name in its directory,
// then renamed.
func replaceFrom(top *dirFD, path string, perm uint32, src patchWriter) error {
	dir, name := splitPath(path)
	d, err := top.sub(dir, true)
	if err != nil {
		return err
	}
	defer d.close()
	tmp := ".troupe-" + strconv.FormatUint(rand.Uint64(), 16) + ".tmp"
	fd, err := unix.Openat(d.fd(), tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), tmp)
	err = src(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(d.fd(), tmp, d.fd(), name)
	}
	if err != nil {
		_ = unix.Unlinkat(d.fd(), tmp, 0)
	}
	return err
}
