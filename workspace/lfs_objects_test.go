package workspace

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/messages"
)

// lfsObj is the git lfs object of content.
func lfsObj(content string) messages.LFSObject {
	sum := sha256.Sum256([]byte(content))
	return messages.LFSObject{OID: hex.EncodeToString(sum[:]), Size: int64(len(content))}
}

// An object stored from a stream is kept only when its bytes are those
// its oid and size name: a mismatch (other bytes, a short or a long
// stream) is refused with messages.ErrDigest and leaves nothing in the
// storage, its tmp directory included; a right one is readable as the
// pointer names it.
func TestStoreLFSChecksContentAgainstItsOID(t *testing.T) {
	root := newRepo(t, map[string]string{"a.txt": "a\n"})
	r := open(t, root)
	want := lfsObj("the content\n")
	for name, src := range map[string]string{"other": "evil content\n", "short": "the content", "long": "the content\nand more\n"} {
		err := r.StoreLFS(want, strings.NewReader(src), "a test")
		if !errors.Is(err, messages.ErrDigest) || !strings.Contains(err.Error(), want.OID) {
			t.Errorf("%s: %v, want a digest mismatch naming the oid", name, err)
		}
		if r.HasLFS(want) {
			t.Fatalf("%s: the object was stored", name)
		}
	}
	if left, _ := os.ReadDir(filepath.Join(root, ".git", "lfs", "tmp")); len(left) != 0 {
		t.Errorf("left in lfs/tmp: %v", left)
	}
	must(t, r.StoreLFS(want, strings.NewReader("the content\n"), "a test"))
	f, err := r.OpenLFS(want)
	must(t, err)
	got, _ := io.ReadAll(f)
	f.Close()
	if !bytes.Equal(got, []byte("the content\n")) {
		t.Errorf("stored %q", got)
	}
	if _, err := r.OpenLFS(lfsObj("never stored")); !errors.Is(err, ErrLFSMissing) {
		t.Errorf("a missing object: %v", err)
	}
}

// A symbolic link in the git lfs storage where an object's directory
// should be is not followed: the store fails and nothing is written
// where it points; reading through one fails too.
func TestStoreLFSFollowsNoSymlink(t *testing.T) {
	root := newRepo(t, map[string]string{"a.txt": "a\n"})
	r := open(t, root)
	outside := t.TempDir()
	obj := lfsObj("through a link\n")
	objects := filepath.Join(root, ".git", "lfs", "objects")
	must(t, os.MkdirAll(objects, 0o755))
	must(t, os.Symlink(outside, filepath.Join(objects, obj.OID[:2])))
	if err := r.StoreLFS(obj, strings.NewReader("through a link\n"), "a test"); err == nil {
		t.Fatal("stored through a symbolic link")
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("written through the link: %v", entries)
	}
	must(t, os.MkdirAll(filepath.Join(outside, obj.OID[2:4]), 0o755))
	must(t, os.WriteFile(filepath.Join(outside, obj.OID[2:4], obj.OID), []byte("through a link\n"), 0o644))
	if _, err := r.OpenLFS(obj); err == nil {
		t.Error("read through a symbolic link")
	}
}

// The pointers of a tree are its blobs in git lfs's pointer form; other
// small files (one that merely starts like a pointer, too) are not.
func TestLFSPointersOfATree(t *testing.T) {
	obj := lfsObj("content\n")
	ptr := "version https://git-lfs.github.com/spec/v1\noid sha256:" + obj.OID + "\nsize 8\n"
	root := newRepo(t, map[string]string{"p.bin": ptr, "d/q.bin": ptr, "plain.txt": "plain\n",
		"fake.txt": "version https://git-lfs.github.com/spec/v1\noid sha256:nothex\nsize 8\n"})
	r, snap := openSnap(t, root)
	ptrs, err := r.LFSPointers(t.Context(), snap.Tree, nil)
	must(t, err)
	if len(ptrs) != 2 || ptrs[0].Path != "d/q.bin" || ptrs[1].Path != "p.bin" || ptrs[0].LFSObject != obj {
		t.Errorf("pointers %+v", ptrs)
	}
}
