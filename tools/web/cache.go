package web

import (
	"sync"
	"time"
)

// Cache keeps fetched pages and the extracts made from them for a
// fixed time (not rounds: a page's freshness has nothing to do with an
// agent's progress). Pages from private addresses (allowed by the
// configuration: a local server, perhaps the one the agents are working
// on) are also dropped by any change a tool makes. It is safe for the
// agents of a run to share, and bounded in entries and bytes; the oldest
// entries go first.
type Cache struct {
	mu      sync.Mutex
	ttl     time.Duration
	now     func() time.Time
	entries map[string]*webEntry
	bytes   int
}

type webEntry struct {
	val     any
	size    int
	expires time.Time
	stored  time.Time
	private bool
}

// Bounds of a WebCache.
const (
	webCacheMaxEntries = 256
	webCacheMaxBytes   = 64 << 20
)

// NewCache returns an empty cache whose entries live ttl (0: the
// default, 15 minutes).
func NewCache(ttl time.Duration) *Cache {
	if ttl <= 0 {
		ttl = DefaultWebCacheTTL
	}
	return &Cache{ttl: ttl, now: time.Now, entries: map[string]*webEntry{}}
}

// get returns the live value under key.
func (c *Cache) get(key string) (any, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	if !c.now().Before(e.expires) {
		c.drop(key, e)
		return nil, false
	}
	return e.val, true
}

// put stores val (of about size bytes) under key, making room by
// dropping expired entries, then the oldest; private marks a page from a
// non-public address.
func (c *Cache) put(key string, val any, size int, private bool) {
	if c == nil || size > webCacheMaxBytes/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if old, ok := c.entries[key]; ok {
		c.drop(key, old)
	}
	for k, e := range c.entries {
		if !now.Before(e.expires) {
			c.drop(k, e)
		}
	}
	for len(c.entries) >= webCacheMaxEntries || c.bytes+size > webCacheMaxBytes {
		var oldest string
		var at time.Time
		for k, e := range c.entries {
			if oldest == "" || e.stored.Before(at) {
				oldest, at = k, e.stored
			}
		}
		if oldest == "" {
			break
		}
		c.drop(oldest, c.entries[oldest])
	}
	c.entries[key] = &webEntry{val: val, size: size, expires: now.Add(c.ttl), stored: now, private: private}
	c.bytes += size
}

// dropPrivate forgets the pages (and extracts) from private addresses:
// the executor calls it after every call that may have changed something.
func (c *Cache) dropPrivate() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.entries {
		if e.private {
			c.drop(k, e)
		}
	}
}

func (c *Cache) drop(key string, e *webEntry) {
	delete(c.entries, key)
	c.bytes -= e.size
}

// Len is the number of entries held, expired ones included until they
// are next touched.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
