package tools

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/troupe-ai/troupe/internal/search"
)

// grepContentMaxBytes is where content mode stops adding lines, below the
// tool's 50 KiB output cap, so that a long result says which offset
// continues it (the executor's cut would not).
const grepContentMaxBytes = 48 << 10

// content renders content mode: the page of selected lines from offset,
// limit of them, each file's lines with their context, in file order.
func (g *grepRun) content(ctx context.Context, hits []search.Hit) (Result, error) {
	total := 0
	for _, h := range hits {
		total += h.NLines
	}
	if g.p.Offset >= total {
		return Text(fmt.Sprintf("No more results: offset=%d but only %d lines match %s", g.p.Offset, total, g.p.Pattern)), nil
	}
	var b strings.Builder
	skip, taken := g.p.Offset, 0
	lastFile, lastNo := "", 0
	withContext := g.before > 0 || g.after > 0
	for _, h := range hits {
		if taken == g.limit {
			break
		}
		if skip >= h.NLines {
			skip -= h.NLines
			continue
		}
		want := h.Lines[skip:min(len(h.Lines), skip+g.limit-taken)]
		skip = 0
		lines, err := search.ReadLines(ctx, g.scope.target, h.Path, want, g.before, g.after)
		if err != nil {
			if ctx.Err() != nil {
				return Result{}, ctx.Err()
			}
			continue // the file went away since the search; skip it
		}
		rel := listPath(g.s.Workspace.Rel(h.Path))
		done := 0 // lines of want written
		for _, l := range lines {
			_, wanted := slices.BinarySearch(want, l.No)
			if wanted && b.Len() >= grepContentMaxBytes {
				next := g.p.Offset + taken + done
				fmt.Fprintf(&b, "[output cut at %d KB: use offset=%d for the rest]\n", grepContentMaxBytes>>10, next)
				return Text(strings.TrimSuffix(b.String(), "\n")).WithMeta("lines", total), nil
			}
			if wanted {
				done++
			}
			if withContext && b.Len() > 0 && (rel != lastFile || l.No != lastNo+1) {
				b.WriteString("--\n")
			}
			lastFile, lastNo = rel, l.No
			sep := '-'
			if _, in := slices.BinarySearch(h.Lines, l.No); l.Match || in {
				sep = ':'
			}
			fmt.Fprintf(&b, "%s%c%d%c %s\n", rel, sep, l.No, sep, g.cutLine(l, sep == ':'))
		}
		taken += len(want)
	}
	if next := g.p.Offset + taken; next < total {
		fmt.Fprintf(&b, "[more results: use offset=%d]\n", next)
	}
	return Text(strings.TrimSuffix(b.String(), "\n")).WithMeta("lines", total), nil
}

// cutLine shortens a line longer than grepMaxLineChars characters to a
// window of that many, around the match on a matching line, marking each
// cut end with "…".
func (g *grepRun) cutLine(l search.Line, match bool) string {
	text := l.Text
	n := utf8.RuneCountInString(text)
	if n <= grepMaxLineChars && !l.Long {
		return text
	}
	startRune := 0
	if match {
		if i, _ := g.pat.MatchIndex(text); i > 0 {
			if at := utf8.RuneCountInString(text[:i]); at > grepMaxLineChars-100 {
				startRune = min(at-100, max(0, n-grepMaxLineChars))
			}
		}
	}
	from := byteOffset(text, startRune)
	to := from + byteOffset(text[from:], grepMaxLineChars)
	out := text[from:to]
	if from > 0 {
		out = "…" + out
	}
	if to < len(text) || l.Long {
		out += "…"
	}
	return out
}

// byteOffset returns the byte offset of the n-th rune of s (len(s) when s
// is shorter).
func byteOffset(s string, n int) int {
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}
