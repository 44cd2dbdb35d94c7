package applypatch

import "testing"

// A file header indented by whitespace applies, as Codex's parser allows
// ("  *** Update File: foo.txt").
func TestApplyPatchIndentedHeader(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	writeFile(t, s, "foo.txt", "one\ntwo\n")
	patchMarkRead(t, s, "foo.txt")
	r := runPatch(t, s, "*** Begin Patch\n  *** Update File: foo.txt\n@@\n one\n-two\n+three\n*** End Patch")
	if r.IsError {
		t.Fatalf("indented header refused: %s", r.Text)
	}
	if got := patchFile(t, s, "foo.txt"); got != "one\nthree\n" {
		t.Errorf("foo.txt = %q", got)
	}
}
