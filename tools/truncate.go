package tools

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/troupe-ai/troupe/internal/text"
)

// Strategy is how an over-long output is cut.
type Strategy int

const (
	// NoTruncation leaves output whole (the tool caps itself).
	NoTruncation Strategy = iota
	// StrategyHead keeps the first MaxBytes bytes.
	StrategyHead
	// StrategyHeadAndTail keeps the start and the end, TailRatio of the
	// budget for the end: errors and summaries come last in build output.
	StrategyHeadAndTail
	// StrategyHeadLines keeps the first MaxLines lines.
	StrategyHeadLines
)

// Truncation is a tool's output cap.
type Truncation struct {
	Strategy  Strategy
	MaxBytes  int
	MaxLines  int
	TailRatio float64
}

// Head keeps the first n bytes.
func Head(n int) Truncation { return Truncation{Strategy: StrategyHead, MaxBytes: n} }

// HeadAndTail keeps n bytes, tailRatio of them from the end.
func HeadAndTail(n int, tailRatio float64) Truncation {
	return Truncation{Strategy: StrategyHeadAndTail, MaxBytes: n, TailRatio: tailRatio}
}

// HeadLines keeps the first n lines.
func HeadLines(n int) Truncation { return Truncation{Strategy: StrategyHeadLines, MaxLines: n} }

// DefaultTruncation is the cap of a tool that declares none in its Spec:
// a 50 KB head cap (each built-in tool declares its own; tools that bound
// their own output still get a byte cap as a last structural guard).
func DefaultTruncation(string) Truncation { return Head(50 * 1024) }

// Cut is the outcome of applying a Truncation.
type Cut struct {
	Text       string // the kept text, notice not yet added
	Truncated  bool
	TotalBytes int
	TotalLines int
	KeptBytes  int
	KeptLines  int
}

// Apply cuts text by the strategy. It never splits a UTF-8 sequence and
// prefers to cut at a line end.
func (t Truncation) Apply(text string) Cut {
	c := Cut{Text: text, TotalBytes: len(text), TotalLines: countLines(text)}
	switch t.Strategy {
	case StrategyHead:
		if t.MaxBytes > 0 && len(text) > t.MaxBytes {
			c.Text, c.Truncated = HeadBytes(text, t.MaxBytes), true
		}
	case StrategyHeadAndTail:
		if t.MaxBytes > 0 && len(text) > t.MaxBytes {
			tailN := int(float64(t.MaxBytes) * t.TailRatio)
			head := HeadBytes(text, t.MaxBytes-tailN)
			tail := tailBytes(text, tailN)
			omitted := len(text) - len(head) - len(tail)
			c.Text = head + fmt.Sprintf("\n\n[... %d bytes omitted ...]\n\n", omitted) + tail
			c.Truncated = true
			c.KeptBytes = len(head) + len(tail)
		}
	case StrategyHeadLines:
		if t.MaxLines > 0 && c.TotalLines > t.MaxLines {
			idx := 0
			for range t.MaxLines {
				idx += strings.IndexByte(text[idx:], '\n') + 1
			}
			c.Text, c.Truncated = text[:idx], true
		}
	}
	if c.KeptBytes == 0 {
		c.KeptBytes = len(c.Text)
	}
	c.KeptLines = countLines(c.Text)
	return c
}

// Notice is the line appended to a truncated output, saying what was cut
// and where the full output is.
func (t Truncation) Notice(c Cut, spillPath string) string {
	var what string
	switch t.Strategy {
	case StrategyHeadLines:
		what = fmt.Sprintf("showing first %d of %d lines", c.KeptLines, c.TotalLines)
	case StrategyHeadAndTail:
		what = fmt.Sprintf("showing first and last parts, %d of %d bytes", c.KeptBytes, c.TotalBytes)
	default:
		what = fmt.Sprintf("showing first %d of %d bytes", c.KeptBytes, c.TotalBytes)
	}
	if spillPath == "" {
		return fmt.Sprintf("[output truncated: %s; narrow the call to see the rest]", what)
	}
	return fmt.Sprintf("[output truncated: %s. Full output saved to %s; use read_file with offset/limit or grep on it to see the rest]", what, spillPath)
}

func countLines(s string) int {
	if s == "" {
		return 0
	}
	n := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// HeadBytes returns at most n bytes of s, cut after the last newline in the
// final quarter of the window when there is one, else at a rune boundary.
func HeadBytes(s string, n int) string {
	if n >= len(s) {
		return s
	}
	if n <= 0 {
		return ""
	}
	cut := s[:n]
	if i := strings.LastIndexByte(cut, '\n'); i >= n*3/4 {
		return cut[:i+1]
	}
	return text.Cut(s, n)
}

// tailBytes returns at most n bytes from the end of s, starting at a line
// start in the first quarter of the window when there is one.
func tailBytes(s string, n int) string {
	if n >= len(s) {
		return s
	}
	if n <= 0 {
		return ""
	}
	start := len(s) - n
	if i := strings.IndexByte(s[start:], '\n'); i >= 0 && i <= n/4 {
		return s[start+i+1:]
	}
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	return s[start:]
}
