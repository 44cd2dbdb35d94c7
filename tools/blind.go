package tools

import (
	"crypto/sha256"
	"errors"
)

// unreadError refuses a write to an existing file whose current content
// the agent has not read in this session (never read, or changed on disk
// since): a blind write. Its text is meant for the model.
type unreadError struct{ msg string }

func (e *unreadError) Error() string { return e.msg }

// isBlind reports whether err, or an error it wraps, is an unreadError.
func isBlind(err error) bool {
	var u *unreadError
	return errors.As(err, &u)
}

// Refusal is the error result for err; a blind write's carries the
// metadata blind: true, which the run's metrics count.
func Refusal(err error) Result {
	r := Errorf("%v", err)
	if isBlind(err) {
		r = r.WithMeta("blind", true)
	}
	return r
}

// ReadCurrent reports whether the session's last read (or write) of abs
// saw exactly content.
func (t *ReadTracker) ReadCurrent(abs string, content []byte) bool {
	h, ok := t.hash(abs)
	return ok && h == sha256.Sum256(content)
}
