package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFileGolden(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		setup   map[string]string // files created before the call
		read    string            // file read with read_file before the call
		changed string            // content f.txt gets after the read
		path    string            // the path whose content the golden shows
		args    string
	}{
		{name: "new_file", path: "f.txt",
			args: `{"path":"f.txt","content":"one\ntwo\n"}`},
		{name: "new_nested", path: "a/b/c/f.txt",
			args: `{"path":"a/b/c/f.txt","content":"no newline at end"}`},
		{name: "empty_content", path: "f.txt",
			args: `{"path":"f.txt","content":""}`},
		{name: "overwrite_after_read", setup: map[string]string{"f.txt": "old\n"}, read: "f.txt", path: "f.txt",
			args: `{"path":"f.txt","content":"new\ncontent\nhere\n"}`},
		{name: "overwrite_unread", setup: map[string]string{"f.txt": "old\n"}, path: "f.txt",
			args: `{"path":"f.txt","content":"new\n"}`},
		{name: "overwrite_changed_since_read", setup: map[string]string{"f.txt": "old\n"}, read: "f.txt",
			changed: "someone else's\n", path: "f.txt",
			args: `{"path":"f.txt","content":"new\n"}`},
		{name: "directory", setup: map[string]string{"d/x.txt": "x"}, path: "d/x.txt",
			args: `{"path":"d","content":"new\n"}`},
		{name: "parent_is_file", setup: map[string]string{"f.txt": "x"}, path: "f.txt",
			args: `{"path":"f.txt/g.txt","content":"new\n"}`},
		{name: "missing_content", path: "f.txt",
			args: `{"path":"f.txt"}`},
		{name: "content_not_string", path: "f.txt",
			args: `{"path":"f.txt","content":["a","b"]}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newTestSession(t)
			for rel, content := range c.setup {
				writeFile(t, s, rel, content)
			}
			if c.read != "" {
				readWithTool(t, s, c.read)
			}
			if c.changed != "" {
				writeFile(t, s, "f.txt", c.changed)
			}
			res := callFileTool(t, s, WriteFile(), c.args)
			golden(t, "write_file/"+c.name, editOutcome(t, s, c.path, res))
		})
	}
}

func TestWriteFileModes(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	abs := writeFile(t, s, "tool.sh", "#!/bin/sh\n")
	if err := os.Chmod(abs, 0o700); err != nil {
		t.Fatal(err)
	}
	readWithTool(t, s, "tool.sh")
	if res := callFileTool(t, s, WriteFile(), `{"path":"tool.sh","content":"#!/bin/sh\nexit 0\n"}`); res.IsError {
		t.Fatal(res.Text)
	}
	if fi, err := os.Stat(abs); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("existing file's mode not kept: %v, %v", fi.Mode(), err)
	}
	if res := callFileTool(t, s, WriteFile(), `{"path":"new.txt","content":"x"}`); res.IsError {
		t.Fatal(res.Text)
	}
	if fi, err := os.Stat(filepath.Join(s.Workspace.Root(), "new.txt")); err != nil || fi.Mode().Perm() != newFileMode {
		t.Fatalf("new file's mode: %v, %v; want %v", fi.Mode(), err, newFileMode)
	}
}

func TestWriteFileRecordsWhatItWrote(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	if res := callFileTool(t, s, WriteFile(), `{"path":"f.txt","content":"a\n"}`); res.IsError {
		t.Fatal(res.Text)
	}
	// Written content counts as read: it can be rewritten and edited at once.
	if res := callFileTool(t, s, WriteFile(), `{"path":"f.txt","content":"b\n"}`); res.IsError {
		t.Fatalf("rewrite of own file refused: %s", res.Text)
	}
	if res := callFileTool(t, s, EditFile(), `{"path":"f.txt","old_string":"b","new_string":"c"}`); res.IsError {
		t.Fatalf("edit of own file refused: %s", res.Text)
	}
}

func TestWriteFileConfinement(t *testing.T) {
	t.Parallel()
	checkToolConfined(t, WriteFile(), func(p string) string {
		return fmt.Sprintf(`{"path":%q,"content":"overwritten"}`, p)
	})
}
