package patch

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// FuzzParsePatch holds the parser to three promises: it never panics; an
// error is a *patchError pointing at a line of the input; and a patch that
// parses renders to canonical text that parses back to the same patch and
// renders identically, with the header scan (TouchedPaths) naming exactly
// the paths the parser found. Applying the parsed hunks to a small file
// must not panic either.
func FuzzParsePatch(f *testing.F) {
	seeds := []string{
		"*** Begin Patch\n*** Add File: a.txt\n+hello\n+\n+world\n*** End Patch\n",
		"*** Begin Patch\n*** Update File: a.go\n*** Move to: b.go\n@@ func f() {\n ctx\n-old\n+new\n*** End of File\n*** Delete File: c\n*** End Patch",
		"apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: x\n line\n\n-y\n+z\n@@ -1,3 +1,3 @@ tail\n+q\nEOF",
		"\r\n*** Begin Patch\r\n*** Update File: x\r\n*** Move to: y\r\n*** End Patch\r\n",
		"*** Begin Patch\n*** Update File: x\n@@\n\t\n-a\n@@ @@ -2 +2 @@\n+b\n*** End Patch",
		"*** Begin Patch\n*** Add File: n\n+a\n\n\n+b\n\n*** End Patch",
		"*** Begin Patch\n*** Update File: x\n@@\n*** End of File\n*** End Patch",
		"*** Begin Patch\n*** Update File: x\n@@\n-a\n*** End of File\n+b\n*** End Patch",
		"*** Begin Patch\n*** Frobnicate File: x\n*** End Patch",
		"*** Begin Patch\n*** Add File:\n*** End Patch",
		"*** Begin Patch\n*** End Patch",
		"<<EOF\n*** Begin Patch\n*** Delete File: q\n*** End Patch\nEOF\n",
		"*** Begin Patch",
		"",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	file := SplitText("a\nctx\nold\nline\n\ny\nq\n").Lines
	f.Fuzz(func(t *testing.T, text string) {
		doc, err := Parse(text)
		if err != nil {
			var pe *patchError
			if !errors.As(err, &pe) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			if n := strings.Count(text, "\n") + 1; pe.line < 1 || pe.line > n {
				t.Fatalf("error names line %d of a %d-line patch: %v", pe.line, n, err)
			}
			return
		}
		if got, want := Paths(text), docPaths(doc); !slices.Equal(got, want) {
			t.Fatalf("TouchedPaths scan %q, parser %q", got, want)
		}
		r1 := doc.render()
		doc2, err := Parse(r1)
		if err != nil {
			t.Fatalf("rendered patch does not parse: %v\n%s", err, r1)
		}
		if !reflect.DeepEqual(withoutLines(doc), withoutLines(doc2)) {
			t.Fatalf("round trip changed the patch:\n%#v\n%#v", doc, doc2)
		}
		if r2 := doc2.render(); r2 != r1 {
			t.Fatalf("render is not stable:\n%s\n---\n%s", r1, r2)
		}
		for _, op := range doc.Ops {
			if op.Kind == OpUpdate {
				_, _ = Apply(slices.Clone(file), op.Hunks)
			}
		}
	})
}

// docPaths lists the paths of doc's operations, Move targets after their
// sources, as patchPaths should find them.
func docPaths(doc *Doc) []string {
	var out []string
	for _, op := range doc.Ops {
		out = append(out, op.Path)
		if op.MoveTo != "" {
			out = append(out, op.MoveTo)
		}
	}
	return out
}

// withoutLines copies doc with the patch line numbers zeroed, which differ
// between an input and its canonical rendering.
func withoutLines(doc *Doc) *Doc {
	out := &Doc{}
	for _, op := range doc.Ops {
		op.line = 0
		hs := make([]Hunk, len(op.Hunks))
		for i, h := range op.Hunks {
			h.line = 0
			hs[i] = h
		}
		if op.Hunks == nil {
			hs = nil
		}
		op.Hunks = hs
		out.Ops = append(out.Ops, op)
	}
	return out
}
