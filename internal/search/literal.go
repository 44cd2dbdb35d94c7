package search

import (
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// literal is a string that must occur in every match of a pattern (or,
// in a set, one of the set must).
type literal struct {
	text string // lower-cased when fold
	fold bool   // match ASCII letters regardless of case
	// unicodeFold marks a fold literal holding k or s: (?i)k also matches
	// the Kelvin sign and (?i)s the long s, which an ASCII comparison would
	// miss, so hits of such a literal are only candidates.
	unicodeFold bool
}

// maxLiterals bounds an alternation's literal set; beyond it scanning for
// each costs more than the regular expression would.
const maxLiterals = 8

// required returns a set of literals one of which occurs in every match of
// re, or nil when it finds none worth searching for.
func required(re *syntax.Regexp) []literal {
	switch re.Op {
	case syntax.OpLiteral:
		l, ok := makeLiteral(re.Rune, re.Flags&syntax.FoldCase != 0)
		if !ok {
			return nil
		}
		return []literal{l}
	case syntax.OpCapture, syntax.OpPlus:
		return required(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return required(re.Sub[0])
		}
	case syntax.OpAlternate:
		var set []literal
		for _, sub := range re.Sub {
			s := required(sub)
			if s == nil || len(set)+len(s) > maxLiterals {
				return nil
			}
			set = append(set, s...)
		}
		return set
	case syntax.OpConcat:
		return requiredConcat(re.Sub)
	}
	return nil
}

// requiredConcat joins adjacent literals of a concatenation and picks the
// best set among its parts.
func requiredConcat(subs []*syntax.Regexp) []literal {
	var best []literal
	consider := func(set []literal) {
		if set != nil && (best == nil || score(set) > score(best)) {
			best = set
		}
	}
	for i := 0; i < len(subs); {
		if subs[i].Op != syntax.OpLiteral {
			consider(required(subs[i]))
			i++
			continue
		}
		fold := subs[i].Flags&syntax.FoldCase != 0
		var runes []rune
		for i < len(subs) && subs[i].Op == syntax.OpLiteral && (subs[i].Flags&syntax.FoldCase != 0) == fold {
			runes = append(runes, subs[i].Rune...)
			i++
		}
		if l, ok := makeLiteral(runes, fold); ok {
			consider([]literal{l})
		}
	}
	return best
}

// score ranks a literal set: its shortest member's length, less for each
// extra member and for hits that need checking.
func score(set []literal) int {
	s := 1 << 20
	for _, l := range set {
		n := len(l.text) * 4
		if l.unicodeFold {
			n -= 3
		}
		s = min(s, n)
	}
	return s - (len(set) - 1)
}

// makeLiteral builds a literal from runes. Case-folded literals must be
// ASCII; ok is false otherwise.
func makeLiteral(runes []rune, fold bool) (literal, bool) {
	if len(runes) == 0 {
		return literal{}, false
	}
	text := string(runes)
	if !fold {
		return literal{text: text}, true
	}
	for _, r := range runes {
		if r >= utf8.RuneSelf {
			return literal{}, false
		}
	}
	lower := strings.ToLower(text)
	l := literal{text: lower, fold: true, unicodeFold: strings.ContainsAny(lower, "ks")}
	if l.unicodeFold && anchorIndex(lower) < 0 {
		return literal{}, false
	}
	return l, true
}
