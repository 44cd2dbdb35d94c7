package patch

import (
	"fmt"
	"strings"
)

// Locating hunks. A hunk's context and removed lines must appear in the
// file, in order, at or after the end of the previous hunk. They are
// compared ever more loosely, the first level that finds them winning:
// exactly, then ignoring trailing whitespace, then ignoring leading and
// trailing whitespace, then also reading typographic punctuation (curly
// quotes, dashes, odd spaces) as its ASCII counterpart. Context lines keep
// the file's own text, so a loose match never rewrites untouched lines.

// lineEq compares a file line with a patch line at one tolerance level.
type lineEq func(file, patch string) bool

var matchLevels = []lineEq{
	func(a, b string) bool { return a == b },
	func(a, b string) bool { return strings.TrimRight(a, " \t") == strings.TrimRight(b, " \t") },
	func(a, b string) bool { return strings.TrimSpace(a) == strings.TrimSpace(b) },
	func(a, b string) bool {
		return normalizePunct(strings.TrimSpace(a)) == normalizePunct(strings.TrimSpace(b))
	},
}

// punctASCII maps typographic punctuation to ASCII.
var punctASCII = strings.NewReplacer(
	"\u2018", "'", "\u2019", "'", "\u201A", "'", "\u201B", "'", "\u2032", "'",
	"\u201C", "\"", "\u201D", "\"", "\u201E", "\"", "\u201F", "\"", "\u2033", "\"",
	"\u00AB", "\"", "\u00BB", "\"",
	"\u2010", "-", "\u2011", "-", "\u2012", "-", "\u2013", "-", "\u2014", "-", "\u2015", "-", "\u2212", "-",
	"\u2026", "...",
	"\u00A0", " ", "\u2002", " ", "\u2003", " ", "\u2004", " ", "\u2005", " ", "\u2006", " ",
	"\u2007", " ", "\u2008", " ", "\u2009", " ", "\u200A", " ", "\u202F", " ", "\u205F", " ", "\u3000", " ",
)

func normalizePunct(s string) string { return punctASCII.Replace(s) }

// seek returns the first index >= start where want occurs in lines at the
// loosest-needed tolerance level, or -1. With eof set, a match ending at
// the last line is tried first.
func seek(lines, want []string, start int, eof bool) int {
	if len(want) > len(lines) {
		return -1
	}
	for _, eq := range matchLevels {
		if eof {
			if at := len(lines) - len(want); at >= start && matchAt(lines, want, at, eq) {
				return at
			}
		}
		for at := start; at+len(want) <= len(lines); at++ {
			if matchAt(lines, want, at, eq) {
				return at
			}
		}
	}
	return -1
}

func matchAt(lines, want []string, at int, eq lineEq) bool {
	for i, w := range want {
		if !eq(lines[at+i], w) {
			return false
		}
	}
	return true
}

// hunkMismatch is a hunk that could not be located.
type hunkMismatch struct {
	n      int    // 1-based hunk number within its file
	first  string // the hunk's header or first context/removed line
	reason string
}

func (m *hunkMismatch) Error() string {
	return fmt.Sprintf("hunk %d (at %q) %s", m.n, m.first, m.reason)
}

// Apply returns lines with every hunk applied, or a *hunkMismatch.
func Apply(lines []string, hunks []Hunk) ([]string, error) {
	type edit struct {
		at, n int
		repl  []string
	}
	var edits []edit
	cursor := 0
	for i, h := range hunks {
		var old []string
		for _, l := range h.Lines {
			if l.op != '+' {
				old = append(old, l.text)
			}
		}
		first := h.header
		if first == "" && len(old) > 0 {
			first = old[0]
		}
		miss := func(reason string) error { return &hunkMismatch{n: i + 1, first: first, reason: reason} }
		if h.header != "" {
			at := seek(lines, []string{h.header}, cursor, false)
			if at < 0 {
				return nil, miss(fmt.Sprintf("names the line %q after \"@@\", which was not found from line %d on", h.header, cursor+1))
			}
			cursor = at + 1
		}
		if len(old) == 0 {
			// Pure insertion: after the "@@" line when there is one, else at
			// the end of the file.
			at := len(lines)
			if h.header != "" {
				at = cursor
			}
			edits = append(edits, edit{at: at, repl: hunkNew(h, nil)})
			cursor = at // later hunks must come after it, keeping edits in order
			continue
		}
		at := seek(lines, old, cursor, h.eof)
		hl := h
		for at < 0 && len(hl.Lines) > 0 && hl.Lines[len(hl.Lines)-1].op == ' ' &&
			strings.TrimSpace(old[len(old)-1]) == "" {
			// Trailing blank context lines are often an artifact of how the
			// patch was written; retry without them.
			old = old[:len(old)-1]
			hl.Lines = hl.Lines[:len(hl.Lines)-1]
			if len(old) > 0 {
				at = seek(lines, old, cursor, hl.eof)
			}
		}
		if at < 0 {
			return nil, miss(fmt.Sprintf("does not match the file: these %d context and removed lines were not found in order from line %d on:\n%s",
				len(old), cursor+1, quoteLines(old, 8)))
		}
		edits = append(edits, edit{at: at, n: len(old), repl: hunkNew(hl, lines[at:at+len(old)])})
		cursor = at + len(old)
	}
	out := make([]string, 0, len(lines))
	prev := 0
	for _, e := range edits {
		out = append(out, lines[prev:e.at]...)
		out = append(out, e.repl...)
		prev = e.at + e.n
	}
	return append(out, lines[prev:]...), nil
}

// hunkNew is the text replacing a matched region: context lines as the
// file has them (matched), added lines from the patch.
func hunkNew(h Hunk, matched []string) []string {
	var out []string
	j := 0
	for _, l := range h.Lines {
		switch l.op {
		case ' ':
			out = append(out, matched[j])
			j++
		case '-':
			j++
		case '+':
			out = append(out, l.text)
		}
	}
	return out
}

// Text is a text file split into lines, remembering its line ending
// and whether it ended with one.
type Text struct {
	Lines    []string
	crlf     bool
	FinalEOL bool
}

func SplitText(content string) Text {
	ft := Text{FinalEOL: content == "" || strings.HasSuffix(content, "\n")}
	n := strings.Count(content, "\n")
	ft.crlf = n > 0 && strings.Count(content, "\r\n")*2 > n
	if ft.FinalEOL {
		content = strings.TrimSuffix(content, "\n")
	}
	if content == "" && ft.FinalEOL {
		return ft
	}
	ft.Lines = strings.Split(content, "\n")
	if ft.crlf {
		for i, l := range ft.Lines {
			ft.Lines[i] = strings.TrimSuffix(l, "\r")
		}
	}
	return ft
}

// Join is the text again, with its line ending and final line end.
func (ft Text) Join() string {
	if len(ft.Lines) == 0 {
		return ""
	}
	eol := "\n"
	if ft.crlf {
		eol = "\r\n"
	}
	s := strings.Join(ft.Lines, eol)
	if ft.FinalEOL {
		s += eol
	}
	return s
}

// quoteLines shows up to max lines, indented, for an error message.
func quoteLines(lines []string, max int) string {
	var b strings.Builder
	for i, l := range lines {
		if i == max {
			fmt.Fprintf(&b, "    ... (%d more)\n", len(lines)-max)
			break
		}
		b.WriteString("    " + l + "\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}
