package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"
)

// callFileTool runs tool with JSON args in s and fails the test on a Go
// error (which would mean the harness broke).
func callFileTool(t testing.TB, s *Session, tool Tool, args string) Result {
	t.Helper()
	res, err := tool.Run(context.Background(), s, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s(%s): unexpected Go error: %v", tool.Spec().Name, args, err)
	}
	return res
}

// resultForGolden renders a result for golden files: error results are marked.
func resultForGolden(r Result) string {
	if r.IsError {
		return "ERROR: " + r.Text + "\n"
	}
	return r.Text + "\n"
}

// numberedTextLines returns "line 1\nline 2\n..." up to n.
func numberedTextLines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestReadFileGolden(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	writeFile(t, s, "basic.txt", "package main\n\n\tfunc main() {}\nlast line, no newline")
	writeFile(t, s, "crlf.txt", "one\r\ntwo\r\n\r\nfour\r\n")
	long := strings.Repeat("a", 499) + "é" + "b" // 501 runes: cut after é
	exact := strings.Repeat("ü", 500)            // 500 runes, 1000 bytes: kept
	writeFile(t, s, "long.txt", "short\n"+long+"\n"+exact+"\n"+strings.Repeat("x", 5000)+"\nend\n")
	writeFile(t, s, "ten.txt", numberedTextLines(10))
	writeFile(t, s, "big.txt", numberedTextLines(2500))
	writeFile(t, s, "empty.txt", "")
	writeFile(t, s, "src/main.go", "package main\n")
	writeFile(t, s, "src/main_test.go", "package main\n")
	writeFile(t, s, "src/mainly.md", "x\n")
	writeFile(t, s, "src/other.txt", "x\n")
	writeFile(t, s, "image.png", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"+strings.Repeat("\x00", 100))
	writeFile(t, s, "blob.bin", "abc\x00def")
	writeFile(t, s, "latin1.txt", strings.Repeat("caf\xe9 \xe0 \xff\xfe", 50))
	writeFile(t, s, "mostly_ok.txt", "ok line\nbad byte \xff here\n")

	cases := []struct{ name, args string }{
		{"basic", `{"path":"basic.txt"}`},
		{"crlf", `{"path":"crlf.txt"}`},
		{"long_lines", `{"path":"long.txt"}`},
		{"offset_limit", `{"path":"ten.txt","offset":3,"limit":4}`},
		{"offset_to_end", `{"path":"ten.txt","offset":8}`},
		{"offset_last_line", `{"path":"ten.txt","offset":10,"limit":5}`},
		{"default_limit", `{"path":"big.txt"}`},
		{"late_offset", `{"path":"big.txt","offset":2490}`},
		{"ranges", `{"path":"ten.txt","ranges":[[8,9],[1,2],[2,3],[5,5]]}`},
		{"ranges_adjacent", `{"path":"ten.txt","ranges":[[1,2],[3,4]]}`},
		{"ranges_past_end", `{"path":"ten.txt","ranges":[[9,400]]}`},
		{"ranges_limit", `{"path":"ten.txt","limit":3,"ranges":[[1,2],[6,9]]}`},
		{"ranges_start_past_end", `{"path":"ten.txt","ranges":[[2,3],[11,12]]}`},
		{"ranges_end_before_start", `{"path":"ten.txt","ranges":[[5,4]]}`},
		{"ranges_and_offset", `{"path":"ten.txt","offset":2,"ranges":[[5,6]]}`},
		{"ranges_zero_start", `{"path":"ten.txt","ranges":[[0,4]]}`},
		{"ranges_not_a_pair", `{"path":"ten.txt","ranges":[[2,3],[4]]}`},
		{"ranges_and_start_line", `{"path":"ten.txt","ranges":[[1,2]],"start_line":5}`},
		{"start_end_line", `{"path":"ten.txt","start_line":3,"end_line":5}`},
		{"end_line_only", `{"path":"ten.txt","end_line":2}`},
		{"end_line_before_start", `{"path":"ten.txt","start_line":5,"end_line":4}`},
		{"start_line_and_offset", `{"path":"ten.txt","start_line":5,"offset":4}`},
		{"end_line_and_limit", `{"path":"ten.txt","start_line":2,"end_line":4,"limit":5}`},
		{"empty", `{"path":"empty.txt"}`},
		{"empty_offset", `{"path":"empty.txt","offset":5}`},
		{"offset_past_end", `{"path":"ten.txt","offset":11}`},
		{"directory", `{"path":"src"}`},
		{"missing_similar", `{"path":"src/mian.go"}`},
		{"missing_stem", `{"path":"src/other.go"}`},
		{"missing_plain", `{"path":"src/zzzzzzzz.rs"}`},
		{"missing_dir", `{"path":"nowhere/file.txt"}`},
		{"binary_png", `{"path":"image.png"}`},
		{"binary_nul", `{"path":"blob.bin"}`},
		{"binary_invalid_utf8", `{"path":"latin1.txt"}`},
		{"mostly_valid_utf8", `{"path":"mostly_ok.txt"}`},
		{"bad_offset", `{"path":"ten.txt","offset":0}`},
		{"bad_limit", `{"path":"ten.txt","limit":"lots"}`},
		{"missing_path", `{"offset":3}`},
		{"unknown_field", `{"path":"ten.txt","lines":3}`},
	}
	tool := ReadFile()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			golden(t, "read_file/"+c.name, resultForGolden(callFileTool(t, s, tool, c.args)))
		})
	}
}

func TestReadFileRegistersWholeFileRead(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	abs := writeFile(t, s, "f.txt", numberedTextLines(50))
	if _, err := s.Reads.Check(s.Workspace, abs, "f.txt"); err == nil {
		t.Fatal("an unread file passed the read check")
	}
	res := callFileTool(t, s, ReadFile(), `{"path":"f.txt","offset":10,"limit":2}`)
	if res.IsError {
		t.Fatalf("read failed: %s", res.Text)
	}
	if _, err := s.Reads.Check(s.Workspace, abs, "f.txt"); err != nil {
		t.Fatalf("a partial read did not register the file: %v", err)
	}
	// The registered hash is of the whole file: appending a line makes the
	// read stale even though the shown lines did not change.
	if err := os.WriteFile(abs, []byte(numberedTextLines(51)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reads.Check(s.Workspace, abs, "f.txt"); err == nil {
		t.Fatal("a change outside the shown window did not make the read stale")
	}
}

func TestReadFileBinaryRegistersRead(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	abs := writeFile(t, s, "b.bin", "\x00\x01\x02")
	if res := callFileTool(t, s, ReadFile(), `{"path":"b.bin"}`); res.IsError {
		t.Fatalf("read failed: %s", res.Text)
	}
	if _, err := s.Reads.Check(s.Workspace, abs, "b.bin"); err != nil {
		t.Fatalf("binary read not registered: %v", err)
	}
}

func TestReadFileLargeFileStreams(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	writeFile(t, s, "huge.txt", numberedTextLines(100_000))
	res := callFileTool(t, s, ReadFile(), `{"path":"huge.txt","offset":99999}`)
	want := "L99999: line 99999\nL100000: line 100000"
	if res.IsError || res.Text != want {
		t.Fatalf("got %q, want %q", res.Text, want)
	}
	res = callFileTool(t, s, ReadFile(), `{"path":"huge.txt","offset":50000,"limit":1}`)
	want = "L50000: line 50000\n[truncated: 100000 total lines in file; use offset=50001 to continue]"
	if res.IsError || res.Text != want {
		t.Fatalf("got %q, want %q", res.Text, want)
	}
}

// TestFileToolsHugeFile uses a sparse file just over the size whose reads
// are registered: read_file still shows it, the writing tools refuse it
// with a clear reason instead of a misleading "not read".
func TestFileToolsHugeFile(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	// Text beyond the binary sniff, then zeros up to the size.
	abs := writeFile(t, s, "huge.txt", numberedTextLines(1000))
	if err := os.Truncate(abs, maxTrackedFileBytes+1); err != nil {
		t.Fatal(err)
	}
	res := callFileTool(t, s, ReadFile(), `{"path":"huge.txt","limit":2}`)
	want := "L1: line 1\nL2: line 2\n[truncated: 1001 total lines in file; use offset=3 to continue]"
	if res.IsError || res.Text != want {
		t.Fatalf("read_file: got %q, want %q", res.Text, want)
	}
	if s.Reads.WasRead(abs) {
		t.Fatal("a file over the tracked size was registered as read")
	}
	res = callFileTool(t, s, EditFile(), `{"path":"huge.txt","old_string":"line 1","new_string":"x"}`)
	if !res.IsError || !strings.Contains(res.Text, "too large for edit_file") {
		t.Fatalf("edit_file: got %+v", res)
	}
	res = callFileTool(t, s, WriteFile(), `{"path":"huge.txt","content":"x"}`)
	if !res.IsError || !strings.Contains(res.Text, "too large for write_file") {
		t.Fatalf("write_file: got %+v", res)
	}
}

func TestReadFileVeryLongLine(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	// One line far longer than the reader's buffer, then a short one.
	writeFile(t, s, "wide.txt", strings.Repeat("z", 300_000)+"\nnext\n")
	res := callFileTool(t, s, ReadFile(), `{"path":"wide.txt"}`)
	want := "L1: " + strings.Repeat("z", 500) + "... [line truncated at 500 chars]\nL2: next"
	if res.IsError || res.Text != want {
		t.Fatalf("got %d bytes %q..., want %d bytes", len(res.Text), res.Text[:min(60, len(res.Text))], len(want))
	}
	res = callFileTool(t, s, ReadFile(), `{"path":"wide.txt","offset":2}`)
	if res.IsError || res.Text != "L2: next" {
		t.Fatalf("got %q, want %q", res.Text, "L2: next")
	}
}

func TestReadFileNotRegular(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	if err := syscall.Mkfifo(filepath.Join(s.Workspace.Root(), "pipe"), 0o644); err != nil {
		t.Skipf("no fifo here: %v", err)
	}
	res := callFileTool(t, s, ReadFile(), `{"path":"pipe"}`)
	if !res.IsError || !strings.Contains(res.Text, "pipe is a named pipe (FIFO), not a regular file") {
		t.Fatalf("got %+v, want a not-a-regular-file error", res)
	}
}

func TestReadFileCancelled(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	writeFile(t, s, "f.txt", "x\n")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := ReadFile().Run(ctx, s, json.RawMessage(`{"path":"f.txt"}`))
	if err != context.Canceled {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

func TestReadFileConfinement(t *testing.T) {
	t.Parallel()
	checkToolConfined(t, ReadFile(), func(p string) string {
		return fmt.Sprintf(`{"path":%q}`, p)
	})
}

// checkToolConfined calls tool with paths that leave the workspace (a ".."
// path, an absolute path outside, a symlink pointing out, a path through a
// symlinked directory) and requires an error result that names the
// problem, and no change outside.
func checkToolConfined(t *testing.T, tool Tool, args func(path string) string) {
	t.Helper()
	s := newTestSession(t)
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("top secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := s.Workspace.Root()
	if err := os.Symlink(secret, filepath.Join(root, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "linkdir")); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(root, secret)
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]string{
		"dotdot":      rel,
		"absolute":    secret,
		"symlink":     "link.txt",
		"through_dir": "linkdir/secret.txt",
		"new_outside": "linkdir/new.txt",
	} {
		res := callFileTool(t, s, tool, args(p))
		if !res.IsError || !strings.Contains(res.Text, "outside the workspace") {
			t.Errorf("%s (%s): got %+v, want an outside-the-workspace error", name, p, res)
		}
		if strings.Contains(res.Text, "top secret") {
			t.Errorf("%s: the secret leaked: %q", name, res.Text)
		}
	}
	got, err := os.ReadFile(secret)
	if err != nil || string(got) != "top secret\n" {
		t.Errorf("the file outside changed: %q, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
		t.Errorf("a file was created outside the workspace")
	}
}

// FuzzReadFile reads arbitrary content with arbitrary windows: the tool
// must answer without a Go error, say "(empty file" only for a file of no
// bytes, and, for text, show exactly what the reference line splitter
// (refLines, refRead) shows for the window; whatever the window, lines
// are numbered in increasing order and none is longer than the cap.
func FuzzReadFile(f *testing.F) {
	f.Add("a\nb\r\nc", 1, 2, 0, 0)
	f.Add("\n\n\n", 2, 0, 1, 3)
	f.Add(strings.Repeat("é", 700)+"\n", 0, 0, 0, 0)
	f.Add("x\xff\xfe\n", 1, 1, 2, 1)
	f.Add("", 0, 0, 0, 0)
	f.Add("\r", 0, 0, 0, 0)
	f.Add(strings.Repeat("z", 65536), 0, 0, 0, 0)
	tool := ReadFile()
	f.Fuzz(func(t *testing.T, content string, offset, limit, start, end int) {
		s := newTestSession(t)
		writeFile(t, s, "f", content)
		args := map[string]any{"path": "f"}
		if offset != 0 {
			args["offset"] = offset
		}
		if limit != 0 {
			args["limit"] = limit
		}
		ranges := start != 0 || end != 0
		if ranges {
			delete(args, "offset")
			args["ranges"] = [][]int{{start, end}, {end, end + 3}}
		}
		raw, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		res := callFileTool(t, s, tool, string(raw))
		if empty := strings.HasPrefix(res.Text, "(empty file"); empty != (content == "" && !res.IsError) {
			t.Fatalf("%d bytes: %q", len(content), res.Text)
		}
		if res.IsError || strings.HasPrefix(res.Text, "Binary file") {
			return
		}
		if want, ok := refFuzzRead(content, offset, limit, start, end, ranges); ok && res.Text != want {
			t.Fatalf("%s: %s", raw, firstDifference(res.Text, want))
		}
		if content == "" {
			return
		}
		last := 0
		for _, l := range strings.Split(res.Text, "\n") {
			if l == "..." || strings.HasPrefix(l, "[truncated: ") {
				continue
			}
			var n int
			if _, err := fmt.Sscanf(l, "L%d:", &n); err != nil {
				t.Fatalf("line %q is not numbered", l)
			}
			if n <= last {
				t.Fatalf("line %d follows line %d", n, last)
			}
			last = n
			text := strings.TrimSuffix(strings.SplitN(l, ": ", 2)[1], "... [line truncated at 500 chars]")
			if utf8.RuneCountInString(text) > readFileMaxLineChars {
				t.Fatalf("line %d shows %d chars", n, utf8.RuneCountInString(text))
			}
		}
	})
}

// refFuzzRead is refRead for FuzzReadFile's window; ok is false when the
// numbers are too large to add up safely (only the loose checks apply).
func refFuzzRead(content string, offset, limit, start, end int, ranges bool) (string, bool) {
	const big = 1 << 30
	for _, v := range []int{offset, limit, start, end} {
		if v < -big || v > big {
			return "", false
		}
	}
	if limit == 0 {
		limit = readFileDefaultLimit
	}
	lines := refLines(content)
	if !ranges {
		off := max(offset, 1)
		return refRead("f", lines, [][2]int{{off, off + limit - 1}}, limit, true), true
	}
	spans := [][2]int{{start, end}, {end, end + 3}}
	if spans[1][0] < spans[0][0] {
		spans[0], spans[1] = spans[1], spans[0]
	}
	if spans[1][0] <= spans[0][1]+1 {
		spans = [][2]int{{spans[0][0], max(spans[0][1], spans[1][1])}}
	}
	return refRead("f", lines, spans, limit, false), true
}

// BenchmarkReadFile100k reads a 100,000-line file with the default window
// and with an offset near its end.
func BenchmarkReadFile100k(b *testing.B) {
	ws, err := NewWorkspace(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	s := NewSession("bench", ws, Config{DataDir: b.TempDir()})
	content := numberedTextLines(100_000)
	if err := os.WriteFile(filepath.Join(ws.Root(), "big.txt"), []byte(content), 0o644); err != nil {
		b.Fatal(err)
	}
	tool := ReadFile()
	for _, bc := range []struct{ name, args string }{
		{"default", `{"path":"big.txt"}`},
		{"offset99000", `{"path":"big.txt","offset":99000}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(content)))
			b.ReportAllocs()
			for b.Loop() {
				if res := callFileTool(b, s, tool, bc.args); res.IsError {
					b.Fatal(res.Text)
				}
			}
		})
	}
}
