package search

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"
)

// PatternOptions say how a grep pattern is read.
type PatternOptions struct {
	// Literal searches for the pattern text as is, metacharacters included.
	Literal bool
	// Multiline lets a match span lines: the pattern runs over whole files,
	// \n and classes such as \s match line ends, ^ and $ still anchor at
	// line boundaries, and . does not match \n unless (?s) is given.
	Multiline bool
	// CaseSensitive forces case sensitivity on (true) or off (false); nil
	// means smart case: a pattern without upper-case letters matches
	// regardless of case.
	CaseSensitive *bool
}

// Pattern is a compiled grep pattern, safe for concurrent use. Outside
// multiline mode it never matches a line end, so it can be run over a
// buffer of many lines and every match lies within one line.
type Pattern struct {
	re        *regexp.Regexp
	lits      []literal // one of these occurs in every match; nil if unknown
	pure      bool      // the pattern is exactly lits[0]: a sure hit is a match
	multiline bool
	fold      bool
}

// PatternError is a pattern that does not compile. Err is the parser's
// error; Expr, when known, is the part of the pattern it points at.
type PatternError struct {
	Pattern string
	Code    string
	Expr    string
}

func (e *PatternError) Error() string {
	if e.Expr != "" {
		return fmt.Sprintf("%s: `%s`", e.Code, e.Expr)
	}
	return e.Code
}

// CaseInsensitive reports whether the pattern ignores case.
func (p *Pattern) CaseInsensitive() bool { return p.fold }

// String is the regular expression actually run.
func (p *Pattern) String() string { return p.re.String() }

// CompilePattern compiles a grep pattern (RE2 syntax) under o.
func CompilePattern(pattern string, o PatternOptions) (*Pattern, error) {
	src := pattern
	if o.Literal {
		src = regexp.QuoteMeta(pattern)
	}
	fold := !hasUpper(pattern, o.Literal)
	if o.CaseSensitive != nil {
		fold = !*o.CaseSensitive
	}
	flags := syntax.Perl &^ syntax.OneLine // ^ and $ anchor at line ends
	if fold {
		flags |= syntax.FoldCase
	}
	if !o.Multiline {
		flags &^= syntax.ClassNL
	}
	ast, err := syntax.Parse(src, flags)
	if err != nil {
		return nil, patternError(pattern, err)
	}
	if !o.Multiline {
		if err := confineToLine(ast); err != nil {
			return nil, &PatternError{Pattern: pattern, Code: err.Error()}
		}
	}
	crlfEnds(ast)
	ast = ast.Simplify()
	re, err := regexp.Compile(ast.String())
	if err != nil {
		return nil, patternError(pattern, err)
	}
	p := &Pattern{re: re, multiline: o.Multiline, fold: fold}
	p.lits = required(ast)
	p.pure = !o.Multiline && ast.Op == syntax.OpLiteral && len(p.lits) == 1
	return p, nil
}

func patternError(pattern string, err error) error {
	var se *syntax.Error
	if errors.As(err, &se) {
		return &PatternError{Pattern: pattern, Code: se.Code.String(), Expr: se.Expr}
	}
	return &PatternError{Pattern: pattern, Code: err.Error()}
}

// errNewline is ripgrep's rule: outside multiline mode, a pattern that
// names a line end could never match.
var errNewline = errors.New(`the pattern contains a literal line end (\n), which can only match with multiline=true`)

// confineToLine rewrites ast so that it cannot match a line end: "." and
// classes lose \n, \A and \z become line anchors. A literal \n is an error.
func confineToLine(re *syntax.Regexp) error {
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if r == '\n' {
				return errNewline
			}
		}
	case syntax.OpAnyChar:
		re.Op = syntax.OpAnyCharNotNL
	case syntax.OpCharClass:
		re.Rune = removeNewline(re.Rune)
		if len(re.Rune) == 0 {
			re.Op = syntax.OpNoMatch
		}
	case syntax.OpBeginText:
		re.Op = syntax.OpBeginLine
	case syntax.OpEndText:
		re.Op = syntax.OpEndLine
		re.Flags &^= syntax.WasDollar
	}
	for _, sub := range re.Sub {
		if err := confineToLine(sub); err != nil {
			return err
		}
	}
	return nil
}

// crlfEnds lets $ match before a \r\n line end as before \n: every end
// of line assertion becomes \r?$ (ripgrep's --crlf).
func crlfEnds(re *syntax.Regexp) {
	if re.Op == syntax.OpEndLine {
		cr := &syntax.Regexp{Op: syntax.OpLiteral, Rune: []rune{'\r'}}
		*re = syntax.Regexp{Op: syntax.OpConcat, Sub: []*syntax.Regexp{
			{Op: syntax.OpQuest, Sub: []*syntax.Regexp{cr}},
			{Op: syntax.OpEndLine, Flags: re.Flags},
		}}
		return
	}
	for _, sub := range re.Sub {
		crlfEnds(sub)
	}
}

// removeNewline removes \n from a class given as sorted rune ranges.
func removeNewline(ranges []rune) []rune {
	out := make([]rune, 0, len(ranges)+2)
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		if lo > '\n' || hi < '\n' {
			out = append(out, lo, hi)
			continue
		}
		if lo < '\n' {
			out = append(out, lo, '\n'-1)
		}
		if hi > '\n' {
			out = append(out, '\n'+1, hi)
		}
	}
	return out
}

// hasUpper is smart case's test: does the pattern contain an upper-case
// letter that stands for itself? Escapes (\S, \W, \p{Lu}) and group names
// do not count.
func hasUpper(pattern string, literal bool) bool {
	if literal {
		return strings.IndexFunc(pattern, unicode.IsUpper) >= 0
	}
	for i := 0; i < len(pattern); {
		r, size := utf8.DecodeRuneInString(pattern[i:])
		switch {
		case r == '\\' && i+1 < len(pattern):
			i += 1 + skipEscape(pattern[i+1:])
			continue
		case r == '(' && strings.HasPrefix(pattern[i:], "(?P<"):
			i += skipTo(pattern[i:], '>')
			continue
		case r == '(' && strings.HasPrefix(pattern[i:], "(?<"):
			i += skipTo(pattern[i:], '>')
			continue
		case r == '[' && strings.HasPrefix(pattern[i:], "[[:"):
			i += 3 // [[:upper:]] is a class name, lower-case anyway
			continue
		case unicode.IsUpper(r):
			return true
		}
		i += size
	}
	return false
}

// skipEscape returns the length of the escape after a backslash.
func skipEscape(s string) int {
	switch s[0] {
	case 'p', 'P', 'x':
		if len(s) > 1 && s[1] == '{' {
			return skipTo(s, '}')
		}
		if s[0] == 'x' {
			return min(3, len(s))
		}
		return min(2, len(s))
	}
	_, size := utf8.DecodeRuneInString(s)
	return size
}

// skipTo returns the length of s up to and including the first c, or
// len(s).
func skipTo(s string, c byte) int {
	if i := strings.IndexByte(s, c); i >= 0 {
		return i + 1
	}
	return len(s)
}
