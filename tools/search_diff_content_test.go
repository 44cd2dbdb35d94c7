package tools

import (
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/internal/peer"
)

// contentQueries are content-mode searches (matching lines, context lines,
// inverted matches, non-ASCII patterns under a type filter) and rg's
// equivalent; outputs are compared file by file, line by line.
var contentQueries = []diffQuery{
	{`{"pattern": "todo", "mode": "content"}`, []string{"-n", "-S", "todo"}},
	{`{"pattern": "e", "invert": true, "mode": "content"}`, []string{"-n", "-S", "-v", "e"}},
	{`{"pattern": "line", "invert": true, "mode": "content", "type": "go"}`, []string{"-n", "-S", "-v", "-t", "go", "line"}},
	{`{"pattern": "todo", "mode": "content", "context_lines": 1}`, []string{"-n", "-S", "-C", "1", "todo"}},
	{`{"pattern": "todo", "mode": "content", "context_lines": 3}`, []string{"-n", "-S", "-C", "3", "todo"}},
	{`{"pattern": "package", "mode": "content", "after": 2}`, []string{"-n", "-S", "-A", "2", "package"}},
	{`{"pattern": "func", "mode": "content", "before": 2}`, []string{"-n", "-S", "-B", "2", "func"}},
	{`{"pattern": "e", "invert": true, "mode": "content", "context_lines": 1}`, []string{"-n", "-S", "-v", "-C", "1", "e"}},
	{`{"pattern": "καλημέρα", "mode": "content", "context_lines": 1}`, []string{"-n", "-S", "-C", "1", "καλημέρα"}},
	{`{"pattern": "mov|καλημέρα", "type": "asm", "mode": "content"}`, []string{"-n", "-S", "-t", "asm", "mov|καλημέρα"}},
	{`{"pattern": "Καλημέρα", "type": "asm"}`, []string{"-l", "-S", "-t", "asm", "Καλημέρα"}},
}

// rgLine is rg's "path:N:text" or "path-N-text" (-n, no heading).
var rgLine = regexp.MustCompile(`^(.+?)([:-])(\d+)([:-])(.*)$`)

// blocks groups output lines by file (and "--" separated groups within a
// file), in our format: "path:N: text" and "path-N- text".
func blocks(lines []string, fromRg bool) []string {
	var out []string
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.Join(cur, "\n"))
			cur = nil
		}
	}
	lastFile := ""
	for _, l := range lines {
		if l == "--" {
			flush()
			continue
		}
		// Not compared: lines over our 500-character cap (we cut them
		// around the match by design), and rg's note on a binary file it
		// had started to print (we skip binary files whole).
		if strings.HasPrefix(l, "long/") || strings.HasPrefix(l, "bin/") {
			continue
		}
		if fromRg {
			if m := rgLine.FindStringSubmatch(l); m != nil && m[2] == m[4] {
				l = m[1] + m[2] + m[3] + m[4] + " " + m[5]
			}
		}
		file := l
		if m := rgLine.FindStringSubmatch(l); m != nil {
			file = m[1]
		}
		if file != lastFile {
			flush()
			lastFile = file
		}
		cur = append(cur, strings.TrimRight(l, " "))
	}
	flush()
	slices.Sort(out)
	return out
}

// Content-mode output matches rg's line for line: inverted matches,
// context lines (before, after, both, overlapping, at file edges), and
// non-ASCII patterns, also under --type asm.
func TestGrepContentMatchesRipgrep(t *testing.T) {
	rg, err := exec.LookPath("rg")
	if err != nil {
		peer.Missing(t, "rg", "rg (ripgrep) is not on PATH; the differential test needs it (apt-get install ripgrep)")
	}
	s := newTestSession(t)
	buildSearchTree(t, s.Workspace.Root())
	writeFile(t, s, "asm/start.s", "; καλημέρα κόσμε\nmov eax, 1\n\nΚαλημέρα again\nret\n")
	for _, q := range contentQueries {
		t.Run(q.args, func(t *testing.T) {
			theirs := runExternal(t, s, rg, append([]string{"--no-config", "--no-heading"}, q.rg...)...)
			ours := ourPaths(t, s, Grep(), q.args)
			if slices.Contains(q.rg, "-l") {
				compareSets(t, ours, theirs)
				return
			}
			compareSets(t, blocks(ours, false), blocks(theirs, true))
		})
	}
}
