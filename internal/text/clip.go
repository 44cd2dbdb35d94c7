// Package text holds the one string helper the packages share: cutting
// text to a size without splitting a UTF-8 character.
package text

import "unicode/utf8"

// Clip returns s cut to at most n bytes on a character boundary, with "…"
// appended when it was cut (the mark is not counted in n).
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return Cut(s, n) + "…"
}

// Cut returns the longest prefix of s of at most n bytes that ends on a
// character boundary.
func Cut(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
