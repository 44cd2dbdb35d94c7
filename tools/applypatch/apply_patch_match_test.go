package applypatch

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/tools"
)

func TestApplyPatchTolerance(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, file, patch, want string
	}{{
		name:  "trailing whitespace in the file",
		file:  "a := 1   \nb := 2\t\nc := 3\n",
		patch: "*** Begin Patch\n*** Update File: f\n@@\n a := 1\n-b := 2\n+b := 20\n c := 3\n*** End Patch",
		want:  "a := 1   \nb := 20\nc := 3\n",
	}, {
		name:  "indentation differs",
		file:  "func f() {\n\t\treturn 1\n}\n",
		patch: "*** Begin Patch\n*** Update File: f\n@@\n func f() {\n-    return 1\n+\t\treturn 2\n }\n*** End Patch",
		want:  "func f() {\n\t\treturn 2\n}\n",
	}, {
		name:  "typographic punctuation",
		file:  "say(\u201chello\u201d) \u2014 it\u2019s\nend\n",
		patch: "*** Begin Patch\n*** Update File: f\n@@\n say(\"hello\") - it's\n-end\n+END\n*** End Patch",
		want:  "say(\u201chello\u201d) \u2014 it\u2019s\nEND\n",
	}, {
		name:  "blank context line without its space",
		file:  "one\n\ntwo\n",
		patch: "*** Begin Patch\n*** Update File: f\n@@\n one\n\n-two\n+TWO\n*** End Patch",
		want:  "one\n\nTWO\n",
	}, {
		name:  "heredoc wrapper and surrounding blank lines",
		file:  "x\n",
		patch: "\n\napply_patch <<'EOF'\n*** Begin Patch\n*** Update File: f\n@@\n-x\n+y\n*** End Patch\nEOF\n\n",
		want:  "y\n",
	}, {
		name:  "CRLF patch text",
		file:  "x\ny\n",
		patch: "*** Begin Patch\r\n*** Update File: f\r\n@@\r\n x\r\n-y\r\n+z\r\n*** End Patch\r\n",
		want:  "x\nz\n",
	}, {
		name:  "unified diff range after @@",
		file:  "a\nb\n",
		patch: "*** Begin Patch\n*** Update File: f\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n*** End Patch",
		want:  "a\nc\n",
	}, {
		name:  "trailing blank context lines beyond the file",
		file:  "a\nb\n",
		patch: "*** Begin Patch\n*** Update File: f\n@@\n a\n-b\n+c\n\n\n*** End Patch",
		want:  "a\nc\n",
	}, {
		name:  "no final newline is kept",
		file:  "a\nb",
		patch: "*** Begin Patch\n*** Update File: f\n@@\n-a\n+A\n b\n*** End Patch",
		want:  "A\nb",
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newTestSession(t)
			writeFile(t, s, "f", c.file)
			r := runPatch(t, s, c.patch)
			if r.IsError {
				t.Fatal(r.Text)
			}
			if got := patchFile(t, s, "f"); got != c.want {
				t.Errorf("f = %q, want %q", got, c.want)
			}
		})
	}
}

// Hunks are located by context searching forward; "@@ line" and
// "*** End of File" pick among repeated lines.
func TestApplyPatchLocatesHunks(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	file := "func a() {\n\treturn nil\n}\n\nfunc b() {\n\treturn nil\n}\n\nfunc c() {\n\treturn nil\n}\n"
	writeFile(t, s, "g.go", file)
	r := runPatch(t, s, `*** Begin Patch
*** Update File: g.go
@@ func b() {
-	return nil
+	return errB
@@
-	return nil
+	return errC
 }
*** End of File
@@
+// appended
*** End Patch`)
	if r.IsError {
		t.Fatal(r.Text)
	}
	want := "func a() {\n\treturn nil\n}\n\nfunc b() {\n\treturn errB\n}\n\nfunc c() {\n\treturn errC\n}\n// appended\n"
	if got := patchFile(t, s, "g.go"); got != want {
		t.Errorf("g.go =\n%s\nwant\n%s", got, want)
	}

	// Hunks out of file order do not match: each searches after the last.
	writeFile(t, s, "h.txt", "1\n2\n3\n")
	r = runPatch(t, s, "*** Begin Patch\n*** Update File: h.txt\n@@\n-3\n+three\n@@\n-1\n+one\n*** End Patch")
	if !r.IsError || !strings.Contains(r.Text, `hunk 2 (at "1")`) {
		t.Errorf("out-of-order hunks: %s", r.Text)
	}
	// A "@@" line that is not in the file is named in the error.
	r = runPatch(t, s, "*** Begin Patch\n*** Update File: h.txt\n@@ func missing() {\n-1\n+one\n*** End Patch")
	golden(t, "apply_patch/header_not_found", r.Text)
}

func BenchmarkApplyPatch(b *testing.B) {
	ws, err := tools.NewWorkspace(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	s := tools.NewSession("bench", ws, tools.Config{DataDir: b.TempDir()})
	var file, patch strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&file, "line %d of a longer source file\n", i)
	}
	patch.WriteString("*** Begin Patch\n*** Update File: big.txt\n")
	for i := 100; i < 2000; i += 200 {
		fmt.Fprintf(&patch, "@@\n line %d of a longer source file\n-line %d of a longer source file\n+changed %d\n line %d of a longer source file\n", i, i+1, i+1, i+2)
	}
	patch.WriteString("*** End Patch\n")
	args, _ := json.Marshal(map[string]string{"patch": patch.String()})
	path := filepath.Join(ws.Root(), "big.txt")
	tool := ApplyPatch()
	b.ReportAllocs()
	for b.Loop() {
		if err := os.WriteFile(path, []byte(file.String()), 0o644); err != nil {
			b.Fatal(err)
		}
		r, err := tool.Run(b.Context(), s, args)
		if err != nil || r.IsError {
			b.Fatalf("%v %s", err, r.Text)
		}
	}
}
