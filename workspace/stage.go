package workspace

import (
	"bytes"
	"context"
	be "encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
)

// git add -A runs `git status` inside every submodule it tracks whose
// HEAD is unchanged, to see whether it is dirty (which add does not even
// use), and that status reads the submodule's own config and
// attributes: a repository the agent made (or a .git file it rewrote)
// there would have its filters run. So troupe's snapshot and capture
// leave the index's submodules out of git add -A and record their HEAD
// with git update-index, which reads it in process; a nested repository
// that is new is added in process by add itself.

// errLinksUnknown is an index whose submodules cannot be listed in Go.
var errLinksUnknown = errors.New("index not readable for its submodules")

// addAll stages the work tree of g into the index file index, as git add
// -A --ignore-errors would, without starting git inside a submodule.
// idLen is the length of the repository's object IDs in bytes.
func addAll(ctx context.Context, g git, index string, idLen int) error {
	data, err := os.ReadFile(index)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read index: %w", err)
	}
	links, err := indexLinks(data, idLen)
	if err != nil {
		return err
	}
	g = g.withIndex(index)
	var spec bytes.Buffer
	spec.WriteString(".\x00")
	for _, l := range links {
		spec.WriteString(":(exclude,literal)" + l + "\x00")
	}
	if err := addTolerant(ctx, g, spec.Bytes(), "--pathspec-from-file=-", "--pathspec-file-nul"); err != nil {
		return err
	}
	if len(links) == 0 {
		return nil
	}
	var list bytes.Buffer
	for _, l := range links {
		list.WriteString(l + "\x00")
	}
	_, err = g.run(ctx, list.Bytes(), "update-index", "--add", "--remove", "-z", "--stdin")
	return err
}

// A directory being written while it is snapshot (an agent working in
// it beside the agent whose worktree is being made, its atomic writes'
// temporary files, a build, the user's editor) has files that git add
// lists and that are gone when it reads them: git then dies ("unable to
// stat"), whatever --ignore-errors says, and writes no index. Such a
// file is no part of the state being recorded, so the add is run again
// on what is there now; addAttempts bounds the runs.
const addAttempts = 5

// addHook, when set (tests), runs before each run of git add with its
// number, from 1; an error it returns is that run's.
var addHook func(attempt int) error

// addTolerant runs git add -A --ignore-errors with more arguments (and
// stdin) in g's index, again when git died (exit status 128: a file it
// listed vanished before it read it), up to addAttempts runs. The index
// is written only by a run that succeeds.
func addTolerant(ctx context.Context, g git, stdin []byte, more ...string) error {
	var err error
	for attempt := 1; attempt <= addAttempts; attempt++ {
		if addHook != nil {
			err = addHook(attempt)
		}
		if err == nil {
			_, err = g.run(ctx, stdin, append([]string{"add", "-A", "--ignore-errors"}, more...)...)
		}
		var exit *exec.ExitError
		if err == nil || ctx.Err() != nil || !errors.As(err, &exit) || exit.ExitCode() != 128 {
			return err
		}
	}
	return err
}

// indexLinks lists the paths of the submodules (gitlinks) in the index
// file data (none when it is empty), in any of the formats git writes
// (versions 2 to 4); errLinksUnknown when the entries are not all there
// (a split or sparse index) or it cannot be read.
func indexLinks(data []byte, idLen int) ([]string, error) {
	if len(data) == 0 {
		return nil, nil
	}
	bad := func(why string) error { return fmt.Errorf("%w: %s", errLinksUnknown, why) }
	if len(data) < 12+idLen || string(data[:4]) != "DIRC" {
		return nil, bad("no index header")
	}
	version := be.BigEndian.Uint32(data[4:])
	if version < 2 || version > 4 {
		return nil, bad(fmt.Sprintf("version %d", version))
	}
	n := be.BigEndian.Uint32(data[8:])
	body := data[12 : len(data)-idLen]
	var links []string
	var name []byte
	fixed := 40 + idLen + 2
	for range n {
		if len(body) < fixed {
			return nil, bad("truncated entry")
		}
		mode := be.BigEndian.Uint32(body[24:])
		flags := be.BigEndian.Uint16(body[40+idLen:])
		at := fixed
		if flags&flagExtended != 0 {
			at += 2
		}
		if len(body) < at {
			return nil, bad("truncated entry")
		}
		var size int
		if version == 4 {
			strip, k := uvarint(body[at:])
			if k <= 0 || strip > uint64(len(name)) {
				return nil, bad("bad name")
			}
			nul := bytes.IndexByte(body[at+k:], 0)
			if nul < 0 {
				return nil, bad("unterminated name")
			}
			name = append(name[:len(name)-int(strip)], body[at+k:at+k+nul]...)
			size = at + k + nul + 1
		} else {
			nul := bytes.IndexByte(body[at:], 0)
			if nul < 0 {
				return nil, bad("unterminated name")
			}
			name = append(name[:0], body[at:at+nul]...)
			size = (at + nul + 8) &^ 7
		}
		if len(body) < size {
			return nil, bad("truncated entry")
		}
		if mode == 0o160000 {
			links = append(links, string(name))
		}
		body = body[size:]
	}
	for len(body) >= 8 {
		sig := string(body[:4])
		if sig == "link" || sig == "sdir" {
			return nil, bad("a " + sig + " extension")
		}
		size := be.BigEndian.Uint32(body[4:])
		if uint64(size) > uint64(len(body)-8) {
			return nil, bad("truncated extension")
		}
		body = body[8+int(size):]
	}
	return links, nil
}

// uvarint decodes git's offset varint (index version 4): its value and
// length, or a length of 0 when it is malformed.
func uvarint(b []byte) (uint64, int) {
	if len(b) == 0 {
		return 0, 0
	}
	c := b[0]
	val := uint64(c & 127)
	k := 1
	for c&128 != 0 {
		if k >= len(b) || k > 9 {
			return 0, 0
		}
		val++
		c = b[k]
		k++
		val = val<<7 + uint64(c&127)
	}
	return val, k
}
