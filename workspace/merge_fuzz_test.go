package workspace

import (
	"context"
	"testing"
)

// fuzzVersion is a version of data whose kind kind picks: absent,
// a file, an executable file or (with contents) a symlink.
func fuzzVersion(kind byte, data []byte) version {
	switch kind % 4 {
	case 0:
		return version{}
	case 1:
		return version{mode: "100755", data: data}
	case 2:
		if len(data) > 0 {
			return version{mode: "120000", data: data}
		}
	}
	return version{mode: "100644", data: data}
}

// FuzzMergeAgreesWithGit: the Go merge's decision for one path (keep
// ours, take a version, or conflict) is git merge-tree --write-tree's,
// whatever the three versions: contents, modes, symlinks, absence.
func FuzzMergeAgreesWithGit(f *testing.F) {
	needGit(f)
	text := "1\n2\n3\n4\n5\n6\n"
	f.Add([]byte(text), []byte("1 ours\n2\n3\n4\n5\n6\n"), []byte("1\n2\n3\n4\n5\n6 theirs\n"), byte(3), byte(3), byte(3))
	f.Add([]byte(text), []byte("1 ours\n2\n3\n4\n5\n6\n"), []byte("1 theirs\n2\n3\n4\n5\n6\n"), byte(3), byte(3), byte(3))
	f.Add([]byte("a\r\nb\r\n"), []byte("a\r\nb\r\nc\r\n"), []byte("z\r\na\r\nb\r\n"), byte(3), byte(1), byte(3))
	f.Add([]byte("\x00bin"), []byte("\x00bin"), []byte("\x00bin2"), byte(3), byte(1), byte(3))
	f.Add([]byte("t"), []byte("t"), []byte("u"), byte(2), byte(3), byte(2))
	f.Add([]byte(text), []byte(""), []byte("x\n"), byte(3), byte(0), byte(3))
	root := newRepo(f, map[string]string{"keep": "k\n"})
	r := open(f, root)
	f.Cleanup(func() { _ = r.Close(context.Background()) })
	scratch := f.TempDir()
	f.Fuzz(func(t *testing.T, b, o, th []byte, kb, ko, kt byte) {
		if len(b)+len(o)+len(th) > 4096 {
			return
		}
		c := mergeCase{path: "p", base: fuzzVersion(kb, b), ours: fuzzVersion(ko, o), theirs: fuzzVersion(kt, th)}
		ref := gitMergeTree(t, scratch, []mergeCase{c})
		ch, reason, err := r.mergeClean(t.Context(), c.path, c.ours, c.base, c.theirs, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, conflict := c.ours, reason != ""
		if ch != nil {
			got = ch.to
		}
		if conflict != ref.conflicts["p"] {
			t.Fatalf("Go conflict %v (%s), git %v\n  base   %s\n  ours   %s\n  theirs %s", conflict, reason, ref.conflicts["p"],
				c.base.describe(), c.ours.describe(), c.theirs.describe())
		}
		want, wok := ref.result["p"]
		if !conflict && (got.exists() != wok || (wok && [2]string{got.mode, blobID(got.data)} != want)) {
			t.Fatalf("Go merged %s, git %v (present %v)\n  base   %s\n  ours   %s\n  theirs %s", got.describe(), want, wok,
				c.base.describe(), c.ours.describe(), c.theirs.describe())
		}
		batched(t, r, c, ch, conflict)
	})
}

// batched checks that merging c twice in one textBatch (one git
// merge-tree for both) decides as merging it alone did: ch, conflict.
func batched(t *testing.T, r *Repo, c mergeCase, ch *change, conflict bool) {
	t.Helper()
	var texts textBatch
	var plan []change
	for _, p := range []string{"p", "q"} {
		bc, reason, err := r.mergeClean(t.Context(), p, c.ours, c.base, c.theirs, &texts)
		if err != nil {
			t.Fatal(err)
		}
		if reason != "" || bc == nil {
			return // decided without a content merge: as above
		}
		plan = append(plan, *bc)
	}
	var m merged
	plan, err := r.mergeTexts(t.Context(), nil, &texts, plan, &m, 20)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case conflict != (len(m.conflicts) == 2) || (!conflict && len(plan) != 2):
		t.Fatalf("batched: conflicts %v, plan %d; alone: conflict %v", m.conflicts, len(plan), conflict)
	case !conflict && (!plan[0].to.equal(ch.to) || !plan[1].to.equal(ch.to)):
		t.Fatalf("batched merged %s and %s, alone %s", plan[0].to.describe(), plan[1].to.describe(), ch.to.describe())
	}
}
