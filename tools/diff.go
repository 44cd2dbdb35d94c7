package tools

import (
	"bytes"
	"fmt"
	"strings"
)

// diffContext is how many unchanged lines a hunk shows around a change.
const diffContext = 3

// diffMaxEdits bounds the Myers search: past this many differing lines
// (after the common head and tail are set aside) the middle is shown
// replaced whole, which is still a correct diff, only not a minimal one.
const diffMaxEdits = 1000

// diffMaxSteps bounds the search's work (diagonal steps) for the same
// reason, so a large rewrite costs milliseconds, not seconds.
const diffMaxSteps = 20_000_000

// fileDiff is a unified diff of one file and its line counts.
type fileDiff struct {
	Text    string // "" when nothing changed
	Added   int
	Removed int
}

// diffLine is one line of an edit script: ' ' kept (a and b set), '-'
// removed (a), '+' added (b); a and b index the old and new lines.
type diffLine struct {
	op   byte
	a, b int
}

// unifiedDiff returns the unified diff that turns old into new, with three
// lines of context, hunk headers and "\ No newline at end of file"
// markers, as diff -u writes it, headed "--- a/OLDPATH" and
// "+++ b/NEWPATH" ("/dev/null" for a path "": a side that does not
// exist). The same content under the same path gives no diff; a move
// without a change gives the headers alone. Binary content (a NUL byte or
// mostly invalid UTF-8 near the start) gives one line saying the files
// differ.
func unifiedDiff(oldPath, newPath string, old, new []byte) fileDiff {
	oldName, newName := diffName("a/", oldPath), diffName("b/", newPath)
	if bytes.Equal(old, new) {
		if oldPath == newPath {
			return fileDiff{}
		}
		return fileDiff{Text: fmt.Sprintf("--- %s\n+++ %s\n", oldName, newName)}
	}
	if looksBinary(old[:min(len(old), binarySniffBytes)]) || looksBinary(new[:min(len(new), binarySniffBytes)]) {
		return fileDiff{Text: fmt.Sprintf("Binary files %s and %s differ\n", oldName, newName)}
	}
	a, b := splitLines(old), splitLines(new)
	script := diffLines(a, b)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", oldName, newName)
	d := fileDiff{}
	for _, h := range hunks(script) {
		writeHunk(&out, script[h[0]:h[1]], a, b, &d)
	}
	d.Text = out.String()
	return d
}

// diffName is a diff header's file name: prefix+path, or /dev/null.
func diffName(prefix, path string) string {
	if path == "" {
		return "/dev/null"
	}
	return prefix + path
}

// splitLines splits s after each line end; a last line without one is a
// line too.
func splitLines(s []byte) []string {
	var out []string
	for len(s) > 0 {
		i := bytes.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, string(s))
			break
		}
		out = append(out, string(s[:i+1]))
		s = s[i+1:]
	}
	return out
}

// diffLines computes an edit script from a to b: the common head and tail,
// and Myers' shortest edit script for the middle (bounded, see
// diffMaxEdits).
func diffLines(a, b []string) []diffLine {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	script := make([]diffLine, 0, len(a)+len(b)-pre-suf)
	for i := range pre {
		script = append(script, diffLine{op: ' ', a: i, b: i})
	}
	script = append(script, myers(a, b, pre, len(a)-suf, pre, len(b)-suf)...)
	for i := range suf {
		script = append(script, diffLine{op: ' ', a: len(a) - suf + i, b: len(b) - suf + i})
	}
	return script
}

// myers returns the shortest edit script from a[a0:a1] to b[b0:b1], or the
// whole range removed then added when that takes more than diffMaxEdits
// edits or diffMaxSteps steps to find.
func myers(a, b []string, a0, a1, b0, b1 int) []diffLine {
	// Lines become small integers, so the search compares ints.
	ids := map[string]int32{}
	intern := func(ls []string) []int32 {
		out := make([]int32, len(ls))
		for i, l := range ls {
			id, ok := ids[l]
			if !ok {
				id = int32(len(ids))
				ids[l] = id
			}
			out[i] = id
		}
		return out
	}
	x, y := intern(a[a0:a1]), intern(b[b0:b1])
	n, m := len(x), len(y)
	whole := func() []diffLine {
		out := make([]diffLine, 0, n+m)
		for i := range n {
			out = append(out, diffLine{op: '-', a: a0 + i})
		}
		for j := range m {
			out = append(out, diffLine{op: '+', b: b0 + j})
		}
		return out
	}
	if n == 0 || m == 0 {
		return whole()
	}
	maxD := min(n+m, diffMaxEdits)
	off := maxD + 1
	v := make([]int32, 2*off+1)
	var trace [][]int32 // v[k] of every round, k in [-d, d]
	steps := 0
	for d := 0; d <= maxD; d++ {
		row := make([]int32, 2*d+1)
		for k := -d; k <= d; k += 2 {
			var i int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				i = int(v[off+k+1]) // down: an added line
			} else {
				i = int(v[off+k-1]) + 1 // right: a removed line
			}
			j := i - k
			for i < n && j < m && x[i] == y[j] {
				i++
				j++
				steps++
			}
			v[off+k] = int32(i)
			row[k+d] = int32(i)
			if i >= n && j >= m {
				trace = append(trace, row)
				return backtrack(trace, n, m, a0, b0)
			}
			steps++
		}
		trace = append(trace, row)
		if steps > diffMaxSteps {
			break
		}
	}
	return whole()
}

// backtrack walks the search's rounds back from (n, m) to (0, 0) and
// returns the edit script in order. trace[d] holds the furthest x reached
// on each diagonal k in [-d, d] (index k+d) after round d.
func backtrack(trace [][]int32, n, m, a0, b0 int) []diffLine {
	var rev []diffLine
	x, y := n, m
	for d := len(trace) - 1; d > 0; d-- {
		prev := trace[d-1]
		at := func(k int) int { return int(prev[k+d-1]) }
		k := x - y
		down := k == -d || (k != d && at(k-1) < at(k+1))
		pk := k - 1
		if down {
			pk = k + 1
		}
		px := at(pk)
		py := px - pk
		mx, my := px+1, py // where the edit lands
		if down {
			mx, my = px, py+1
		}
		for x > mx && y > my {
			x--
			y--
			rev = append(rev, diffLine{op: ' ', a: a0 + x, b: b0 + y})
		}
		if down {
			rev = append(rev, diffLine{op: '+', b: b0 + py})
		} else {
			rev = append(rev, diffLine{op: '-', a: a0 + px})
		}
		x, y = px, py
	}
	for x > 0 && y > 0 {
		x--
		y--
		rev = append(rev, diffLine{op: ' ', a: a0 + x, b: b0 + y})
	}
	out := make([]diffLine, len(rev))
	for i, l := range rev {
		out[len(rev)-1-i] = l
	}
	return out
}

// hunks groups the script's changes with their context: [start, end)
// ranges of the script, changes closer than two contexts sharing a hunk.
func hunks(script []diffLine) [][2]int {
	var out [][2]int
	for i := 0; i < len(script); {
		if script[i].op == ' ' {
			i++
			continue
		}
		start := max(0, i-diffContext)
		end := i
		for end < len(script) {
			if script[end].op != ' ' {
				end++
				continue
			}
			run := end
			for run < len(script) && script[run].op == ' ' {
				run++
			}
			if run == len(script) || run-end > 2*diffContext {
				end = min(len(script), end+diffContext)
				break
			}
			end = run
		}
		out = append(out, [2]int{start, end})
		i = end
	}
	return out
}

// writeHunk writes one hunk: its header and lines, counting the changes.
func writeHunk(out *strings.Builder, h []diffLine, a, b []string, d *fileDiff) {
	aStart, bStart, aCount, bCount := -1, -1, 0, 0
	for _, l := range h {
		if l.op != '+' {
			if aStart < 0 {
				aStart = l.a
			}
			aCount++
		}
		if l.op != '-' {
			if bStart < 0 {
				bStart = l.b
			}
			bCount++
		}
	}
	fmt.Fprintf(out, "@@ -%s +%s @@\n", hunkRange(aStart, aCount), hunkRange(bStart, bCount))
	for _, l := range h {
		var text string
		switch l.op {
		case ' ':
			text = a[l.a]
		case '-':
			text = a[l.a]
			d.Removed++
		case '+':
			text = b[l.b]
			d.Added++
		}
		out.WriteByte(l.op)
		out.WriteString(text)
		if !strings.HasSuffix(text, "\n") {
			out.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

// hunkRange renders one side's range as diff -u does: "start,count", or
// "start" alone for one line. A side with no lines in a hunk is an empty
// file (any other hunk has a line of each side as context): "0,0".
func hunkRange(start, count int) string {
	switch count {
	case 0:
		return "0,0"
	case 1:
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, count)
}
