package workspace

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
)

// A changeset whose new blobs are over packOver travels as a pack, which
// derives the tree it names with its files; a pack that lacks the tree
// it names, or an object of it, is refused (ErrBadChangeset) and derives
// nothing.
func TestChangesWithBigFilesTravelAsAProvenPack(t *testing.T) {
	root := newRepo(t, map[string]string{"a.txt": "a\n", ".gitignore": ".troupe/\n"})
	r, snap := openSnap(t, root)
	w, err := r.NewWorktree(t.Context(), snap, "w")
	must(t, err)
	write(t, w.Dir(), map[string]string{"a.txt": "agent\n", "big.bin": strings.Repeat("big file line\n", packOver/14+1000)})
	cs, err := w.CaptureTree(t.Context())
	must(t, err)
	p, pack, err := w.SpoolChanges(t.Context(), t.TempDir(), cs)
	must(t, err)
	defer p.Remove()
	if !pack {
		t.Fatalf("a changeset of %d bytes of new blobs spooled as a patch", packOver)
	}
	f, err := p.Open()
	must(t, err)
	derived, err := r.DerivePack(t.Context(), snap, cs.Tree, f)
	f.Close()
	must(t, err)
	if derived.Tree != cs.Tree || len(derived.Files) != 2 || derived.Files[0].Path != "a.txt" || derived.Files[1].Path != "big.bin" {
		t.Errorf("derived %+v, want the tree %s changing a.txt and big.bin", derived, cs.Tree)
	}

	// A tree the pack does not hold (its ID computed, never written).
	fake, err := r.g.line(t.Context(), "hash-object", "-t", "blob", "--stdin")
	must(t, err)
	data, err := os.ReadFile(p.Path)
	must(t, err)
	if _, err := r.DerivePack(t.Context(), snap, fake, bytes.NewReader(data)); !errors.Is(err, ErrBadChangeset) {
		t.Errorf("a pack without the tree it names: %v, want ErrBadChangeset", err)
	}
	// A tree whose blob is nowhere.
	missing := strings.Repeat("1", len(snap.Tree))
	tree, err := r.g.run(t.Context(), []byte("100644 blob "+missing+"\tghost.txt\n"), "mktree", "--missing")
	must(t, err)
	id := strings.TrimSpace(string(tree))
	var pk bytes.Buffer
	cmd, err := r.g.command(t.Context(), "pack-objects", "--stdout", "-q")
	must(t, err)
	cmd.Stdin, cmd.Stdout = strings.NewReader(id+"\n"), &pk
	must(t, cmd.Run())
	if _, err := r.DerivePack(t.Context(), snap, id, &pk); !errors.Is(err, ErrBadChangeset) {
		t.Errorf("a pack lacking a blob of its tree: %v, want ErrBadChangeset", err)
	}
}
