package applypatch

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/tools"
)

func TestApplyPatchPaths(t *testing.T) {
	t.Parallel()
	args, _ := json.Marshal(map[string]string{"patch": "*** Begin Patch\r\n*** Add File: a.txt\n+x\n*** Update File: b.txt\n*** Move to: c/d.txt\n@@\n-q\n*** Delete File: e.txt\n*** End Patch"})
	got := ApplyPatch().Paths(args)
	want := []string{"a.txt", "b.txt", "c/d.txt", "e.txt"}
	if !slices.Equal(got, want) {
		t.Errorf("Paths = %q, want %q", got, want)
	}
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

// Through the executor, two patches of one turn that touch the same file
// run in call order (TouchedPaths feeds its per-path scheduling).
func TestApplyPatchThroughExecutor(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	e := &tools.Executor{Tools: tools.NewRegistry(ApplyPatch()), Session: s}
	call := func(id, patch string) messages.ToolCall {
		args, _ := json.Marshal(map[string]string{"patch": patch})
		return messages.ToolCall{ID: id, Name: "apply_patch", Args: args}
	}
	var calls []messages.ToolCall
	calls = append(calls, call("c0", "*** Begin Patch\n*** Add File: seq.txt\n+0\n*** End Patch"))
	for i := 1; i <= 5; i++ {
		calls = append(calls, call(fmt.Sprintf("c%d", i), fmt.Sprintf("*** Begin Patch\n*** Update File: seq.txt\n@@\n %d\n+%d\n*** End of File\n*** End Patch", i-1, i)))
	}
	for i, r := range e.Run(t.Context(), calls) {
		if r.IsError {
			t.Errorf("call %d: %s", i, r.Text)
		}
	}
	if got := patchFile(t, s, "seq.txt"); got != "0\n1\n2\n3\n4\n5\n" {
		t.Errorf("seq.txt = %q: patches did not run in call order", got)
	}
}
