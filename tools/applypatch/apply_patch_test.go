package applypatch

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/tools"
)

// runPatch calls the apply_patch tool the way the executor does.
func runPatch(t *testing.T, s *tools.Session, patch string) tools.Result {
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
func patchFile(t *testing.T, s *tools.Session, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.Workspace.Root(), rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func patchExists(s *tools.Session, rel string) bool {
	_, err := os.Lstat(filepath.Join(s.Workspace.Root(), rel))
	return err == nil
}

// markRead records a file as read, as read_file would.
func patchMarkRead(t *testing.T, s *tools.Session, rel string) {
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
		if _, err := s.Reads.Check(s.Workspace, abs, rel); err != nil {
			t.Errorf("%s not recorded as read after the patch: %v", rel, err)
		}
	}
	for _, rel := range []string{"old/name.txt", "gone.txt"} {
		if s.Reads.WasRead(filepath.Join(s.Workspace.Root(), rel)) {
			t.Errorf("%s still recorded as read after it went away", rel)
		}
	}
	// app.go and name.txt were updated without a read: allowed, counted.
	if r.Metadata["blind"] != true {
		t.Errorf("metadata %v: want blind: true", r.Metadata)
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
	del := writeFile(t, s, "del.txt", "deleted then restored\n")
	if err := os.Chmod(del, 0o640); err != nil {
		t.Fatal(err)
	}
	patchMarkRead(t, s, "del.txt")
	r := runPatch(t, s, `*** Begin Patch
*** Update File: m.txt
-keep
+changed
 me
*** Delete File: del.txt
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
	if fi, err := os.Stat(del); err != nil || fi.Mode().Perm() != 0o640 || patchFile(t, s, "del.txt") != "deleted then restored\n" {
		t.Errorf("deleted file not restored with its content and mode: %v", err)
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
