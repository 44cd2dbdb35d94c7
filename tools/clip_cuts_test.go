package tools

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// Every place a tool shortens user or model text for one line cuts on a
// character boundary: a multi-byte character straddling the cut is left
// out whole, never split into bytes that are not UTF-8.
func TestShortenedTextKeepsCharactersWhole(t *testing.T) {
	t.Parallel()
	// pad puts the first byte of "日" (3 bytes) at index at, so a cut at
	// at+1 or at+2 falls inside it.
	pad := func(at int) string {
		return strings.Repeat("a", at) + "日本語のテキスト" + strings.Repeat("b", 300)
	}
	cases := []struct {
		name string
		at   int // where the cut falls, about
		cut  func(string) string
	}{
		{"argument described", 40, func(s string) string { return describe(s) }},
		{"edit_file closest line", 200, func(s string) string { return editNotFound(s, s[:len(s)-5], "f.go").Text }},
		{"head cap", 100, func(s string) string { return HeadBytes(s, 100) }},
	}
	for _, c := range cases {
		// Put the multi-byte character on each side of the cut and across it.
		for at := c.at - 4; at <= c.at; at++ {
			t.Run(fmt.Sprintf("%s/%d", c.name, at), func(t *testing.T) {
				got := c.cut(pad(at))
				if !utf8.ValidString(got) || strings.ContainsRune(got, utf8.RuneError) {
					t.Fatalf("cut splits a character: %q", got)
				}
				if !strings.Contains(got, strings.Repeat("a", 30)) {
					t.Fatalf("cut lost the text: %q", got)
				}
				if strings.Contains(got, "b") {
					t.Fatalf("not cut: %q", got)
				}
			})
		}
	}
	if got := describe("héllo"); got != `string "héllo"` {
		t.Errorf("short string: %s", got)
	}
}
