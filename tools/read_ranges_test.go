package tools

import (
	"path/filepath"
	"testing"
)

// The aliases read exactly what the names they stand for read, and
// register the same read.
func TestReadFileAliasesMatchTheirOriginals(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	writeFile(t, s, "f.txt", numberedTextLines(3000))
	tool := ReadFile()
	for _, c := range []struct{ alias, original string }{
		{`{"path":"f.txt","start_line":7}`, `{"path":"f.txt","offset":7}`},
		{`{"path":"f.txt","start_line":7,"offset":7}`, `{"path":"f.txt","offset":7}`},
		{`{"path":"f.txt","start_line":7,"end_line":9}`, `{"path":"f.txt","offset":7,"limit":3}`},
		{`{"path":"f.txt","offset":7,"end_line":9,"limit":3}`, `{"path":"f.txt","offset":7,"limit":3}`},
		{`{"path":"f.txt","end_line":2500}`, `{"path":"f.txt","limit":2500}`},
		{`{"path":"f.txt","ranges":[[1,3000]],"limit":10}`, `{"path":"f.txt","limit":10}`},
		{`{"path":"f.txt","ranges":[[10,40],[41,50],[30,45]]}`, `{"path":"f.txt","ranges":[[10,50]]}`},
	} {
		got, want := callFileTool(t, s, tool, c.alias), callFileTool(t, s, tool, c.original)
		if got.IsError || got.Text != want.Text {
			t.Errorf("%s:\n%s\nwant (%s):\n%s", c.alias, got.Text, c.original, want.Text)
		}
	}
	// A range registers the read of the whole file, as any partial read does.
	s2 := newTestSession(t)
	abs := writeFile(t, s2, "g.txt", numberedTextLines(100))
	callFileTool(t, s2, tool, `{"path":"g.txt","ranges":[[5,6]]}`)
	if _, err := s2.Reads.Check(s2.Workspace, abs, filepath.Base(abs)); err != nil {
		t.Errorf("a ranged read did not register: %v", err)
	}
}
