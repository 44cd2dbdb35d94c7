package tools

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// read_file's whole output agrees with a plain line splitter (refLines,
// refRead) on files whose size lands on and around the reader's buffer
// boundaries (4 KiB, the 8 KiB binary sniff, 64 KiB, 128 KiB, 1 MiB, each
// ±2 bytes), with and without a final line end, with LF and CRLF, and for
// files that are one single line: the whole file, the default window, the
// last line alone and two ranges at both ends are each compared byte for
// byte.
func TestReadFileBufferBoundaries(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	for _, size := range []int{4096, 8192, 65536, 131072, 1 << 20} {
		for delta := -2; delta <= 2; delta++ {
			for _, shape := range []string{"lines", "lines-crlf", "one-line"} {
				for _, finalNL := range []bool{true, false} {
					content := makeContent(size+delta, shape, finalNL)
					name := fmt.Sprintf("f-%d-%s-%v.txt", len(content), shape, finalNL)
					checkReadFile(t, s, name, content)
				}
			}
		}
	}
}

// The smallest files, where "(empty file" is right only for no bytes at
// all: a lone line end is one empty line.
func TestReadFileTinyFiles(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	for i, content := range []string{"", "\n", "\r\n", "x", "x\n", "\r", "\n\n", "x\r\ny", "\r\r\n", "é", "a\nb"} {
		checkReadFile(t, s, fmt.Sprintf("tiny-%d.txt", i), content)
	}
}

// checkReadFile writes content to name and compares read_file's output
// for several windows with the reference.
func checkReadFile(t *testing.T, s *Session, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(s.Workspace.Root(), name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	lines := refLines(content)
	n := len(lines)
	type window struct {
		args  map[string]any
		spans [][2]int
		limit int
		hint  bool // offset/limit: a truncated window says where to continue
	}
	windows := []window{
		{map[string]any{"limit": max(n, 1)}, [][2]int{{1, max(n, 1)}}, max(n, 1), true},
		{map[string]any{}, [][2]int{{1, readFileDefaultLimit}}, readFileDefaultLimit, true},
	}
	if n > 0 {
		windows = append(windows, window{map[string]any{"offset": n, "limit": 1}, [][2]int{{n, n}}, 1, true})
	}
	if n > 4 {
		windows = append(windows, window{map[string]any{"ranges": [][]int{{n - 1, n}, {1, 2}}},
			[][2]int{{1, 2}, {n - 1, n}}, readFileDefaultLimit, false})
	}
	for _, w := range windows {
		w.args["path"] = name
		raw, err := json.Marshal(w.args)
		if err != nil {
			t.Fatal(err)
		}
		r := runTool(t, ReadFile(), s, string(raw))
		want := refRead(name, lines, w.spans, w.limit, w.hint)
		if r.IsError || r.Text != want {
			t.Errorf("read_file %s: %s", raw, firstDifference(r.Text, want))
		}
	}
}

// refLines splits content into lines the plain way: at each "\n", the
// last line counting even without one, a "\r" before the line end (or
// the end of the file) dropped.
func refLines(content string) []string {
	if content == "" {
		return nil
	}
	lines := strings.Split(strings.TrimSuffix(content, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

// refRead is read_file's documented output for lines: the lines of the
// sorted, disjoint spans, at most limit of them, "..." between spans
// that are not adjacent, long lines cut, and when lines are left over
// the truncation line.
func refRead(display string, lines []string, spans [][2]int, limit int, hint bool) string {
	if len(lines) == 0 {
		return fmt.Sprintf("(empty file: %s)", display)
	}
	var out []string
	shown, last, next := 0, 0, 0
	for _, sp := range spans {
		for n := sp[0]; n <= min(sp[1], len(lines)); n++ {
			if shown == limit {
				if next == 0 {
					next = n
				}
				continue
			}
			if last != 0 && n != last+1 {
				out = append(out, "...")
			}
			out = append(out, fmt.Sprintf("L%d: %s", n, refCut(lines[n-1])))
			shown, last = shown+1, n
		}
	}
	if hint && next == 0 && last < len(lines) {
		next = last + 1
	}
	if next != 0 {
		out = append(out, fmt.Sprintf("[truncated: %d total lines in file; use offset=%d to continue]", len(lines), next))
	}
	return strings.Join(out, "\n")
}

// refCut is a line as shown: invalid UTF-8 replaced, cut at 500
// characters.
func refCut(l string) string {
	l = strings.ToValidUTF8(l, "\uFFFD")
	if utf8.RuneCountInString(l) <= readFileMaxLineChars {
		return l
	}
	return string([]rune(l)[:readFileMaxLineChars]) + fmt.Sprintf("... [line truncated at %d chars]", readFileMaxLineChars)
}

// firstDifference describes where got first differs from want, line by
// line, so that a megabyte of output is not printed.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl || i >= len(g) || i >= len(w) {
			return fmt.Sprintf("output line %d is %.120q, want %.120q (%d lines, want %d)", i+1, gl, wl, len(g), len(w))
		}
	}
	return "an error result"
}

// makeContent is total bytes of text: 99-character lines, or one line.
func makeContent(total int, shape string, finalNL bool) string {
	end := "\n"
	if shape == "lines-crlf" {
		end = "\r\n"
	}
	var b strings.Builder
	body := total
	if finalNL {
		body -= len(end)
	}
	if shape == "one-line" {
		b.WriteString(strings.Repeat("z", body))
	} else {
		for i := 0; b.Len() < body; i++ {
			line := fmt.Sprintf("line %06d ", i) + strings.Repeat("y", 99-12)
			if b.Len()+len(line)+len(end) > body {
				b.WriteString(strings.Repeat("t", body-b.Len()))
				break
			}
			b.WriteString(line + end)
		}
	}
	if finalNL {
		b.WriteString(end)
	}
	return b.String()
}
