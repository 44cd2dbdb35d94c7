package search

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestReadLines(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	long := strings.Repeat("x", MaxLineBytes+10)
	text := "one\r\ntwo\nthree\nfour\n" + long + "\nsix\nseven"
	p := filepath.Join(dir, "f.txt")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	tg := Target{Root: dir}
	lines, err := ReadLines(t.Context(), tg, p, []int{2, 7}, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range lines {
		mark := "-"
		if l.Match {
			mark = ":"
		}
		got = append(got, strconv.Itoa(l.No)+mark+l.Text)
	}
	want := []string{"1-one", "2:two", "3-three", "6-six", "7:seven"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q", got, want)
	}
	lines, err = ReadLines(t.Context(), tg, p, []int{5}, 0, 0)
	if err != nil || len(lines) != 1 || !lines[0].Long || len(lines[0].Text) != MaxLineBytes {
		t.Errorf("long line: %v %+v", err, lines)
	}
	if _, err := ReadLines(t.Context(), tg, filepath.Join(dir, "gone"), []int{1}, 0, 0); err == nil {
		t.Error("ReadLines of a missing file succeeded")
	}
}
