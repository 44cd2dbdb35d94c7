package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `tools call --json` shows a file tool's diff in its metadata, while the
// text stays the confirmation the model reads; --script runs a read, an
// edit and a ranged read in one session.
func TestToolsCallShowsDiffsAndRanges(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("one\ntwo\nthree\nfour\nfive\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCLI(t, "tools", "call", "write_file", `{"path":"new/b.txt","content":"hello\n"}`, "--workspace", ws, "--json")
	var res struct {
		Text     string         `json:"text"`
		IsError  bool           `json:"is_error"`
		Metadata map[string]any `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 {
		t.Fatalf("exit %d %v: %s", code, err, out)
	}
	if res.Text != "Wrote 1 lines to new/b.txt" || res.Metadata["diff"] != "--- /dev/null\n+++ b/new/b.txt\n@@ -0,0 +1 @@\n+hello\n" ||
		res.Metadata["lines_added"] != 1.0 || res.Metadata["lines_removed"] != 0.0 {
		t.Errorf("write_file: %+v", res)
	}
	// One call per session: an edit of a file not read in it is a blind
	// write, refused.
	code, out, _ = runCLI(t, "tools", "call", "edit_file", `{"path":"a.txt","old_string":"two","new_string":"2"}`, "--workspace", ws, "--json")
	res.Metadata = nil
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 1 || !res.IsError || res.Metadata["blind"] != true {
		t.Errorf("blind edit: exit %d %+v", code, res)
	}

	script := filepath.Join(t.TempDir(), "s.jsonl")
	lines := []string{
		`{"name":"read_file","args":{"path":"a.txt","ranges":[[4,5],[1,1]]}}`,
		`{"name":"edit_file","args":{"path":"a.txt","old_string":"two","new_string":"2"}}`,
		`{"name":"read_file","args":{"path":"a.txt","start_line":2,"end_line":3}}`,
		`{"name":"read_file","args":{"path":"a.txt","start_line":3,"offset":2}}`,
	}
	if err := os.WriteFile(script, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runCLI(t, "tools", "call", "--script", script, "--workspace", ws)
	want := "=== 1 read_file\nL1: one\n...\nL4: four\nL5: five\n" +
		"=== 2 edit_file\nEdited a.txt: replaced 1 occurrence(s) (lines 2-2)\n" +
		"=== 3 read_file\nL2: 2\nL3: three\n[truncated: 5 total lines in file; use offset=4 to continue]\n" +
		"=== 4 read_file\ngive start_line or offset, not both: start_line is another name for offset (got start_line=3, offset=2)\n"
	if code != 1 || out != want {
		t.Errorf("exit %d\n%s\nwant\n%s", code, out, want)
	}
}
