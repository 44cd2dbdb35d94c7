package search

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestHasUpper(t *testing.T) {
	t.Parallel()
	cases := []struct {
		pattern string
		literal bool
		want    bool
	}{
		{"hello", false, false},
		{"Hello", false, true},
		{`\w+\S\D\W\B`, false, false},
		{`\p{Lu}\P{Greek}\x{41}\x41`, false, false},
		{`(?P<Name>x)(?<Other>y)`, false, false},
		{`[[:upper:]]`, false, false},
		{`[A-Z]`, false, true},
		{`\.A`, false, true},
		{"Ärger", false, true},
		{"ärger", false, false},
		{`\W`, true, true}, // literal: the W is a W
	}
	for _, c := range cases {
		if got := hasUpper(c.pattern, c.literal); got != c.want {
			t.Errorf("hasUpper(%q, literal=%v) = %v, want %v", c.pattern, c.literal, got, c.want)
		}
	}
}

func TestCompilePatternErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		pattern   string
		multiline bool
		code      string
	}{
		{"func (x", false, "missing closing )"},
		{"a**", false, "invalid nested repetition operator"},
		{"[z-a]", false, "invalid character class range"},
		{`a\nb`, false, "literal line end"},
	}
	for _, c := range cases {
		_, err := CompilePattern(c.pattern, PatternOptions{Multiline: c.multiline})
		var pe *PatternError
		if !errors.As(err, &pe) || !strings.Contains(pe.Error(), c.code) {
			t.Errorf("CompilePattern(%q) error = %v, want a PatternError with %q", c.pattern, err, c.code)
		}
	}
	if _, err := CompilePattern(`a\nb`, PatternOptions{Multiline: true}); err != nil {
		t.Errorf(`a\nb in multiline mode: %v`, err)
	}
}

func TestConfineToLine(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ pattern, text string }{
		{`a\sb`, "a\nb"},
		{`a[^x]b`, "a\nb"},
		{`(?s)a.b`, "a\nb"},
		{`a\z`, "xa\nb"}, // \z anchors at a line end, so it must match here ...
	} {
		p, err := CompilePattern(c.pattern, PatternOptions{})
		if err != nil {
			t.Fatal(err)
		}
		loc := p.re.FindStringIndex(c.text)
		if c.pattern == `a\z` {
			if loc == nil || loc[0] != 1 {
				t.Errorf(`a\z on %q = %v, want a match at 1`, c.text, loc)
			}
			continue
		}
		if loc != nil {
			t.Errorf("%q matched across a line end in %q", c.pattern, c.text)
		}
	}
}

func TestRequiredLiterals(t *testing.T) {
	t.Parallel()
	cases := []struct {
		pattern string
		want    []string // "~" marks a case-folded literal
		pure    bool
	}{
		{"Foo", []string{"Foo"}, true},
		{"foo", []string{"~foo"}, true},
		{`Foo\d+Barbaz`, []string{"Barbaz"}, false},
		{`(Foo|Bar)\d`, []string{"Foo", "Bar"}, false},
		{`Func\w+Error`, []string{"Error"}, false},
		{`\w+`, nil, false},
		{`X*Y?`, nil, false},
		{`(?:Ab){2,}`, []string{"Ab"}, false},
		{"é", nil, false}, // a non-ASCII case-folded literal is left to the regexp
		{"É", []string{"É"}, true},
		{"ask", []string{"~ask"}, true},
	}
	for _, c := range cases {
		p, err := CompilePattern(c.pattern, PatternOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range p.lits {
			if l.fold {
				got = append(got, "~"+l.text)
			} else {
				got = append(got, l.text)
			}
		}
		if !slices.Equal(got, c.want) || p.pure != c.pure {
			t.Errorf("%q: literals %q pure %v, want %q pure %v", c.pattern, got, p.pure, c.want, c.pure)
		}
	}
}

// TestFinders compares each finder with a naive search on many texts.
func TestFinders(t *testing.T) {
	t.Parallel()
	texts := []string{"", "abc", "xxABCxxabcxxAbC", "ab\nc abc", strings.Repeat("zab", 50) + "abc",
		"aaaaaaab", "the error Error ERRORS err", "a.b a-b A.B",
		// an anchor byte so common that the finder falls back to bytes.Index
		strings.Repeat("I.s bIs ", 300) + "errors.Is" + strings.Repeat("sI", 50) + "errors.Is",
		"var once sync.Once; sync.once sync.Oncex ssync.Once"}
	lits := []literal{{text: "abc", fold: true}, {text: "abc"}, {text: "ABC"}, {text: "error", fold: true},
		{text: "a.b", fold: true}, {text: "ab", fold: true}, {text: "b"}, {text: "errors.Is"}, {text: "errors.is", fold: true},
		{text: "sync.Once"}, {text: "sync.once", fold: true}}
	for _, lit := range lits {
		for _, text := range texts {
			f := newFinder([]literal{lit})
			f.reset([]byte(text))
			for from := 0; from <= len(text); from++ {
				want := naiveIndex(text, lit, from)
				if got := f.next(from); got != want {
					t.Errorf("literal %+v in %q from %d: got %d, want %d", lit, text, from, got, want)
					break
				}
			}
		}
	}
	// A set finds the earliest of its members.
	set := []literal{{text: "err", fold: true}, {text: "b"}, {text: "zz"}}
	for _, text := range texts {
		f := newFinder(set)
		f.reset([]byte(text))
		for from := 0; from <= len(text); from++ {
			want := -1
			for _, l := range set {
				if i := naiveIndex(text, l, from); i >= 0 && (want < 0 || i < want) {
					want = i
				}
			}
			if got := f.next(from); got != want {
				t.Errorf("set in %q from %d: got %d, want %d", text, from, got, want)
				break
			}
		}
	}
}

// An exact literal is anchored on its rarest byte as source code has them,
// case kept: sync.Once on its O (rarer than y), not on a common letter.
func TestRarestByte(t *testing.T) {
	t.Parallel()
	for lit, want := range map[string]byte{"sync.Once": 'O', "ErrUnexpectedEOF": 'U', "errors.Is": 'I', "func main": 'm',
		"Overflow": 'w', "x": 'x', "é!": 0xc3} {
		if got := lit[rarestByte(lit)]; got != want {
			t.Errorf("rarestByte(%q) anchors on %q, want %q", lit, got, want)
		}
	}
}

func naiveIndex(text string, l literal, from int) int {
	hay := text[from:]
	if l.fold {
		hay = strings.Map(func(r rune) rune {
			if 'A' <= r && r <= 'Z' {
				return r + 32
			}
			return r
		}, hay)
	}
	i := strings.Index(hay, l.text)
	if i < 0 {
		return -1
	}
	return from + i
}
