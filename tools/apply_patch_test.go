package tools

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// runPatch calls the apply_patch tool the way the executor does.
func runPatch(t *testing.T, s *Session, patch string) Result {
	t.Helper()
	args, err := json.Marshal(map[string]string{"patch": patch})
	if err != nil {
		t.Fatal(err)
	}
	r, err := ApplyPatch().Run(t.Context(), s, args)
	if err != nil {
		t.Fatalf("apply_patch returned a Go error: %v", err)
	}
	return r
}

// readWS returns a workspace file's content, failing the test if absent.
func patchFile(t *testing.T, s *Session, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.Workspace.Root(), rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func patchExists(s *Session, rel string) bool {
	_, err := os.Lstat(filepath.Join(s.Workspace.Root(), rel))
	return err == nil
}

// markRead records a file as read, as read_file would.
func patchMarkRead(t *testing.T, s *Session, rel string) {
	t.Helper()
	abs := filepath.Join(s.Workspace.Root(), rel)
	b, err := os.ReadFile(abs)
	if err != nil {
		t.Fatal(err)
	}
	s.Reads.Record(abs, b)
}

func TestApplyPatchAllOperations(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	writeFile(t, s, "src/app.go", "package main\n\nfunc main() {\n\trun()\n}\n")
	writeFile(t, s, "old/name.txt", "alpha\nbeta\ngamma\n")
	writeFile(t, s, "gone.txt", "bye\n")
	patchMarkRead(t, s, "gone.txt")

	r := runPatch(t, s, `*** Begin Patch
*** Add File: docs/new.md
+# Title
+
+body
*** Update File: src/app.go
@@ func main() {
-	run()
+	if err := run(); err != nil {
+		panic(err)
+	}
 }
*** Update File: old/name.txt
*** Move to: renamed/name.txt
 alpha
-beta
+BETA
 gamma
*** Delete File: gone.txt
*** End Patch`)
	if r.IsError {
		t.Fatalf("unexpected error: %s", r.Text)
	}
	golden(t, "apply_patch/all_operations", r.Text)

	if got, want := patchFile(t, s, "docs/new.md"), "# Title\n\nbody\n"; got != want {
		t.Errorf("docs/new.md = %q, want %q", got, want)
	}
	if got, want := patchFile(t, s, "src/app.go"), "package main\n\nfunc main() {\n\tif err := run(); err != nil {\n\t\tpanic(err)\n\t}\n}\n"; got != want {
		t.Errorf("src/app.go = %q, want %q", got, want)
	}
	if got, want := patchFile(t, s, "renamed/name.txt"), "alpha\nBETA\ngamma\n"; got != want {
		t.Errorf("renamed/name.txt = %q, want %q", got, want)
	}
	if patchExists(s, "old/name.txt") || patchExists(s, "gone.txt") {
		t.Error("moved or deleted file still exists")
	}
	// Written files count as read: a later edit needs no re-read.
	for _, rel := range []string{"docs/new.md", "src/app.go", "renamed/name.txt"} {
		abs := filepath.Join(s.Workspace.Root(), rel)
		if err := s.Reads.Check(abs, rel); err != nil {
			t.Errorf("%s not recorded as read after the patch: %v", rel, err)
		}
	}
	for _, rel := range []string{"old/name.txt", "gone.txt"} {
		if s.Reads.WasRead(filepath.Join(s.Workspace.Root(), rel)) {
			t.Errorf("%s still recorded as read after it went away", rel)
		}
	}
	if got := r.Metadata["lines_added"]; got != 7 {
		t.Errorf("lines_added = %v, want 7 (3 added + 3 in app.go + 1 in name.txt)", got)
	}
}

func TestApplyPatchParseErrors(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"no_begin":       "*** Update File: a.txt\n@@\n-a\n+b\n*** End Patch",
		"no_end":         "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n",
		"empty":          "\n  \n",
		"no_operations":  "*** Begin Patch\n*** End Patch",
		"bad_header":     "*** Begin Patch\n*** Modify File: a.txt\n*** End Patch",
		"add_without_+":  "*** Begin Patch\n*** Add File: n.txt\n+one\ntwo\n*** End Patch",
		"bad_hunk_line":  "*** Begin Patch\n*** Update File: a.txt\n@@\n a\n*b\n*** End Patch",
		"update_no_hunk": "*** Begin Patch\n*** Update File: a.txt\n*** End Patch",
		"empty_hunk":     "*** Begin Patch\n*** Update File: a.txt\n@@ a\n@@\n-a\n*** End Patch",
		"missing_path":   "*** Begin Patch\n*** Delete File:   \n*** End Patch",
		"hunk_no_marker": "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n*** End of File\n+b\n*** End Patch",
	}
	for name, patch := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newTestSession(t)
			writeFile(t, s, "a.txt", "a\n")
			r := runPatch(t, s, patch)
			if !r.IsError {
				t.Fatalf("malformed patch accepted: %s", r.Text)
			}
			golden(t, "apply_patch/parse_"+name, r.Text)
			if got := patchFile(t, s, "a.txt"); got != "a\n" {
				t.Errorf("a.txt changed to %q by a malformed patch", got)
			}
		})
	}
}

// A patch whose second file fails leaves the first untouched.
func TestApplyPatchAtomicOnMismatch(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	writeFile(t, s, "one.txt", "1\n2\n3\n")
	writeFile(t, s, "two.txt", "x\ny\nz\n")
	r := runPatch(t, s, `*** Begin Patch
*** Add File: three.txt
+new
*** Update File: one.txt
@@
 1
-2
+two
 3
*** Update File: two.txt
@@
 x
-not in the file
+q
*** End Patch`)
	if !r.IsError {
		t.Fatalf("mismatching patch applied: %s", r.Text)
	}
	golden(t, "apply_patch/hunk_mismatch", r.Text)
	if got := patchFile(t, s, "one.txt"); got != "1\n2\n3\n" {
		t.Errorf("one.txt = %q; the failed patch must leave it untouched", got)
	}
	if patchExists(s, "three.txt") {
		t.Error("three.txt was created by a failed patch")
	}
}

// An I/O failure midway rolls back what was already written: here the
// second Add needs "n" to be a directory, but the first Add made it a file,
// which only the write phase discovers.
func TestApplyPatchRollbackOnWriteFailure(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	writeFile(t, s, "m.txt", "keep\nme\n")
	r := runPatch(t, s, `*** Begin Patch
*** Update File: m.txt
-keep
+changed
 me
*** Add File: d/e/n
+file
*** Add File: d/e/n/x
+inner
*** End Patch`)
	if !r.IsError {
		t.Fatalf("patch applied: %s", r.Text)
	}
	golden(t, "apply_patch/rollback", r.Text)
	if got := patchFile(t, s, "m.txt"); got != "keep\nme\n" {
		t.Errorf("m.txt = %q, want its original content after rollback", got)
	}
	if patchExists(s, "d") {
		t.Error("directory d created by the failed patch was not removed")
	}
	if s.Reads.WasRead(filepath.Join(s.Workspace.Root(), "m.txt")) {
		t.Error("a rolled-back write was recorded as read")
	}
}

func TestApplyPatchKeepsCRLF(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	writeFile(t, s, "win.txt", "one\r\ntwo\r\nthree\r\n")
	r := runPatch(t, s, "*** Begin Patch\n*** Update File: win.txt\n@@\n one\n-two\n+2\n+2b\n three\n*** End Patch")
	if r.IsError {
		t.Fatal(r.Text)
	}
	if got, want := patchFile(t, s, "win.txt"), "one\r\n2\r\n2b\r\nthree\r\n"; got != want {
		t.Errorf("win.txt = %q, want %q", got, want)
	}
}

func TestApplyPatchKeepsModes(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	script := writeFile(t, s, "run.sh", "#!/bin/sh\necho hi\n")
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	private := writeFile(t, s, "private.txt", "a\n")
	if err := os.Chmod(private, 0o600); err != nil {
		t.Fatal(err)
	}
	r := runPatch(t, s, `*** Begin Patch
*** Update File: run.sh
*** Move to: bin/run.sh
 #!/bin/sh
-echo hi
+echo hello
*** Update File: private.txt
-a
+b
*** End Patch`)
	if r.IsError {
		t.Fatal(r.Text)
	}
	golden(t, "apply_patch/move", r.Text)
	for rel, want := range map[string]os.FileMode{"bin/run.sh": 0o755, "private.txt": 0o600} {
		fi, err := os.Stat(filepath.Join(s.Workspace.Root(), rel))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s mode = %v, want %v", rel, fi.Mode().Perm(), want)
		}
	}
	if patchExists(s, "run.sh") {
		t.Error("run.sh still exists after the move")
	}
}

func TestApplyPatchReadBeforeOverwriteOrDelete(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	writeFile(t, s, "x.txt", "old\n")
	writeFile(t, s, "y.txt", "why\n")

	del := "*** Begin Patch\n*** Delete File: x.txt\n*** End Patch"
	add := "*** Begin Patch\n*** Add File: y.txt\n+replaced\n*** End Patch"
	r := runPatch(t, s, del)
	golden(t, "apply_patch/delete_needs_read", r.Text)
	r2 := runPatch(t, s, add)
	golden(t, "apply_patch/add_over_existing_needs_read", r2.Text)
	if !r.IsError || !r2.IsError || !patchExists(s, "x.txt") || patchFile(t, s, "y.txt") != "why\n" {
		t.Fatal("delete or overwrite of an unread file went through")
	}

	// A read that went stale (the file changed since) does not count.
	patchMarkRead(t, s, "x.txt")
	writeFile(t, s, "x.txt", "changed behind your back\n")
	if r := runPatch(t, s, del); !r.IsError || !strings.Contains(r.Text, "changed on disk") {
		t.Fatalf("delete after a stale read: %s", r.Text)
	}

	patchMarkRead(t, s, "x.txt")
	patchMarkRead(t, s, "y.txt")
	if r := runPatch(t, s, del); r.IsError || r.Text != "D x.txt" {
		t.Fatalf("delete after read: %s", r.Text)
	}
	if r := runPatch(t, s, add); r.IsError || r.Text != "A y.txt" {
		t.Fatalf("add over a read file: %s", r.Text)
	}
	if patchExists(s, "x.txt") || patchFile(t, s, "y.txt") != "replaced\n" {
		t.Error("delete or overwrite after a read did not happen")
	}
	// Update needs no read: its context lines prove the model knows the file.
	writeFile(t, s, "z.txt", "z\n")
	if r := runPatch(t, s, "*** Begin Patch\n*** Update File: z.txt\n@@\n-z\n+zz\n*** End Patch"); r.IsError {
		t.Fatalf("update of an unread file refused: %s", r.Text)
	}
}

func TestApplyPatchPaths(t *testing.T) {
	t.Parallel()
	args, _ := json.Marshal(map[string]string{"patch": "*** Begin Patch\r\n*** Add File: a.txt\n+x\n*** Update File: b.txt\n*** Move to: c/d.txt\n@@\n-q\n*** Delete File: e.txt\n*** End Patch"})
	got := ApplyPatch().Paths(args)
	want := []string{"a.txt", "b.txt", "c/d.txt", "e.txt"}
	if !slices.Equal(got, want) {
		t.Errorf("Paths = %q, want %q", got, want)
	}
}

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

func TestApplyPatchConfinement(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	victim := filepath.Join(outside, "victim.txt")
	if err := os.WriteFile(victim, []byte("safe\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		"dotdot add":        "*** Begin Patch\n*** Add File: ../escape.txt\n+x\n*** End Patch",
		"absolute update":   "*** Begin Patch\n*** Update File: " + victim + "\n@@\n-safe\n+owned\n*** End Patch",
		"absolute delete":   "*** Begin Patch\n*** Delete File: " + victim + "\n*** End Patch",
		"symlink update":    "*** Begin Patch\n*** Update File: link.txt\n@@\n-safe\n+owned\n*** End Patch",
		"symlinked dir add": "*** Begin Patch\n*** Add File: outdir/new.txt\n+x\n*** End Patch",
		"move outside":      "*** Begin Patch\n*** Update File: in.txt\n*** Move to: ../moved.txt\n@@\n-in\n+out\n*** End Patch",
	}
	for name, patch := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newTestSession(t)
			writeFile(t, s, "in.txt", "in\n")
			root := s.Workspace.Root()
			if err := os.Symlink(victim, filepath.Join(root, "link.txt")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, filepath.Join(root, "outdir")); err != nil {
				t.Fatal(err)
			}
			s.Reads.Record(victim, []byte("safe\n")) // even a "read" does not open the door
			r := runPatch(t, s, patch)
			if !r.IsError || !strings.Contains(r.Text, "outside the workspace") {
				t.Fatalf("want a confinement error, got: %s", r.Text)
			}
			if b, err := os.ReadFile(victim); err != nil || string(b) != "safe\n" {
				t.Errorf("victim outside the workspace touched: %q, %v", b, err)
			}
			for _, p := range []string{filepath.Join(outside, "new.txt"), filepath.Join(filepath.Dir(root), "escape.txt"), filepath.Join(filepath.Dir(root), "moved.txt")} {
				if _, err := os.Stat(p); err == nil {
					t.Errorf("%s created outside the workspace", p)
				}
			}
			if patchFile(t, s, "in.txt") != "in\n" {
				t.Error("in.txt changed by a refused patch")
			}
		})
	}
}

func TestApplyPatchFileErrors(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"update_missing":   "*** Begin Patch\n*** Update File: nope.txt\n@@\n-a\n+b\n*** End Patch",
		"delete_missing":   "*** Begin Patch\n*** Delete File: nope.txt\n*** End Patch",
		"update_binary":    "*** Begin Patch\n*** Update File: bin.dat\n@@\n-a\n+b\n*** End Patch",
		"update_dir":       "*** Begin Patch\n*** Update File: dir\n@@\n-a\n+b\n*** End Patch",
		"move_onto_unread": "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b.txt\n@@\n-a\n+A\n*** End Patch",
		"move_symlink":     "*** Begin Patch\n*** Update File: link\n*** Move to: c.txt\n*** End Patch",
		"add_under_file":   "*** Begin Patch\n*** Add File: a.txt/inner.txt\n+x\n*** End Patch",
	}
	for name, patch := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newTestSession(t)
			writeFile(t, s, "a.txt", "a\n")
			writeFile(t, s, "b.txt", "b\n")
			writeFile(t, s, "bin.dat", "a\x00\n")
			writeFile(t, s, "dir/x", "x\n")
			if err := os.Symlink("a.txt", filepath.Join(s.Workspace.Root(), "link")); err != nil {
				t.Fatal(err)
			}
			r := runPatch(t, s, patch)
			if !r.IsError {
				t.Fatalf("accepted: %s", r.Text)
			}
			golden(t, "apply_patch/file_"+name, r.Text)
			if patchFile(t, s, "a.txt") != "a\n" || patchFile(t, s, "b.txt") != "b\n" {
				t.Error("a refused patch changed a file")
			}
		})
	}
}

// Deleting a symbolic link removes the link, not the file it points to.
func TestApplyPatchDeletesSymlinkItself(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	writeFile(t, s, "real.txt", "content\n")
	if err := os.Symlink("real.txt", filepath.Join(s.Workspace.Root(), "alias.txt")); err != nil {
		t.Fatal(err)
	}
	r := runPatch(t, s, "*** Begin Patch\n*** Delete File: alias.txt\n*** End Patch")
	if r.IsError || r.Text != "D alias.txt" {
		t.Fatalf("delete link: %s", r.Text)
	}
	if patchExists(s, "alias.txt") || patchFile(t, s, "real.txt") != "content\n" {
		t.Error("the link survived or its target was harmed")
	}
}

// Several operations on one file in one patch apply in order.
func TestApplyPatchSameFileTwice(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	r := runPatch(t, s, `*** Begin Patch
*** Add File: n.txt
+one
+two
*** Update File: n.txt
@@
 one
-two
+2
*** Update File: n.txt
*** Move to: m.txt
@@
-one
+1
*** End Patch`)
	if r.IsError {
		t.Fatal(r.Text)
	}
	golden(t, "apply_patch/same_file_twice", r.Text)
	if patchExists(s, "n.txt") || patchFile(t, s, "m.txt") != "1\n2\n" {
		t.Errorf("m.txt = %q", patchFile(t, s, "m.txt"))
	}
}

func BenchmarkApplyPatch(b *testing.B) {
	ws, err := NewWorkspace(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	s := NewSession("bench", ws, Config{DataDir: b.TempDir()})
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
