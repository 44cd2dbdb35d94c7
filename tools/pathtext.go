package tools

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// listPath is how a path appears in a listing: as it is, or, when it holds
// a line end, another control character or invalid UTF-8, quoted with Go
// escapes ("a\nb.txt"), so that a listing is never ambiguous. Tools that
// take a path accept the quoted form back.
func listPath(p string) string {
	if utf8.ValidString(p) && !strings.ContainsFunc(p, unicode.IsControl) {
		return p
	}
	return strconv.Quote(p)
}

// unquotePath turns a quoted listing path back into the name.
func unquotePath(p string) string {
	if len(p) >= 2 && p[0] == '"' && p[len(p)-1] == '"' {
		if u, err := strconv.Unquote(p); err == nil {
			return u
		}
	}
	return p
}
