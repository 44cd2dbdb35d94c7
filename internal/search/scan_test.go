package search

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
)

// fuzzPatterns are the patterns FuzzScan picks from: literals of each
// kind, sets, regular expressions with and without required literals.
var fuzzPatterns = []string{"abc", "ABC", "ask", "a.c", `a\w*c`, "ab|cd", `\d+`, "^a", "c$", "^$", `\bab`, "k"}

// naiveLines is the reference: the pattern run on each line on its own.
func naiveLines(p *Pattern, data string, invert bool) []int {
	if data == "" {
		return nil
	}
	lines := strings.Split(strings.TrimSuffix(data, "\n"), "\n")
	var out []int
	for i, l := range lines {
		if p.re.MatchString(l) != invert {
			out = append(out, i+1)
		}
	}
	return out
}

// scanLines runs the scanner with a small buffer (so lines cross chunk
// boundaries and the buffer grows) over a reader returning short reads.
func scanLines(t testing.TB, p *Pattern, data string, invert bool, mode Mode) *scanner {
	s := newScanner(p, mode, invert, 1<<30, new(atomic.Bool))
	s.buf = make([]byte, 7)
	if err := s.scan(iotest.HalfReader(strings.NewReader(data))); err != nil {
		t.Fatalf("scan: %v", err)
	}
	return s
}

func FuzzScan(f *testing.F) {
	f.Add("abc\nxabcx\nno\n", uint8(0), false)
	f.Add("ASK\nask\nfoo \u212a bar ask\nſ\n", uint8(2), false)
	f.Add("line one\r\nabc\r\n\r\n", uint8(8), true)
	f.Add("ab\ncd\nabcd\n\n12 34\nlast without end", uint8(5), false)
	f.Add(strings.Repeat("x", 50)+"abc"+strings.Repeat("y", 50), uint8(1), true)
	f.Fuzz(func(t *testing.T, data string, which uint8, invert bool) {
		data = strings.ReplaceAll(data, "\x00", " ") // binary files have their own test
		p, err := CompilePattern(fuzzPatterns[int(which)%len(fuzzPatterns)], PatternOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := naiveLines(p, data, invert)
		s := scanLines(t, p, data, invert, ModeLines)
		if !slices.Equal(s.lines, want) || s.count != len(want) || s.nline != len(want) {
			t.Errorf("pattern %q invert %v on %q:\nlines %v (count %d), want %v", p, invert, data, s.lines, s.count, want)
		}
		if c := scanLines(t, p, data, invert, ModeCount); c.count != len(want) {
			t.Errorf("count mode: %d, want %d", c.count, len(want))
		}
		if c := scanLines(t, p, data, invert, ModeFiles); (c.count > 0) != (len(want) > 0) {
			t.Errorf("files mode: count %d, want a match: %v", c.count, len(want) > 0)
		}
	})
}

func TestScanKeepsFirstLines(t *testing.T) {
	t.Parallel()
	p, _ := CompilePattern("hit", PatternOptions{})
	s := newScanner(p, ModeLines, false, 3, new(atomic.Bool))
	if err := s.scan(strings.NewReader(strings.Repeat("hit\nmiss\n", 10))); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.lines, []int{1, 3, 5}) || s.nline != 10 || s.count != 10 {
		t.Errorf("lines %v nline %d count %d; want the first 3 of 10", s.lines, s.nline, s.count)
	}
}

func TestScanBinary(t *testing.T) {
	t.Parallel()
	p, _ := CompilePattern("hit", PatternOptions{})
	early := "hit\x00\n"
	late := "hit\n" + strings.Repeat("filler\n", chunkSize/7+10) + "\x00hit\n"
	for _, c := range []struct {
		name, data string
		mode       Mode
		wantErr    error
		wantCount  int
	}{
		{"early files", early, ModeFiles, errBinary, 0},
		{"early count", early, ModeCount, errBinary, 0},
		{"late files", late, ModeFiles, nil, 1}, // found before the NUL was read
		{"late count", late, ModeCount, errBinary, 1},
	} {
		s := newScanner(p, c.mode, false, 10, new(atomic.Bool))
		err := s.scan(strings.NewReader(c.data))
		if err != c.wantErr || s.count != c.wantCount {
			t.Errorf("%s: err %v count %d, want %v %d", c.name, err, s.count, c.wantErr, c.wantCount)
		}
	}
}

func TestScanMultiline(t *testing.T) {
	t.Parallel()
	data := "begin\n middle\nend\nbegin end\nother\n"
	cases := []struct {
		pattern string
		invert  bool
		lines   []int
		count   int
	}{
		{`begin\n\s*middle\nend`, false, []int{1, 2, 3}, 1},
		{`begin\s+\w+`, false, []int{1, 2, 4}, 2},
		{`(?s)begin.*end`, false, []int{1, 2, 3, 4}, 1},
		{`begin\s+\w+`, true, []int{3, 5}, 2},
		{`^`, false, []int{1, 2, 3, 4, 5}, 5},
		{`nomatch\n`, false, nil, 0},
	}
	for _, c := range cases {
		p, err := CompilePattern(c.pattern, PatternOptions{Multiline: true})
		if err != nil {
			t.Fatal(err)
		}
		s := newScanner(p, ModeLines, c.invert, 100, new(atomic.Bool))
		if err := s.scan(strings.NewReader(data)); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(s.lines, c.lines) || s.count != c.count {
			t.Errorf("%q invert %v: lines %v count %d, want %v %d", c.pattern, c.invert, s.lines, s.count, c.lines, c.count)
		}
	}
}

// endless is a reader that never ends, so only a cancellation can stop a
// scan of it; it raises the flag itself after some reads.
type endless struct {
	reads   int
	stopped *atomic.Bool
}

func (e *endless) Read(p []byte) (int, error) {
	e.reads++
	if e.reads == 5 {
		e.stopped.Store(true)
	}
	return copy(p, bytes.Repeat([]byte("no match here\n"), len(p)/14+1)), nil
}

func TestScanStops(t *testing.T) {
	t.Parallel()
	for _, multiline := range []bool{false, true} {
		p, _ := CompilePattern("needle", PatternOptions{Multiline: multiline})
		stopped := new(atomic.Bool)
		s := newScanner(p, ModeCount, false, 0, stopped)
		if err := s.scan(&endless{stopped: stopped}); err != errStopped {
			t.Errorf("multiline %v: scan of an endless reader returned %v, want errStopped", multiline, err)
		}
	}
}

func TestScanReadError(t *testing.T) {
	t.Parallel()
	p, _ := CompilePattern("x", PatternOptions{})
	s := newScanner(p, ModeCount, false, 0, new(atomic.Bool))
	r := io.MultiReader(strings.NewReader("x\n"), iotest.ErrReader(io.ErrUnexpectedEOF))
	if err := s.scan(r); err != io.ErrUnexpectedEOF {
		t.Errorf("scan returned %v, want the reader's error", err)
	}
}

// FuzzPattern checks arbitrary patterns: compiling never panics, and a
// pattern that compiles selects, through the literal prefilter and the
// chunked scan, exactly the lines the plain regular expression selects
// when run on each line alone.
func FuzzPattern(f *testing.F) {
	for _, seed := range []struct{ pattern, text string }{
		{"foo|bar", "foo\nxbarx\nbaz\n"},
		{`(?i)Straße`, "STRASSE\nstraße\n"},
		{`a(b|c)+d`, "abcbd\nad\n"},
		{`^\s*$`, "\n  \nx\n"},
		{`[[:upper:]]\w+`, "Hello\nhello\n"},
		{`(?:ks)+`, "KSks\n\u212aſ\n"},
		{`\Qa.b\E`, "a.b\naxb\n"},
		{`x{2,}y?`, "xx\nx\n"},
	} {
		f.Add(seed.pattern, seed.text)
	}
	f.Fuzz(func(t *testing.T, pattern, text string) {
		p, err := CompilePattern(pattern, PatternOptions{})
		if err != nil {
			var pe *PatternError
			if !errors.As(err, &pe) {
				t.Fatalf("CompilePattern(%q) failed without a PatternError: %v", pattern, err)
			}
			return
		}
		prefix := ""
		if p.CaseInsensitive() {
			prefix = "(?i)"
		}
		ref, err := regexp.Compile(prefix + pattern)
		if err != nil {
			t.Fatalf("%q compiles for us but not as %q: %v", pattern, prefix+pattern, err)
		}
		text = strings.NewReplacer("\r", "", "\x00", "").Replace(text)
		var want []int
		if text != "" {
			for i, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
				if ref.MatchString(l) {
					want = append(want, i+1)
				}
			}
		}
		s := scanLines(t, p, text, false, ModeLines)
		if !slices.Equal(s.lines, want) {
			t.Errorf("pattern %q on %q: lines %v, want %v", pattern, text, s.lines, want)
		}
	})
}

// lastNewline answers as bytes.LastIndexByte does, whatever the distance
// from the end to the last newline (none, within the first window, far
// beyond it).
func TestLastNewline(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 255, 256, 257, 1000, 70_000} {
		for _, at := range []int{-1, 0, n / 3, n - 300, n - 256, n - 1} {
			b := bytes.Repeat([]byte{'x'}, n)
			if at >= 0 && at < n {
				b[at] = '\n'
				if at > 7 {
					b[at-7] = '\n'
				}
			}
			if got, want := lastNewline(b), bytes.LastIndexByte(b, '\n'); got != want {
				t.Errorf("%d bytes, newline at %d: %d, want %d", n, at, got, want)
			}
		}
	}
}
