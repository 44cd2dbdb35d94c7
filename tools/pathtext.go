package tools

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// listPath is how a path (or a single name) appears in a listing: as it
// is, or quoted with Go escapes ("a\nb.txt") when it holds a line end,
// another control character, invalid UTF-8 or a double quote, so that a
// listing is never ambiguous: a name shown plain never starts with a
// quote, so it cannot be taken for a quoted one. Tools that take a path
// accept the quoted form back (unquotePath).
func listPath(p string) string {
	if utf8.ValidString(p) && !strings.ContainsFunc(p, unicode.IsControl) && !strings.ContainsRune(p, '"') {
		return p
	}
	return strconv.Quote(p)
}

// unquotePath turns a path as listings show it back into the name: a path
// quoted whole (find_files and grep quote whole paths), or one whose
// "/"-separated components are quoted (list_dir shows one name a line,
// which the caller joins to its directory). A quoted component that would
// stand for more than one component, or anything else, stays as it is.
func unquotePath(p string) string {
	if u, ok := unquoteName(p); ok {
		return u
	}
	if !strings.Contains(p, `"`) {
		return p
	}
	parts := strings.Split(p, "/")
	for i, part := range parts {
		if u, ok := unquoteName(part); ok && !strings.Contains(u, "/") {
			parts[i] = u
		}
	}
	return strings.Join(parts, "/")
}

// unquoteName unquotes a Go-quoted string.
func unquoteName(s string) (string, bool) {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return s, false
	}
	u, err := strconv.Unquote(s)
	return u, err == nil
}
