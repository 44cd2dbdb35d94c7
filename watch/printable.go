package watch

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable returns s as it may be drawn on a terminal. Everything in a
// frame comes from the wire or from a model (task text, agent IDs, errors,
// tool arguments, questions), so a control character could move the
// cursor, retitle the window or hide text: control characters (C0, DEL,
// C1) and bidirectional-text controls are shown escaped (\x1b, \u202e),
// and bytes that are not UTF-8 as \xNN. Valid UTF-8 text is unchanged.
func Printable(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x80 && unicode.IsControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unicode.IsControl(r) || isBidiControl(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// isBidiControl reports the format characters that reorder text on screen.
func isBidiControl(r rune) bool {
	return (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069) || r == 0x200E || r == 0x200F || r == 0x061C
}

// runeWidth is the number of terminal columns r takes: 0 for combining
// marks and other zero-width format characters, 2 for East Asian wide and
// fullwidth characters and most emoji, 1 otherwise.
func runeWidth(r rune) int {
	switch {
	case r == 0 || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r) || r == 0x200B || r == 0x200D || r == 0xFEFF:
		return 0
	case r < 0x1100:
		return 1
	case r <= 0x115F, r >= 0x2E80 && r <= 0x303E, r >= 0x3041 && r <= 0x33FF, r >= 0x3400 && r <= 0x4DBF,
		r >= 0x4E00 && r <= 0x9FFF, r >= 0xA000 && r <= 0xA4CF, r >= 0xAC00 && r <= 0xD7A3, r >= 0xF900 && r <= 0xFAFF,
		r >= 0xFE30 && r <= 0xFE4F, r >= 0xFF00 && r <= 0xFF60, r >= 0xFFE0 && r <= 0xFFE6, r >= 0x1F300 && r <= 0x1F64F,
		r >= 0x1F900 && r <= 0x1F9FF, r >= 0x20000 && r <= 0x3FFFD:
		return 2
	}
	return 1
}

// Width is the number of terminal columns s takes (s printable).
func Width(s string) int {
	n := 0
	for _, r := range s {
		n += runeWidth(r)
	}
	return n
}

// fit makes s printable and cuts it to at most width columns, marking a
// cut with "…".
func fit(s string, width int) string {
	s = Printable(s)
	if width <= 0 || Width(s) <= width {
		return s
	}
	cols := 0
	for i, r := range s {
		w := runeWidth(r)
		if cols+w > width-1 {
			return s[:i] + "…"
		}
		cols += w
	}
	return s
}
