package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A new worktree's files are written in Go (goCheckout): the commit's
// tree listed and its blobs read once per Repo (checkout_tree.go), then
// every file written by a few goroutines through an os.Root on the
// worktree, and git's index for the worktree written last with each
// file's stat data (index_write.go), so git sees the worktree clean
// without reading a file. git's checkout (reset --hard) writes one file
// at a time and costs several times more. Whenever the result could
// differ from git's checkout (attributes, which may convert line ends
// or run filters; configuration that changes checkouts; submodules;
// names git refuses; a tree too large to hold in memory) or anything
// fails, git checks the worktree out instead.

// checkoutWriters is how many goroutines write a worktree's files.
var checkoutWriters = 4

// checkoutChunk is how many files of one directory a writer takes at a time.
const checkoutChunk = 64

// errGitCheckout marks a worktree git must check out itself.
var errGitCheckout = errors.New("checkout needs git")

// hexID matches an object ID.
var hexID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`) })

// checkout fills the new worktree w with its snapshot's files and index:
// in Go when that gives what git's checkout gives, else by git.
func (w *Worktree) checkout(ctx context.Context) error {
	err := w.goCheckout(ctx)
	if err == nil {
		w.repo.countCheckout(true)
		return nil
	}
	if ctx.Err() != nil {
		return err
	}
	if !errors.Is(err, errGitCheckout) {
		if err := clearWorktree(w.at); err != nil {
			return fmt.Errorf("check out: %w", err)
		}
	}
	if _, err := w.g.run(ctx, nil, "reset", "-q", "--hard", w.snap.Commit); err != nil {
		return err
	}
	w.repo.countCheckout(false)
	return nil
}

// countCheckout counts a checkout done in Go (or by git).
func (r *Repo) countCheckout(inGo bool) {
	r.checkout.mu.Lock()
	if inGo {
		r.checkout.goCount++
	} else {
		r.checkout.gitCount++
	}
	r.checkout.mu.Unlock()
}

// goCheckout writes w's files and index in Go, or returns errGitCheckout
// when git must do it.
func (w *Worktree) goCheckout(ctx context.Context) error {
	r := w.repo
	if !hexID().MatchString(w.snap.Commit) {
		return fmt.Errorf("%w: commit %q", errGitCheckout, w.snap.Commit)
	}
	if why := r.checkoutConfWhy(ctx); why != "" {
		return fmt.Errorf("%w: %s", errGitCheckout, why)
	}
	if why := attributesFileWhy(r.home.dir); why != "" {
		return fmt.Errorf("%w: %s", errGitCheckout, why)
	}
	tf, err := r.treeFiles(ctx, w.snap.Commit)
	if err != nil {
		return err
	}
	if tf.why != "" {
		return fmt.Errorf("%w: %s", errGitCheckout, tf.why)
	}
	root, err := os.OpenRoot(w.at)
	if err != nil {
		return fmt.Errorf("check out: %w", err)
	}
	defer root.Close()
	es, err := writeTreeFiles(ctx, root, tf, w.linkFrom, w.dir)
	if err == nil && r.checkout.fault != nil {
		err = r.checkout.fault()
	}
	if err != nil {
		return fmt.Errorf("check out: %w", err)
	}
	if err := writeIndexFile(filepath.Join(w.admin, "index"), es, len(w.snap.Commit)/2); err != nil {
		return err
	}
	w.raw = true
	return nil
}

// writeTreeFiles writes tf's directories and files under root (which
// holds none of them yet; at the path to) and returns the index entries
// of the files, in tf.files' order, with the stat data of each as
// written. With src, a file src has as it is is linked from there
// (lower_link.go).
func writeTreeFiles(ctx context.Context, root *os.Root, tf *treeFiles, src *linkSource, to string) ([]indexEntry, error) {
	for _, d := range tf.dirs {
		if err := root.Mkdir(d, 0o777); err != nil {
			return nil, err
		}
	}
	// Writers take runs of files of one directory, which they write
	// through a Root of that directory: one path component per call.
	order := make([]int, len(tf.files))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return strings.Compare(path.Dir(tf.files[a].path), path.Dir(tf.files[b].path))
	})
	var chunks [][]int
	for start := 0; start < len(order); {
		end := start + 1
		dir := path.Dir(tf.files[order[start]].path)
		for end < len(order) && end-start < checkoutChunk && path.Dir(tf.files[order[end]].path) == dir {
			end++
		}
		chunks = append(chunks, order[start:end])
		start = end
	}
	// git compares a file's stat data with its entry's to know it is
	// unchanged, but one modified in the second the index was written
	// (git compares whole seconds) may still match: such entries are
	// "racily clean", and every git command reads their files again
	// until an index is written in a later second. Files last modified
	// in the second before this checkout began are not: any change to
	// them from now on gives a later time.
	mtime := time.Unix(time.Now().Unix()-1, 0)
	es := make([]indexEntry, len(tf.files))
	var next atomic.Int64
	var failed atomic.Bool
	errs := make([]error, checkoutWriters)
	var wg sync.WaitGroup
	for k := range min(checkoutWriters, len(chunks)) {
		wg.Go(func() {
			for {
				c := int(next.Add(1)) - 1
				if c >= len(chunks) || failed.Load() {
					return
				}
				if err := ctx.Err(); err != nil {
					errs[k] = err
				} else {
					errs[k] = writeChunk(root, tf, chunks[c], es, mtime, src, to)
				}
				if errs[k] != nil {
					failed.Store(true)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return es, nil
}

// writeChunk writes the files tf.files[i] for i in chunk, all in one
// directory, and sets es[i] for each (linked from src where it may be).
func writeChunk(root *os.Root, tf *treeFiles, chunk []int, es []indexEntry, mtime time.Time, src *linkSource, to string) error {
	dir := path.Dir(tf.files[chunk[0]].path)
	from, into := src.linkDirs(to, dir)
	if from != nil {
		defer from.close()
		defer into.close()
	}
	d := root
	if dir != "." {
		sub, err := root.OpenRoot(dir)
		if err != nil {
			return err
		}
		defer sub.Close()
		d = sub
	}
	for _, i := range chunk {
		f := tf.files[i]
		id, err := rawID(tf.ids[f.blob])
		if err != nil {
			return err
		}
		st, linked := indexStat{}, false
		if from != nil {
			st, linked = src.linkFile(from, into, path.Base(f.path), f, id)
		}
		if !linked {
			if st, err = writeTreeFile(d, path.Base(f.path), f.mode, tf.blobs[f.blob], mtime); err != nil {
				return err
			}
		}
		es[i] = indexEntry{path: f.path, mode: f.mode, id: id, stat: st}
	}
	return nil
}

// writeTreeFile writes the file name in d as git checks a blob out: a
// symlink to the blob's contents, or a new file with them, executable
// when mode says so (the umask applies, as to git's files), last
// modified at mtime.
func writeTreeFile(d *os.Root, name string, mode uint32, data []byte, mtime time.Time) (indexStat, error) {
	if mode == 0o120000 {
		if err := d.Symlink(string(data), name); err != nil {
			return indexStat{}, err
		}
		fi, err := d.Lstat(name)
		if err != nil {
			return indexStat{}, err
		}
		return statOf(fi)
	}
	perm := os.FileMode(0o666)
	if mode == 0o100755 {
		perm = 0o777
	}
	f, err := d.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return indexStat{}, err
	}
	_, err = f.Write(data)
	if err == nil {
		err = d.Chtimes(name, mtime, mtime)
	}
	var fi os.FileInfo
	if err == nil {
		fi, err = f.Stat()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return indexStat{}, err
	}
	return statOf(fi)
}

// clearWorktree deletes everything in the worktree dir but its .git
// file, what a failed Go checkout left.
func clearWorktree(dir string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() == ".git" {
			continue
		}
		if err := root.RemoveAll(e.Name()); err != nil {
			return err
		}
	}
	return nil
}
