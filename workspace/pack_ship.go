package workspace

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/troupe-ai/troupe/messages"
)

// Changesets as packs. A changeset that travels (a node's, home to its
// requester) whose new blobs are big goes as a git pack of the objects
// of its tree its snapshot lacks, not as a patch: git's binary patch of a
// big file costs git minutes and gigabytes (a delta search and base85 on
// both sides), a pack of it a stream (no delta search, big blobs streamed
// by pack-objects and index-pack alike). The requester takes the pack
// into its object store (index-pack --strict), checks that every object
// of the tree the changeset names is there, and derives the files from
// the snapshot's tree to that one: the tree's ID is its content's hash,
// so the end state is the named tree, nothing else.

// packOver is the most bytes of new blobs a travelling changeset
// carries as a patch; beyond it, a pack.
const packOver = 8 << 20

// bigBlob is git's core.bigFileThreshold for packing and unpacking a
// travelling changeset: blobs over it are streamed, never deltified;
// zlib at its fastest (a big file is most often incompressible).
const bigBlob = "-c core.bigFileThreshold=1m -c pack.compression=1"

// SpoolChanges spools what carries cs (the worktree's changeset of
// CaptureTree) to dir/spool: its patch, or, when its new blobs are more
// than packOver bytes, a pack of its tree's objects the snapshot lacks
// (pack true).
func (w *Worktree) SpoolChanges(ctx context.Context, dir string, cs messages.Changeset) (PatchFile, bool, error) {
	n, err := newBlobBytes(ctx, w.repo.g, w.snap.Tree, cs.Tree)
	if err != nil {
		return PatchFile{}, false, fmt.Errorf("spool the changes: %w", err)
	}
	if n <= packOver {
		p, err := w.SpoolPatch(ctx, dir, cs)
		return p, false, err
	}
	p, err := SpoolPatch(dir, func(out io.Writer) error { return writePack(ctx, w.repo.g, w.snap.Tree, cs.Tree, out) })
	return p, true, err
}

// newBlobBytes is the size of the blobs tree b holds and tree a lacks.
func newBlobBytes(ctx context.Context, g git, a, b string) (int64, error) {
	if b == "" || a == b {
		return 0, nil
	}
	out, err := g.run(ctx, nil, "diff-tree", "-r", "-z", "--no-renames", "--raw", a, b)
	if err != nil {
		return 0, err
	}
	var ids bytes.Buffer
	for _, rec := range bytes.Split(out, []byte{0}) {
		if len(rec) > 0 && rec[0] == ':' {
			if f := bytes.Fields(rec); len(f) >= 5 && string(f[4]) != "D" && !bytes.HasPrefix(f[1], []byte("160")) {
				ids.Write(f[3])
				ids.WriteByte('\n')
			}
		}
	}
	if ids.Len() == 0 {
		return 0, nil
	}
	sizes, err := g.run(ctx, ids.Bytes(), "cat-file", "--batch-check=%(objectsize)")
	if err != nil {
		return 0, err
	}
	var n int64
	for _, l := range strings.Fields(string(sizes)) {
		k, _ := strconv.ParseInt(l, 10, 64)
		n += k
	}
	return n, nil
}

// writePack writes to w a pack of the objects of tree b that tree a
// lacks, streaming (no delta search; big blobs streamed).
func writePack(ctx context.Context, g git, a, b string, w io.Writer) error {
	g.conf = append(append([]string(nil), g.conf...), strings.Fields(bigBlob)...)
	cmd, err := g.command(ctx, "pack-objects", "--revs", "--stdout", "--window=0", "-q")
	if err != nil {
		return err
	}
	var stderr strings.Builder
	cmd.Stdin = strings.NewReader(b + "\n^" + a + "\n")
	cmd.Stdout, cmd.Stderr = w, &limitedWriter{w: &stderr, n: 4 << 10}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("git pack-objects %.12s ^%.12s: %w: %s", b, a, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// DerivePack is Derive of a changeset that came as a pack (read from
// pack) naming tree as its end state: the pack's objects are taken into
// this repository's store (git index-pack --strict: well-formed objects
// only), every object of tree snap's tree lacks must then be there, and
// the changeset is the one from snap's tree to tree (carrying no patch,
// like one of CaptureTree). A pack that does not make tree is
// ErrBadChangeset.
func (r *Repo) DerivePack(ctx context.Context, snap Snapshot, tree string, pack io.Reader) (messages.Changeset, error) {
	cs, err := r.derive(ctx, snap, true, nil, false)
	if err != nil {
		return cs, err
	}
	g := r.g
	g.conf = append(append([]string(nil), g.conf...), strings.Fields(bigBlob)...)
	if err := g.runFrom(ctx, pack, "index-pack", "--stdin", "--strict"); err != nil {
		return cs, fmt.Errorf("derive changes: %w: %w", ErrBadChangeset, err)
	}
	if err := r.complete(ctx, snap.Tree, tree); err != nil {
		return cs, fmt.Errorf("derive changes: %w: %w", ErrBadChangeset, err)
	}
	diff, err := diffTrees(ctx, r.g, snap.Tree, tree, false)
	if err != nil {
		return cs, fmt.Errorf("derive changes: %w", err)
	}
	cs.Tree, cs.Files = tree, diff.Files
	return cs, nil
}

// complete says whether every object of tree b that tree a lacks is in
// the store (an error naming the first missing one otherwise).
func (r *Repo) complete(ctx context.Context, a, b string) error {
	if _, err := r.g.line(ctx, "cat-file", "-e", "--end-of-options", b+"^{tree}"); err != nil {
		return fmt.Errorf("the pack lacks the tree %.12s it names", b)
	}
	list, err := r.g.run(ctx, nil, "rev-list", "--objects", "--end-of-options", b, "^"+a)
	if err != nil {
		return err
	}
	var ids bytes.Buffer
	for _, l := range strings.Split(string(list), "\n") {
		if id, _, _ := strings.Cut(l, " "); id != "" {
			ids.WriteString(id + "\n")
		}
	}
	out, err := r.g.run(ctx, ids.Bytes(), "cat-file", "--batch-check=%(objectname) %(objecttype)")
	if err != nil {
		return err
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasSuffix(l, " missing") {
			return fmt.Errorf("the pack lacks object %.12s of the tree %.12s", l, b)
		}
	}
	return nil
}

// bigLand reports whether a land of tree theirs over base journals
// the trees rather than the patch (the changeset carries none, git
// would make it): more than packOver bytes of new blobs, whose binary
// diff would cost git more than the land itself. It reads the trees and
// the sizes through the Repo's object reader: no git process is started
// for it (Apply asks while it holds the repository's lock, once per
// changeset).
func (r *Repo) bigLand(ctx context.Context, base, theirs string) bool {
	if theirs == "" || base == theirs {
		return false
	}
	es, err := r.changedEntries(ctx, base, theirs)
	if err != nil {
		return false
	}
	var n int64
	for _, e := range es {
		if e.newBlob == "" || e.newMode == "160000" {
			continue
		}
		k, err := r.objects().size(ctx, e.newBlob)
		if err != nil {
			return false
		}
		if n += k; n > packOver {
			return true
		}
	}
	return false
}
