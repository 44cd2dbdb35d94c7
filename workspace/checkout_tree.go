package workspace

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A Go checkout (materialise.go) writes a commit's files from a listing
// of its tree and its blobs held in memory. A Repo keeps the listing and
// blobs of the last commit checked out, so the many worktrees of one
// snapshot (50 workers starting at once) read them once; the next
// snapshot reads only the blobs that changed. The blobs come from one
// `git cat-file --batch` per listing, fed every ID at once, not from the
// Repo's shared reader, whose one-at-a-time exchanges would serialise
// the creations.

// maxCheckoutBlobs bounds the blobs of a tree a Repo holds in memory: a
// larger tree is checked out by git.
const maxCheckoutBlobs = 64 << 20

// checkoutCacheIdle is how long a Repo keeps the last listing unused.
const checkoutCacheIdle = time.Minute

// treeFile is one file of a tree to check out.
type treeFile struct {
	path string // slash-separated, from the top of the tree
	mode uint32 // 0o100644, 0o100755 or 0o120000
	blob int    // index of its blob in treeFiles.ids and blobs
}

// treeFiles is what a Go checkout of one commit writes.
type treeFiles struct {
	commit string
	ready  chan struct{} // closed when loaded
	err    error         // why it could not be loaded
	why    string        // why git must check this tree out instead ("" when Go can)

	files []treeFile // in index order (path bytes)
	dirs  []string   // every directory, each after its parent
	ids   []string   // the blobs' IDs, hex, each once
	blobs [][]byte   // their contents
}

// checkoutState is a Repo's memory for Go checkouts.
type checkoutState struct {
	confOnce sync.Once
	conf     map[string]confValue // the repository's configuration (checkout_conf.go)
	confWhy  string               // why it could not be read

	mu     sync.Mutex
	latest *treeFiles // the last commit listed
	timer  *time.Timer

	goCount, gitCount int // checkouts done each way, for tests

	// For tests: a bound on the blobs held other than maxCheckoutBlobs,
	// and a fault the Go checkout meets once its files are written.
	maxBlobs int
	fault    func() error
}

// treeFiles returns the files of commit, listing them and reading their
// blobs unless they are those of the last commit asked for, which
// concurrent callers then share.
func (r *Repo) treeFiles(ctx context.Context, commit string) (*treeFiles, error) {
	cs := &r.checkout
	cs.mu.Lock()
	if tf := cs.latest; tf != nil && tf.commit == commit {
		cs.timer.Reset(checkoutCacheIdle)
		cs.mu.Unlock()
		select {
		case <-tf.ready:
			return tf, tf.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	prev := cs.latest
	tf := &treeFiles{commit: commit, ready: make(chan struct{})}
	cs.latest = tf
	if cs.timer == nil {
		cs.timer = time.AfterFunc(checkoutCacheIdle, func() {
			cs.mu.Lock()
			cs.latest = nil
			cs.mu.Unlock()
		})
	} else {
		cs.timer.Reset(checkoutCacheIdle)
	}
	cs.mu.Unlock()

	// The load is shared: a caller giving up must not fail the others.
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), prepareTimeout)
	tf.err = r.loadTreeFiles(lctx, tf, prev)
	cancel()
	close(tf.ready)
	if tf.err != nil {
		cs.mu.Lock()
		if cs.latest == tf {
			cs.latest = nil // the next caller tries again
		}
		cs.mu.Unlock()
	}
	return tf, tf.err
}

// loadTreeFiles lists tf.commit's tree and reads its blobs, those prev
// holds taken from it.
func (r *Repo) loadTreeFiles(ctx context.Context, tf, prev *treeFiles) error {
	out, err := r.g.run(ctx, nil, "ls-tree", "-r", "-z", "--full-tree", tf.commit)
	if err != nil {
		return fmt.Errorf("list tree: %w", err)
	}
	if err := tf.parseListing(out); err != nil || tf.why != "" {
		return err
	}
	known := map[string][]byte{}
	if prev != nil {
		select {
		case <-prev.ready:
			for i, id := range prev.ids {
				if i < len(prev.blobs) {
					known[id] = prev.blobs[i]
				}
			}
		default:
		}
	}
	tf.blobs = make([][]byte, len(tf.ids))
	var missing []int
	var size int
	for i, id := range tf.ids {
		if b, ok := known[id]; ok {
			tf.blobs[i] = b
			size += len(b)
		} else {
			missing = append(missing, i)
		}
	}
	limit := maxCheckoutBlobs
	if r.checkout.maxBlobs > 0 {
		limit = r.checkout.maxBlobs
	}
	err = r.catBlobs(ctx, tf, missing, limit-size)
	if errors.Is(err, errTooLarge) {
		tf.why, tf.blobs, err = "tree larger than "+strconv.Itoa(limit)+" bytes", nil, nil
	}
	return err
}

// errTooLarge is returned by catBlobs for blobs larger than asked for.
var errTooLarge = errors.New("blobs too large")

// parseListing reads ls-tree -r -z output ("<mode> <type> <id>\t<path>\0"
// per file) into tf.
// A tree git would check out differently than a plain write of each
// blob (attributes, submodules, names git refuses) sets tf.why.
func (tf *treeFiles) parseListing(out []byte) error {
	index := map[string]int{}
	dirs := map[string]bool{}
	for rec := range bytes.SplitSeq(out, []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		head, p, ok := strings.Cut(string(rec), "\t")
		f := strings.Fields(head)
		if !ok || len(f) != 3 {
			return fmt.Errorf("list tree: %w: bad line %q", ErrBadObject, rec)
		}
		if f[1] == "commit" {
			tf.why = "submodule " + p
			return nil
		}
		mode, err := strconv.ParseUint(f[0], 8, 32)
		if err != nil || f[1] != "blob" || (mode != 0o100644 && mode != 0o100755 && mode != 0o120000) {
			return fmt.Errorf("list tree: %w: bad line %q", ErrBadObject, rec)
		}
		if why := checkoutPathWhy(p, uint32(mode)); why != "" {
			tf.why = why
			return nil
		}
		b, ok := index[f[2]]
		if !ok {
			b = len(tf.ids)
			index[f[2]] = b
			tf.ids = append(tf.ids, f[2])
		}
		tf.files = append(tf.files, treeFile{path: p, mode: uint32(mode), blob: b})
		for d := path.Dir(p); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	slices.SortFunc(tf.files, func(a, b treeFile) int { return strings.Compare(a.path, b.path) })
	for d := range dirs {
		tf.dirs = append(tf.dirs, d)
	}
	slices.Sort(tf.dirs) // a directory sorts before the paths it is a prefix of
	return nil
}

// checkoutPathWhy says why git must check out the file at p (mode
// mode) itself, or "" when writing it plainly is what git would do: no
// attributes file, and no name git refuses or treats specially (.git in
// any spelling a filesystem may fold to it, a symlinked .git* file,
// backslashes, empty, . and .. components).
func checkoutPathWhy(p string, mode uint32) string {
	if strings.ContainsRune(p, '\\') {
		return "path with a backslash " + p
	}
	for c := range strings.SplitSeq(p, "/") {
		lc := strings.ToLower(c)
		switch {
		case c == "" || c == "." || c == "..":
			return "bad path " + p
		case lc == ".gitattributes":
			return "attributes file " + p
		case strings.TrimRight(lc, " .") == ".git" || strings.HasPrefix(lc, "git~"):
			return "reserved name " + p
		}
	}
	if mode == 0o120000 && strings.HasPrefix(strings.ToLower(path.Base(p)), ".git") {
		return "symlinked " + p
	}
	return ""
}

// catBlobs reads the blobs tf.ids[i] for i in which into tf.blobs,
// through a `git cat-file --batch` of their own, every ID written at
// once while the answers are read; errTooLarge when they hold more than
// limit bytes.
func (r *Repo) catBlobs(ctx context.Context, tf *treeFiles, which []int, limit int) error {
	if len(which) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd, err := r.g.command(ctx, "cat-file", "--batch", "--buffer")
	if err != nil {
		return fmt.Errorf("read blobs: %w", err)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("read blobs: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("read blobs: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("read blobs: %w", err)
	}
	fed := make(chan struct{})
	go func() {
		defer close(fed)
		bw := bufio.NewWriterSize(in, 64<<10)
		for _, i := range which {
			bw.WriteString(tf.ids[i])
			bw.WriteByte('\n')
		}
		bw.Flush()
		in.Close()
	}()
	br := bufio.NewReaderSize(out, 256<<10)
	for _, i := range which {
		if err = readBatchBlob(br, tf.ids[i], &tf.blobs[i]); err != nil {
			break
		}
		if limit -= len(tf.blobs[i]); limit < 0 {
			err = errTooLarge
			break
		}
	}
	if err != nil {
		cancel() // cat-file is killed, so the feeder's writes end
	}
	<-fed
	if werr := cmd.Wait(); err == nil && werr != nil {
		err = werr
	}
	if errors.Is(err, errTooLarge) {
		return err
	}
	if err != nil {
		return fmt.Errorf("read blobs: %w", err)
	}
	return nil
}

// readBatchBlob reads cat-file --batch's answer for the blob id into dst.
func readBatchBlob(br *bufio.Reader, id string, dst *[]byte) error {
	head, err := br.ReadString('\n')
	if err != nil {
		return err
	}
	f := strings.Fields(head)
	if len(f) != 3 || f[0] != id || f[1] != "blob" {
		return fmt.Errorf("%w: cat-file answered %q for blob %s", ErrBadObject, strings.TrimSpace(head), id)
	}
	n, err := strconv.Atoi(f[2])
	if err != nil || n < 0 || n > maxCheckoutBlobs {
		return fmt.Errorf("%w: cat-file answered %q", ErrBadObject, strings.TrimSpace(head))
	}
	data := make([]byte, n+1) // the contents and a newline
	if _, err := io.ReadFull(br, data); err != nil {
		return err
	}
	*dst = data[:n]
	return nil
}

// rawID decodes a hex object ID.
func rawID(id string) ([]byte, error) {
	b, err := hex.DecodeString(id)
	if err != nil || (len(b) != 20 && len(b) != 32) {
		return nil, fmt.Errorf("%w: bad object ID %q", ErrBadObject, id)
	}
	return b, nil
}
