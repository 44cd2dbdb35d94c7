package sandbox

import (
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// grantsCache keeps the last read grants computed per deny list: walking
// the ancestors of the denied paths costs a directory listing each, on
// every command otherwise. An entry stays valid while none of the listed
// directories has changed (an entry added, removed or renamed changes its
// directory's modification time).
type grantsCache struct {
	mu      sync.Mutex
	entries map[string]grantsEntry
}

type grantsEntry struct {
	grants []string
	listed []string
	mtimes []time.Time
}

var grantsMemo = &grantsCache{entries: map[string]grantsEntry{}}

// get returns the read grants for denied, from the cache when still valid.
func (c *grantsCache) get(denied []string) []string {
	key := strings.Join(denied, "\x00")
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok && slices.Equal(e.mtimes, mtimes(e.listed)) {
		return e.grants
	}
	// The walk reads each directory's time before listing it: a change
	// during the walk invalidates the entry.
	e = grantsEntry{}
	e.grants, e.listed, e.mtimes = walkGrants(denied)
	c.mu.Lock()
	c.entries[key] = e
	c.mu.Unlock()
	return e.grants
}

// mtimes are the modification times of dirs (zero for one that is gone).
func mtimes(dirs []string) []time.Time {
	out := make([]time.Time, len(dirs))
	for i, d := range dirs {
		if fi, err := os.Stat(d); err == nil {
			out[i] = fi.ModTime()
		}
	}
	return out
}
