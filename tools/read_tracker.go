package tools

import (
	"crypto/sha256"
	"fmt"
	"sync"
)

// ReadTracker remembers, per agent session, which files were read and the
// hash of their content at that moment. edit_file, write_file and
// apply_patch consult it: writing a file the agent never read, or one that
// changed on disk since, is refused, because the model's picture of it is
// missing or stale.
type ReadTracker struct {
	mu    sync.Mutex
	reads map[string][sha256.Size]byte // absolute path → content hash
}

// NewReadTracker returns an empty tracker.
func NewReadTracker() *ReadTracker {
	return &ReadTracker{reads: map[string][sha256.Size]byte{}}
}

// Record notes that abs was read (or written) with this content.
func (t *ReadTracker) Record(abs string, content []byte) {
	h := sha256.Sum256(content)
	t.mu.Lock()
	t.reads[abs] = h
	t.mu.Unlock()
}

func (t *ReadTracker) recordHash(abs string, h [sha256.Size]byte) {
	t.mu.Lock()
	t.reads[abs] = h
	t.mu.Unlock()
}

func (t *ReadTracker) hash(abs string) ([sha256.Size]byte, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	h, ok := t.reads[abs]
	return h, ok
}

// Forget drops abs (after it was deleted or moved).
func (t *ReadTracker) Forget(abs string) {
	t.mu.Lock()
	delete(t.reads, abs)
	t.mu.Unlock()
}

// WasRead reports whether abs was recorded, whatever its state now.
func (t *ReadTracker) WasRead(abs string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.reads[abs]
	return ok
}

// Check returns the current content of abs, read through ws, when abs
// was read and is unchanged on disk since; a file not read, or changed
// since, is an *unreadError (a blind write). display is the path as shown
// to the model. The error text is meant for the model and says what to do.
func (t *ReadTracker) Check(ws *Workspace, abs, display string) ([]byte, error) {
	t.mu.Lock()
	h, ok := t.reads[abs]
	t.mu.Unlock()
	if !ok {
		return nil, &unreadError{fmt.Sprintf("file %s has not been read in this session: read it with read_file first, then edit it", display)}
	}
	cur, err := ws.ReadFile(abs)
	if err != nil {
		return nil, fmt.Errorf("file %s cannot be read: %v", display, err)
	}
	if sha256.Sum256(cur) != h {
		return nil, &unreadError{fmt.Sprintf("file %s has changed on disk since you last read it, so it counts as unread: read it again with read_file before editing", display)}
	}
	return cur, nil
}
