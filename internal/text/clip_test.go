package text

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClipKeepsCharactersWhole(t *testing.T) {
	s := "héllo wörld — 日本語のテキスト 🎉🎉"
	for n := 0; n <= len(s)+1; n++ {
		c := Cut(s, n)
		if len(c) > n || !utf8.ValidString(c) || !strings.HasPrefix(s, c) {
			t.Fatalf("Cut(%d) = %q", n, c)
		}
		if n < len(s) && len(c) < n-3 {
			t.Fatalf("Cut(%d) = %q cut more than a character", n, c)
		}
		cl := Clip(s, n)
		if !utf8.ValidString(cl) || (n < len(s) && !strings.HasSuffix(cl, "…")) || (n >= len(s) && cl != s) {
			t.Fatalf("Clip(%d) = %q", n, cl)
		}
	}
}
