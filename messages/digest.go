package messages

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
)

// ErrDigest marks an object whose bytes are not those its proven message
// names (or that comes without the SHA-256 that would prove it).
var ErrDigest = errors.New("digest mismatch")

// Content addresses. Every object a proven message points to (a
// changeset's patch in the changes bucket, a nested changeset's, a
// snapshot's bundle) is named together with its SHA-256 inside the
// proven body: the receiver checks the bytes it fetched against it before
// using them, so whoever else may write the bucket cannot replace them.

// Digest is the SHA-256 of b, in lowercase hex: the form of the
// *_sha256 fields.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// CheckDigest says whether b is what digest names; an error says what
// differs. what names the object for the error ("the patch r1/w.patch").
func CheckDigest(what string, b []byte, digest string) error {
	if digest == "" {
		return fmt.Errorf("%w: %s comes without the SHA-256 that would prove it", ErrDigest, what)
	}
	if got := Digest(b); got != digest {
		return fmt.Errorf("%w: %s has SHA-256 %.16s…, its proven message names %.16s…", ErrDigest, what, got, digest)
	}
	return nil
}

// isDigest reports whether s is a SHA-256 in lowercase hex.
func isDigest(s string) bool {
	return len(s) == 64 && isObjectID(s)
}

// checkDigestField refuses a digest field that is set but malformed.
func checkDigestField(what, s string) error {
	if s != "" && !isDigest(s) {
		return fmt.Errorf("%w: %s %q is not a SHA-256 in hex", ErrBadMessage, what, clipID(s))
	}
	return nil
}
