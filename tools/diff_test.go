package tools

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

func TestUnifiedDiffFormat(t *testing.T) {
	cases := []struct {
		name, old, new, want string
		added, removed       int
	}{
		{"equal", "a\nb\n", "a\nb\n", "", 0, 0},
		{"one line changed", "a\nb\nc\n", "a\nB\nc\n",
			"--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n", 1, 1},
		{"grown from empty", "", "x\ny\n",
			"--- a/f\n+++ b/f\n@@ -0,0 +1,2 @@\n+x\n+y\n", 2, 0},
		{"emptied", "x\n", "",
			"--- a/f\n+++ b/f\n@@ -1 +0,0 @@\n-x\n", 0, 1},
		{"no final newline added", "a\nb", "a\nb\n",
			"--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n", 1, 1},
		{"context is three lines", "1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\nX\n6\n7\n8\n9\n",
			"--- a/f\n+++ b/f\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+X\n 6\n 7\n 8\n", 1, 1},
		{"far changes are two hunks",
			"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "X\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\nY\n",
			"--- a/f\n+++ b/f\n@@ -1,4 +1,4 @@\n-1\n+X\n 2\n 3\n 4\n@@ -9,4 +9,4 @@\n 9\n 10\n 11\n-12\n+Y\n", 2, 2},
		{"near changes share a hunk",
			"1\n2\n3\n4\n5\n6\n7\n8\n", "X\n2\n3\n4\n5\n6\n7\nY\n",
			"--- a/f\n+++ b/f\n@@ -1,8 +1,8 @@\n-1\n+X\n 2\n 3\n 4\n 5\n 6\n 7\n-8\n+Y\n", 2, 2},
		{"insertion in the middle", "a\nb\nc\nd\n", "a\nb\nnew\nc\nd\n",
			"--- a/f\n+++ b/f\n@@ -1,4 +1,5 @@\n a\n b\n+new\n c\n d\n", 1, 0},
		{"crlf kept", "a\r\nb\r\n", "a\r\nc\r\n",
			"--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\r\n-b\r\n+c\r\n", 1, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := unifiedDiff("f", "f", []byte(c.old), []byte(c.new))
			if d.Text != c.want || d.Added != c.added || d.Removed != c.removed {
				t.Errorf("got +%d -%d\n%s\nwant +%d -%d\n%s", d.Added, d.Removed, d.Text, c.added, c.removed, c.want)
			}
			if c.want != "" {
				checkApplies(t, c.old, c.new, d.Text)
			}
		})
	}
}

func TestUnifiedDiffBinaryAndRename(t *testing.T) {
	d := unifiedDiff("x.bin", "x.bin", []byte("a\x00b"), []byte("a\x00c"))
	if d.Text != "Binary files a/x.bin and b/x.bin differ\n" {
		t.Errorf("binary: %q", d.Text)
	}
	// A move without a change still names both sides.
	d = unifiedDiff("old.txt", "new.txt", []byte("same\n"), []byte("same\n"))
	if d.Text != "--- a/old.txt\n+++ b/new.txt\n" {
		t.Errorf("rename: %q", d.Text)
	}
	// A file that does not exist on one side is /dev/null there.
	d = unifiedDiff("", "new.txt", nil, []byte("x\n"))
	if d.Text != "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+x\n" || d.Added != 1 {
		t.Errorf("created: %q", d.Text)
	}
	d = unifiedDiff("gone.txt", "", []byte("x\ny\n"), nil)
	if d.Text != "--- a/gone.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-x\n-y\n" || d.Removed != 2 {
		t.Errorf("deleted: %q", d.Text)
	}
}

// The script is minimal: its changes equal n+m-2·LCS, checked against a
// dynamic-programming LCS on random small inputs over a tiny alphabet
// (many repeated lines, the hard case for a diff).
func TestUnifiedDiffMinimalAndApplies(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		old, new := randomText(r), randomText(r)
		d := unifiedDiff("f", "f", []byte(old), []byte(new))
		if old != new {
			checkApplies(t, old, new, d.Text)
		} else if d.Text != "" {
			t.Fatalf("equal texts gave a diff: %q", d.Text)
		}
		a, b := splitLines([]byte(old)), splitLines([]byte(new))
		if want := len(a) + len(b) - 2*lcs(a, b); d.Added+d.Removed != want {
			t.Fatalf("case %d: %d changes, minimal is %d\nold %q\nnew %q\n%s", i, d.Added+d.Removed, want, old, new, d.Text)
		}
	}
}

// Past diffMaxEdits the middle is replaced whole: still a diff that
// applies.
func TestUnifiedDiffLargeRewriteStaysCorrect(t *testing.T) {
	var old, new strings.Builder
	for i := range 3 * diffMaxEdits {
		fmt.Fprintf(&old, "old %d\n", i)
		fmt.Fprintf(&new, "new %d\n", i)
	}
	d := unifiedDiff("f", "f", []byte(old.String()), []byte(new.String()))
	if d.Added != 3*diffMaxEdits || d.Removed != 3*diffMaxEdits {
		t.Errorf("+%d -%d", d.Added, d.Removed)
	}
	checkApplies(t, old.String(), new.String(), d.Text)
}

func FuzzUnifiedDiff(f *testing.F) {
	f.Add("a\nb\nc\n", "a\nc\nd")
	f.Add("", "x")
	f.Add("1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\nx\n4\n5\n6\n7\ny\n9")
	f.Add("a\r\nb", "a\nb\r\n")
	f.Fuzz(func(t *testing.T, old, new string) {
		if looksBinary([]byte(old)[:min(len(old), binarySniffBytes)]) || looksBinary([]byte(new)[:min(len(new), binarySniffBytes)]) {
			return
		}
		d := unifiedDiff("f", "f", []byte(old), []byte(new))
		if old == new {
			if d.Text != "" {
				t.Fatalf("equal texts gave a diff: %q", d.Text)
			}
			return
		}
		checkApplies(t, old, new, d.Text)
	})
}

func randomText(r *rand.Rand) string {
	var b strings.Builder
	for range r.IntN(12) {
		b.WriteString(string(rune('a' + r.IntN(3))))
		b.WriteByte('\n')
	}
	if r.IntN(4) == 0 {
		b.WriteString("z")
	}
	return b.String()
}

func lcs(a, b []string) int {
	dp := make([][]int, len(a)+1)
	for i := range dp {
		dp[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	return dp[0][0]
}

// checkApplies applies diff to old, as patch would, and wants new.
func checkApplies(t *testing.T, old, new, diff string) {
	t.Helper()
	got, err := applyUnified(old, diff)
	if err != nil {
		t.Fatalf("diff does not apply: %v\nold %q\nnew %q\n%s", err, old, new, diff)
	}
	if got != new {
		t.Fatalf("diff applied gives %q, want %q\n%s", got, new, diff)
	}
}

// applyUnified is a strict unified-diff applier for the tests: every
// context and removed line must match, every count must add up.
func applyUnified(old, diff string) (string, error) {
	src := splitLines([]byte(old))
	lines := strings.SplitAfter(diff, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "--- ") || !strings.HasPrefix(lines[1], "+++ ") {
		return "", fmt.Errorf("no header")
	}
	var out strings.Builder
	pos := 0 // next old line to copy
	for i := 2; i < len(lines); {
		as, ac, _, bc, err := parseHunkHeader(lines[i])
		if err != nil {
			return "", err
		}
		i++
		// The hunk's body: each line with its text; a marker line strips
		// the line end of the line before it.
		type entry struct {
			op   byte
			text string
		}
		var body []entry
		for ; i < len(lines) && !strings.HasPrefix(lines[i], "@@ "); i++ {
			l := lines[i]
			switch {
			case strings.HasPrefix(l, "\\ "):
				if len(body) == 0 || !strings.HasSuffix(body[len(body)-1].text, "\n") {
					return "", fmt.Errorf("stray marker %q", l)
				}
				body[len(body)-1].text = strings.TrimSuffix(body[len(body)-1].text, "\n")
			case l[0] == ' ' || l[0] == '-' || l[0] == '+':
				body = append(body, entry{l[0], l[1:]})
			default:
				return "", fmt.Errorf("bad line %q", l)
			}
		}
		first := as - 1
		if ac == 0 {
			first = as
		}
		if first < pos || first > len(src) {
			return "", fmt.Errorf("hunk at %d out of order", as)
		}
		for ; pos < first; pos++ {
			out.WriteString(src[pos])
		}
		seenA, seenB := 0, 0
		for _, e := range body {
			if e.op != '+' {
				if pos >= len(src) || src[pos] != e.text {
					return "", fmt.Errorf("line %d: %q does not match %q", pos+1, e.text, at(src, pos))
				}
				pos++
				seenA++
			}
			if e.op != '-' {
				out.WriteString(e.text)
				seenB++
			}
		}
		if seenA != ac || seenB != bc {
			return "", fmt.Errorf("hunk counts -%d +%d, saw -%d +%d", ac, bc, seenA, seenB)
		}
	}
	for ; pos < len(src); pos++ {
		out.WriteString(src[pos])
	}
	return out.String(), nil
}

func at(src []string, i int) string {
	if i < len(src) {
		return src[i]
	}
	return "(end of file)"
}

func parseHunkHeader(l string) (as, ac, bs, bc int, err error) {
	var a, b string
	if _, err = fmt.Sscanf(l, "@@ -%s +%s @@", &a, &b); err != nil {
		return 0, 0, 0, 0, fmt.Errorf("bad hunk header %q", l)
	}
	parse := func(s string) (int, int, error) {
		start, count, ok := strings.Cut(s, ",")
		st, err := strconv.Atoi(start)
		if err != nil {
			return 0, 0, err
		}
		if !ok {
			return st, 1, nil
		}
		c, err := strconv.Atoi(count)
		return st, c, err
	}
	if as, ac, err = parse(a); err != nil {
		return
	}
	bs, bc, err = parse(b)
	return
}

// BenchmarkUnifiedDiff measures a one-line edit in a 10,000-line file (the
// common case) and a rewrite of every line of a 5,000-line file (the search
// gives up at diffMaxEdits and shows the middle replaced whole).
func BenchmarkUnifiedDiff(b *testing.B) {
	var big strings.Builder
	for i := range 10_000 {
		fmt.Fprintf(&big, "line %d of a large file\n", i)
	}
	old := big.String()
	edited := strings.Replace(old, "line 5000 of", "LINE 5000 OF", 1)
	var r1, r2 strings.Builder
	for i := range 5_000 {
		fmt.Fprintf(&r1, "old %d\n", i)
		fmt.Fprintf(&r2, "new %d\n", i%7)
	}
	for _, c := range []struct{ name, old, new string }{{"one-edit-10k", old, edited}, {"rewrite-5k", r1.String(), r2.String()}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				unifiedDiff("f", "f", []byte(c.old), []byte(c.new))
			}
		})
	}
}
