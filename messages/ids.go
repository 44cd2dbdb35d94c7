package messages

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// PrintableID reports whether s can name a run, an agent, a node or a
// kind as it is shown to people: valid UTF-8 without control characters
// (C0, DEL, C1) or bidirectional-text controls. IDs reach terminals, logs
// and subjects; one that carries an escape sequence is refused at the wire.
func PrintableID(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) || isBidiControl(r) {
			return false
		}
	}
	return true
}

// isBidiControl reports the format characters that reorder text on
// screen (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F, U+061C).
func isBidiControl(r rune) bool {
	return (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069) || r == 0x200E || r == 0x200F || r == 0x061C
}

// checkID refuses an ID that cannot be one NATS subject token, or that
// carries control characters.
func checkID(what, s string) error {
	if s == "" || strings.ContainsAny(s, ". *>") || !PrintableID(s) {
		return fmt.Errorf("%w: %s %q is not a single printable token", ErrBadMessage, what, s)
	}
	return nil
}

// checkEnvelopeID refuses an envelope ID field (run, agent, parent, kind,
// node) with control characters; an empty optional one passes.
func checkEnvelopeID(what, s string) error {
	if !PrintableID(s) {
		return fmt.Errorf("event: %s %q has control characters or invalid UTF-8", what, s)
	}
	return nil
}

// checkOptID is checkID for an ID that may be absent.
func checkOptID(what, s string) error {
	if s == "" {
		return nil
	}
	return checkID(what, s)
}
