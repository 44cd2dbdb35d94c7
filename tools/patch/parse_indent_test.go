package patch

import (
	"slices"
	"testing"
)

// A file header indented by blanks is a header, as in Codex's parser:
// where a section starts, and after an added file's lines.
func TestIndentedFileHeaders(t *testing.T) {
	t.Parallel()
	text := "*** Begin Patch\n  *** Update File: foo.txt\n@@\n-old\n+new\n*** Add File: new.txt\n+hello\n    *** Delete File: gone.txt\n*** End Patch\n"
	doc, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, op := range doc.Ops {
		got = append(got, op.Path)
	}
	if want := []string{"foo.txt", "new.txt", "gone.txt"}; !slices.Equal(got, want) {
		t.Fatalf("paths %q, want %q", got, want)
	}
	if doc.Ops[0].Kind != OpUpdate || doc.Ops[1].Kind != OpAdd || doc.Ops[2].Kind != OpDelete {
		t.Errorf("kinds %v %v %v", doc.Ops[0].Kind, doc.Ops[1].Kind, doc.Ops[2].Kind)
	}
	if !slices.Equal(doc.Ops[1].Lines, []string{"hello"}) {
		t.Errorf("added lines %q", doc.Ops[1].Lines)
	}
	if p := Paths(text); !slices.Equal(p, got) {
		t.Errorf("Paths %q, want %q", p, got)
	}
}
