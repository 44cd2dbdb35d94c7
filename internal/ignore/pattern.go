package ignore

import (
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// matchKind selects the cheapest way to test a rule.
type matchKind uint8

const (
	kindLiteral matchKind = iota // the whole target equals lit
	kindSuffix                   // "*" + lit: the target ends with lit
	kindPrefix                   // lit + "*": the target starts with lit
	kindGlob                     // anything else: doublestar
)

// rule is one compiled line of an ignore file.
type rule struct {
	glob     string // doublestar pattern (braces escaped)
	lit      string // for the literal, suffix and prefix kinds
	kind     matchKind
	negate   bool // a "!" rule re-includes
	dirOnly  bool // a trailing "/" limits the rule to directories
	anchored bool // matched against the path relative to the file's dir
}

// parseRules compiles the text of one ignore file. Lines that cannot be
// compiled (an unclosed "[") are skipped, as git skips them.
func parseRules(text string) []rule {
	var out []rule
	for len(text) > 0 {
		line := text
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = ""
		}
		if r, ok := parseRule(line); ok {
			out = append(out, r)
		}
	}
	return out
}

// parseRule compiles one line; ok is false for blanks, comments and
// invalid patterns.
func parseRule(line string) (rule, bool) {
	line = strings.TrimSuffix(line, "\r")
	line = trimTrailingSpaces(line)
	if line == "" || line[0] == '#' {
		return rule{}, false
	}
	var r rule
	if line[0] == '!' {
		r.negate = true
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") && !strings.HasSuffix(line, "\\/") {
		r.dirOnly = true
		line = strings.TrimRight(line, "/")
	}
	if line == "" {
		return rule{}, false
	}
	if strings.Contains(line, "/") {
		r.anchored = true
		line = strings.TrimPrefix(line, "/")
		if line == "" {
			return rule{}, false
		}
	}
	r.glob = escapeBraces(line)
	if !doublestar.ValidatePattern(r.glob) {
		return rule{}, false
	}
	r.kind, r.lit = classify(line)
	return r, true
}

// trimTrailingSpaces removes trailing spaces that are not escaped with a
// backslash; an escaped one is kept as a plain space.
func trimTrailingSpaces(s string) string {
	for strings.HasSuffix(s, " ") {
		if strings.HasSuffix(s, "\\ ") {
			return s
		}
		s = s[:len(s)-1]
	}
	return s
}

// escapeBraces makes { and } literal: gitignore has no alternation, and
// doublestar would read them as one.
func escapeBraces(s string) string {
	if !strings.ContainsAny(s, "{}") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			b.WriteByte(c)
			b.WriteByte(s[i+1])
			i++
			continue
		}
		if c == '{' || c == '}' {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}

// classify finds a fast path for the common shapes: "name", "*.ext",
// "prefix*". Anything with other metacharacters or a "/" goes to doublestar.
func classify(p string) (matchKind, string) {
	const meta = "*?[\\"
	switch {
	case !strings.ContainsAny(p, meta):
		return kindLiteral, p
	case len(p) > 1 && p[0] == '*' && !strings.ContainsAny(p[1:], meta+"/"):
		return kindSuffix, p[1:]
	case len(p) > 1 && p[len(p)-1] == '*' && !strings.ContainsAny(p[:len(p)-1], meta+"/"):
		return kindPrefix, p[:len(p)-1]
	}
	return kindGlob, ""
}

// matches reports whether the rule matches a path, given as its path
// relative to the rule file's directory and its base name.
func (r *rule) matches(rel, base string, isDir bool) bool {
	if r.dirOnly && !isDir {
		return false
	}
	target := base
	if r.anchored {
		target = rel
	}
	switch r.kind {
	case kindLiteral:
		return target == r.lit
	case kindSuffix:
		return strings.HasSuffix(target, r.lit) && !strings.Contains(target[:len(target)-len(r.lit)], "/")
	case kindPrefix:
		return strings.HasPrefix(target, r.lit) && !strings.Contains(target[len(r.lit):], "/")
	}
	return doublestar.MatchUnvalidated(r.glob, target)
}

// decision is what one set of rules says about a path.
type decision uint8

const (
	undecided decision = iota
	excluded
	included // a negated rule matched last
)

// decide applies rules, last match wins.
func decide(rules []rule, rel, base string, isDir bool) decision {
	for i := len(rules) - 1; i >= 0; i-- {
		if rules[i].matches(rel, base, isDir) {
			if rules[i].negate {
				return included
			}
			return excluded
		}
	}
	return undecided
}
