package applypatch

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/tools"
)

func runPatchArgs(t *testing.T, s *tools.Session, args map[string]string) tools.Result {
	t.Helper()
	b, _ := json.Marshal(args)
	r, err := ApplyPatch().Run(t.Context(), s, b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// apply_patch takes its patch as input, as Codex's tool does; patch is
// another name for it; neither, or two different ones, is a clear error.
func TestApplyPatchInputArgument(t *testing.T) {
	if !strings.Contains(string(ApplyPatch().Spec().SchemaJSON()), `"input"`) {
		t.Fatalf("schema does not name input: %s", ApplyPatch().Spec().SchemaJSON())
	}
	s := newTestSession(t)
	add := "*** Begin Patch\n*** Add File: a.txt\n+one\n*** End Patch"
	if r := runPatchArgs(t, s, map[string]string{"input": add}); r.IsError || patchFile(t, s, "a.txt") != "one\n" {
		t.Fatalf("input: %+v", r)
	}
	if r := runPatchArgs(t, s, map[string]string{}); !r.IsError || !strings.Contains(r.Text, "give the patch as input") {
		t.Errorf("neither: %+v", r)
	}
	if r := runPatchArgs(t, s, map[string]string{"input": add, "patch": "*** Begin Patch\n*** End Patch"}); !r.IsError || !strings.Contains(r.Text, "give the patch once") {
		t.Errorf("both: %+v", r)
	}
}

// Hunk headers padded with whitespace are hunk headers, as Codex takes them.
func TestApplyPatchPaddedHunkHeaders(t *testing.T) {
	for _, header := range []string{"@@ ", "@@  ", "@@\t", "  @@", "\t@@ func f() {", "  @@ func f() {  "} {
		s := newTestSession(t)
		writeFile(t, s, "f.go", "func f() {\n\treturn 1\n}\n")
		patchMarkRead(t, s, "f.go")
		patch := "*** Begin Patch\n*** Update File: f.go\n" + header + "\n-\treturn 1\n+\treturn 2\n*** End Patch"
		r := runPatchArgs(t, s, map[string]string{"input": patch})
		if r.IsError || patchFile(t, s, "f.go") != "func f() {\n\treturn 2\n}\n" {
			t.Errorf("header %q: %s", header, r.Text)
		}
	}
}
