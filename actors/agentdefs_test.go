package actors

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/tools/builtin"
)

func TestParseAgentDef(t *testing.T) {
	t.Parallel()
	k, err := ParseAgentDef([]byte("---\nname: reviewer\ndescription: Reviews diffs for bugs\ntools: Read, Grep, Glob\nmodel: haiku\n---\nYou review code.\nBe terse.\n"))
	if err != nil {
		t.Fatal(err)
	}
	if k.Name != "reviewer" || k.ModelRole != llm.RoleCheap || !k.ReadOnly || k.MayDelegate {
		t.Errorf("kind %+v", k)
	}
	if !slices.Equal(k.Tools, []string{"find_files", "grep", "read_file", "think"}) {
		t.Errorf("tools %v", k.Tools)
	}
	if k.Prompt != "You review code.\nBe terse." {
		t.Errorf("prompt %q", k.Prompt)
	}
	k, err = ParseAgentDef([]byte("---\r\nname: fixer\r\ntools: [read_file, edit_file, shell]\r\nmodel: gpt-4.1\r\n---\r\nFix it.\r\n"))
	if err != nil || k.Model != "gpt-4.1" || k.ReadOnly || !slices.Contains(k.Tools, "shell") {
		t.Errorf("fixer %+v %v", k, err)
	}
	k, err = ParseAgentDef([]byte("---\nname: all\n---\nbody"))
	if err != nil || !slices.Equal(k.Tools, builtin.ForKind(KindWorker)) {
		t.Errorf("no tools field: %v %v", k.Tools, err)
	}
	for body, want := range map[string]string{
		"name: x\n":                          "no front matter",
		"---\nname: x\n":                     "not closed",
		"---\ndescription: d\n---\n":         "name is required",
		"---\nname: two words\n---\n":        "must be one word",
		"---\nname: x\ntools: {a: 1}\n---\n": "tools must be a list",
		"---\nname: [\n---\n":                "front matter",
	} {
		if _, err := ParseAgentDef([]byte(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
}

func TestLoadAgentDefsLaterDirWins(t *testing.T) {
	t.Parallel()
	home, ws := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(home, "a.md"), []byte("---\nname: auditor\ndescription: home\n---\nhome"), 0o644)
	os.WriteFile(filepath.Join(ws, "b.md"), []byte("---\nname: auditor\ndescription: workspace\n---\nws"), 0o644)
	os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("ignored"), 0o644)
	kinds, err := LoadAgentDefs(home, filepath.Join(t.TempDir(), "missing"), ws)
	if err != nil || len(kinds) != 1 || kinds[0].Description != "workspace" {
		t.Fatalf("%+v %v", kinds, err)
	}
	os.WriteFile(filepath.Join(ws, "bad.md"), []byte("no front matter"), 0o644)
	if _, err := LoadAgentDefs(ws); err == nil || !strings.Contains(err.Error(), "bad.md") {
		t.Errorf("bad file: %v", err)
	}
}

// FuzzParseAgentDef: no input panics; an accepted definition is usable.
func FuzzParseAgentDef(f *testing.F) {
	for _, s := range []string{"---\nname: a\ntools: Read, Bash\n---\nbody", "---\nname: b\ntools: [x, y]\nmodel: haiku\n---\n", "---\n---\n", "", "---\nname: [\n---"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := ParseAgentDef(b)
		if err != nil {
			return
		}
		if k.Name == "" || strings.ContainsAny(k.Name, " .*>/") || len(k.Tools) == 0 || !slices.Contains(k.Tools, "think") {
			t.Fatalf("accepted a bad kind: %+v", k)
		}
	})
}
