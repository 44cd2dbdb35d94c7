package workspace

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/troupe-ai/troupe/messages"
)

// trimLFS drops the git lfs objects of the store that no worktree and
// no kept patch needs beyond the newest LFSSpare bytes of them (by
// modification time: stored, or last found needed; the needed ones are
// touched, so a snapshot's objects stay while it is used again and
// again). It returns how many it dropped and the bytes the needed ones
// hold.
func (k *StoreKeeper) trimLFS(ctx context.Context) (int, int64, error) {
	needed, err := k.lfsInUse(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("trim the git lfs objects of the snapshot store: %w", err)
	}
	type spare struct {
		path string
		size int64
		at   time.Time
	}
	var rest []spare
	var held int64
	now := time.Now()
	err = walkFanout(filepath.Join(k.r.lfsDir(), "objects"), 2, func(p string, fi os.FileInfo) {
		if needed[filepath.Base(p)] {
			held += fi.Size()
			_ = os.Chtimes(p, now, now)
			return
		}
		rest = append(rest, spare{p, fi.Size(), fi.ModTime()})
	})
	if err != nil {
		return 0, held, fmt.Errorf("trim the git lfs objects of the snapshot store: %w", err)
	}
	slices.SortFunc(rest, func(a, b spare) int { return b.at.Compare(a.at) })
	var kept int64
	dropped := 0
	for _, o := range rest {
		if kept+o.size <= k.b.LFSSpare {
			kept += o.size
			continue
		}
		if err := os.Remove(o.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return dropped, held, fmt.Errorf("trim the git lfs objects of the snapshot store: %w", err)
		}
		dropped++
	}
	return dropped, held, nil
}

// lfsInUse is the oids of the git lfs objects that the snapshots of the
// store's registered worktrees (every process's: live, being handed
// over, kept for reuse) and the kept patches under the state directory
// name.
func (k *StoreKeeper) lfsInUse(ctx context.Context) (map[string]bool, error) {
	in := map[string]bool{}
	for _, c := range k.worktreeCommits() {
		ptrs, err := k.r.LFSPointers(ctx, c, nil)
		if err != nil {
			return nil, err
		}
		for _, p := range ptrs {
			in[p.OID] = true
		}
	}
	if k.state == "" {
		return in, nil
	}
	patches, err := filepath.Glob(filepath.Join(k.state, "runs", "*", "changes", "*.patch"))
	if err != nil {
		return nil, err
	}
	for _, p := range patches {
		if err := patchLFSOIDs(p, in); err != nil {
			return nil, fmt.Errorf("read the kept patch %s: %w", p, err)
		}
	}
	return in, nil
}

// worktreeCommits is the commits the store's registered worktrees hold:
// each one's HEAD and the snapshot it was made from.
func (k *StoreKeeper) worktreeCommits() []string {
	dir := filepath.Join(k.r.home.dir, "worktrees")
	entries, _ := os.ReadDir(dir)
	seen := map[string]bool{}
	var commits []string
	for _, e := range entries {
		for _, name := range []string{"HEAD", snapshotFile} {
			data, err := readBeneath(filepath.Join(dir, e.Name()), name, 128)
			c := strings.TrimSpace(string(data))
			if err == nil && (len(c) == 40 || len(c) == 64) && isHex(c) && !seen[c] {
				seen[c] = true
				commits = append(commits, c)
			}
		}
	}
	return commits
}

// patchLFSOIDs adds to in the oids of the git lfs pointers the patch at
// path adds (its "+oid sha256:" lines), read a line at a time.
func patchLFSOIDs(path string, in map[string]bool) error {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 4096)
	start := true // at the start of a line
	for {
		line, err := br.ReadSlice('\n')
		if start {
			if oid, ok := bytes.CutPrefix(bytes.TrimRight(line, "\n"), []byte("+oid sha256:")); ok && messages.ValidLFSOID(string(oid)) {
				in[string(oid)] = true
			}
		}
		start = err == nil
		switch {
		case err == nil, errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			return nil
		default:
			return err
		}
	}
}
