package tools

import (
	"bytes"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"
)

// looksBinary reports whether the first bytes of a file say it is binary:
// a NUL byte, or mostly bytes that are not valid UTF-8.
func looksBinary(sniff []byte) bool {
	if len(sniff) == 0 {
		return false
	}
	if bytes.IndexByte(sniff, 0) >= 0 {
		return true
	}
	invalid := 0
	for i := 0; i < len(sniff); {
		r, size := utf8.DecodeRune(sniff[i:])
		if r == utf8.RuneError && size == 1 {
			// A sequence cut by the end of the sample is not evidence.
			if len(sniff)-i < utf8.UTFMax && !utf8.FullRune(sniff[i:]) {
				break
			}
			invalid++
		}
		i += size
	}
	return invalid*10 > len(sniff)*3 // more than 30% of the sample
}

// detectType names the content type of a binary sample, without the
// parameters http.DetectContentType adds to text types. A sample it calls
// text is text in some encoding other than UTF-8 (we only get here for
// binary-looking samples), and the name says so.
func detectType(sniff []byte) string {
	t := http.DetectContentType(sniff)
	if i := strings.IndexByte(t, ';'); i >= 0 {
		t = t[:i]
	}
	if strings.HasPrefix(t, "text/") {
		t += ", not UTF-8"
	}
	return t
}

// maxSuggestions is how many similar names a not-found error offers.
const maxSuggestions = 3

// fileNotFound is the error for a missing path, with the most similar
// names in the same directory when there are any.
func fileNotFound(s *Session, abs, display string) Result {
	msg := "File not found: " + display
	if names := similarNames(s, abs); len(names) > 0 {
		msg += "\nDid you mean: " + strings.Join(names, ", ") + "?"
	}
	return Errorf("%s", msg)
}

// similarNames returns, as displayed paths, the entries of abs's directory
// whose names are close to its base name: a small edit distance, the same
// name with another extension or case, or one name extending the other.
func similarNames(s *Session, abs string) []string {
	dir, want := filepath.Dir(abs), strings.ToLower(filepath.Base(abs))
	f, fi, err := s.Workspace.open(dir)
	if err != nil {
		return nil
	}
	if !fi.IsDir() {
		f.Close()
		return nil
	}
	entries, _ := f.ReadDir(2000) // a bound keeps a huge directory cheap
	f.Close()
	type cand struct {
		name string
		dist int
	}
	var cands []cand
	wantStem := strings.TrimSuffix(want, filepath.Ext(want))
	for _, e := range entries {
		name := e.Name()
		low := strings.ToLower(name)
		d := nameDistance(want, low)
		stem := strings.TrimSuffix(low, filepath.Ext(low))
		near := d <= max(1, len(want)/3) ||
			(stem == wantStem && stem != "") ||
			(len(want) >= 3 && strings.HasPrefix(low, want)) ||
			(len(low) >= 3 && strings.HasPrefix(want, low))
		if near {
			cands = append(cands, cand{name, d})
		}
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].dist != cands[j].dist {
			return cands[i].dist < cands[j].dist
		}
		return cands[i].name < cands[j].name
	})
	var out []string
	for _, c := range cands[:min(len(cands), maxSuggestions)] {
		out = append(out, s.Workspace.Display(filepath.Join(dir, c.name)))
	}
	return out
}

// nameDistance is the Levenshtein distance between two short names (runes),
// each cut to 128 runes to bound the work.
func nameDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	ra, rb = ra[:min(len(ra), 128)], rb[:min(len(rb), 128)]
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
