package tools

import (
	"crypto/sha256"
	"encoding/hex"
)

// Snapshot returns what the tracker knows (file → hex SHA-256 of the
// content the agent last read or wrote), for a checkpoint, so that a
// resumed agent may edit the files it read before the run stopped.
func (t *ReadTracker) Snapshot() map[string]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.reads) == 0 {
		return nil
	}
	out := make(map[string]string, len(t.reads))
	for p, h := range t.reads {
		out[p] = hex.EncodeToString(h[:])
	}
	return out
}

// Restore adds the entries of a Snapshot. An entry whose hash is not a
// SHA-256 in hex is skipped: that file counts as unread. A file changed
// on disk since still counts as unread when an edit checks it.
func (t *ReadTracker) Restore(snap map[string]string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for p, s := range snap {
		var h [sha256.Size]byte
		if b, err := hex.DecodeString(s); err == nil && len(b) == len(h) {
			copy(h[:], b)
			t.reads[p] = h
		}
	}
}
