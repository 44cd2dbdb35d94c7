package messages

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// ScanEvent reads an event envelope in the exact form json.Marshal gives
// an Event (its fields in order, no white space, no escapes in keys or in
// the envelope's strings), without decoding its data: data is checked to
// be valid JSON and kept as it is (ev.Data aliases b). It reports false for
// anything else, which the caller decodes the ordinary way instead
// (json.Unmarshal, then json.Marshal to pass it on). Whatever ScanEvent
// accepts, json.Unmarshal decodes to the very same Event, so its bytes can
// be passed on unchanged: the relay of events from nodes checks an event's
// envelope with it and publishes the bytes it checked.
func ScanEvent(b []byte) (ev Event, ok bool) {
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return ev, false
	}
	s := scanner{b: b[1 : len(b)-1]}
	next := 0 // the index in scanKeys the next key may have, at least
	for first := true; s.more(); first = false {
		if !first && !s.byte(',') {
			return ev, false
		}
		kb, ok := s.raw()
		if !ok || !s.byte(':') {
			return ev, false
		}
		i := scanIndex(kb, next)
		if i < 0 {
			return ev, false
		}
		next = i + 1
		key := scanKeys[i]
		if key == "data" {
			// The last field: the rest is its value, with no white space
			// around it (json.Unmarshal would keep the value only).
			v := s.b[s.at:]
			if len(v) == 0 || isSpace(v[0]) || isSpace(v[len(v)-1]) || v[0] == 'n' || !json.Valid(v) {
				return ev, false
			}
			ev.Data = json.RawMessage(v)
			return ev, true
		}
		if !s.field(&ev, key) {
			return ev, false
		}
	}
	return ev, true
}

// scanKeys are the keys of an Event in the order json.Marshal writes them.
var scanKeys = []string{"v", "id", "time", "run", "agent", "parent", "kind", "node", "attempt", "seq", "type", "data"}

// scanIndex is key's index in scanKeys when it is at from or later; -1
// otherwise (unknown, repeated or out of order).
func scanIndex(key []byte, from int) int {
	for i := from; i < len(scanKeys); i++ {
		if string(key) == scanKeys[i] {
			return i
		}
	}
	return -1
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// scanner reads the inside of an envelope object.
type scanner struct {
	b  []byte
	at int
}

func (s *scanner) more() bool { return s.at < len(s.b) }

func (s *scanner) byte(c byte) bool {
	if s.at < len(s.b) && s.b[s.at] == c {
		s.at++
		return true
	}
	return false
}

// str reads a string without escapes or control characters, of valid
// UTF-8 (json.Unmarshal would replace invalid bytes).
func (s *scanner) str() (string, bool) {
	v, ok := s.raw()
	return string(v), ok
}

// raw is str's bytes.
func (s *scanner) raw() ([]byte, bool) {
	if !s.byte('"') {
		return nil, false
	}
	end := bytes.IndexByte(s.b[s.at:], '"')
	if end < 0 {
		return nil, false
	}
	v := s.b[s.at : s.at+end]
	for _, c := range v {
		if c < 0x20 || c == '\\' {
			return nil, false
		}
	}
	if !utf8.Valid(v) {
		return nil, false
	}
	s.at += end + 1
	return v, true
}

// uint reads an unsigned integer without sign, fraction, exponent or
// leading zero.
func (s *scanner) uint() (uint64, bool) {
	start := s.at
	for s.at < len(s.b) && s.b[s.at] >= '0' && s.b[s.at] <= '9' {
		s.at++
	}
	digits := s.b[start:s.at]
	if len(digits) == 0 || len(digits) > 1 && digits[0] == '0' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(digits), 10, 63)
	return n, err == nil
}

// field reads the value of key into ev.
func (s *scanner) field(ev *Event, key string) bool {
	switch key {
	case "v", "attempt", "seq":
		n, ok := s.uint()
		switch key {
		case "v":
			ev.V = int(n)
		case "attempt":
			ev.Attempt = int(n)
		default:
			ev.Seq = n
		}
		return ok
	case "time":
		start := s.at
		if _, ok := s.raw(); !ok {
			return false
		}
		return ev.Time.UnmarshalJSON(s.b[start:s.at]) == nil
	}
	v, ok := s.str()
	switch key {
	case "id":
		ev.ID = v
	case "run":
		ev.Run = v
	case "agent":
		ev.Agent = v
	case "parent":
		ev.Parent = v
	case "kind":
		ev.Kind = v
	case "node":
		ev.Node = v
	case "type":
		ev.Type = v
	}
	return ok
}
