package tools

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Cache holds the results of read-only, cacheable tool calls, keyed on the
// tool and its normalized arguments. It is safe for the agents of one run
// to share. A mutation of a path invalidates the entries whose scope is that
// path, one of its parent directories, or lies under it; shell invalidates
// everything; an entry older than MaxAge rounds of the agent that stored it
// is evicted. The cache holds at most CacheMaxEntries entries (the oldest
// stored goes first) and none older than CacheMaxIdle, so a finished
// agent's entries age out with time as well as rounds.
type Cache struct {
	mu      sync.Mutex
	maxAge  int
	entries map[string]*cacheEntry
	rounds  map[string]int // agent → current round
	stats   map[string]*CacheStats
	total   CacheStats
}

type cacheEntry struct {
	res    Result
	reads  map[string][sha256.Size]byte // files the call registered as read
	scopes []string                     // workspace-relative, slash-separated; "." is the root
	agent  string
	round  int
	stamps map[string]fileStamp // size, mtime and inode of each read file when cached
	stored time.Time
}

// CacheMaxEntries bounds a cache's entries; CacheMaxIdle is how long an
// entry lives whatever the rounds.
const (
	CacheMaxEntries = 4096
	CacheMaxIdle    = 30 * time.Minute
)

// fileStamp identifies a version of a file well enough to tell that it
// changed outside the tools.
type fileStamp struct {
	size  int64
	mtime int64
	ino   uint64
}

func stampOf(abs string) (fileStamp, bool) {
	fi, err := os.Stat(abs)
	if err != nil {
		return fileStamp{}, false
	}
	st := fileStamp{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino = sys.Ino
	}
	return st, true
}

// fresh reports whether every file the entry read is as it was.
func (e *cacheEntry) fresh() bool {
	for abs, want := range e.stamps {
		if got, ok := stampOf(abs); !ok || got != want {
			return false
		}
	}
	return true
}

// CacheStats counts hits and misses.
type CacheStats struct {
	Hits   int64 `json:"hits"`
	Misses int64 `json:"misses"`
}

// DefaultCacheMaxAge is the entry lifetime in rounds when not configured.
const DefaultCacheMaxAge = 10

// NewCache returns an empty cache whose entries live maxAge rounds.
func NewCache(maxAge int) *Cache {
	if maxAge <= 0 {
		maxAge = DefaultCacheMaxAge
	}
	return &Cache{maxAge: maxAge, entries: map[string]*cacheEntry{},
		rounds: map[string]int{}, stats: map[string]*CacheStats{}}
}

// CacheKey is the key of a call: the tool name and its arguments with
// object keys sorted and insignificant whitespace removed.
func CacheKey(tool string, args json.RawMessage) string {
	var v any
	d := json.NewDecoder(bytes.NewReader(args))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return tool + "\x00" + string(args)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return tool + "\x00" + string(args)
	}
	return tool + "\x00" + string(b)
}

// Get returns the cached result for key and the read-tracker hashes its
// call recorded, counting a hit or a miss for agent.
func (c *Cache) Get(agent, key string) (Result, map[string][sha256.Size]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.statsFor(agent)
	e, ok := c.entries[key]
	if ok && (c.rounds[e.agent]-e.round > c.maxAge || time.Since(e.stored) > CacheMaxIdle || !e.fresh()) {
		delete(c.entries, key) // too old, or a file changed outside the tools
		ok = false
	}
	if !ok {
		st.Misses++
		c.total.Misses++
		return Result{}, nil, false
	}
	st.Hits++
	c.total.Hits++
	r := e.res
	r.Cached = true
	return r, e.reads, true
}

// Put stores res for key; scopes are the workspace-relative paths the
// result depends on, reads the files it registered as read.
func (c *Cache) Put(agent, key string, res Result, scopes []string, reads map[string][sha256.Size]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	stamps := make(map[string]fileStamp, len(reads))
	for abs := range reads {
		st, ok := stampOf(abs)
		if !ok {
			return // the file is already gone: nothing to cache
		}
		stamps[abs] = st
	}
	now := time.Now()
	if _, ok := c.entries[key]; !ok && len(c.entries) >= CacheMaxEntries {
		c.evictOld(now)
	}
	c.entries[key] = &cacheEntry{res: res, reads: reads, scopes: scopes, agent: agent, round: c.rounds[agent], stamps: stamps, stored: now}
}

// evictOld drops the entries older than CacheMaxIdle and, if the cache is
// still full, the oldest stored one.
func (c *Cache) evictOld(now time.Time) {
	oldest, oldestAt := "", now
	for k, e := range c.entries {
		if now.Sub(e.stored) > CacheMaxIdle {
			delete(c.entries, k)
		} else if e.stored.Before(oldestAt) || oldest == "" {
			oldest, oldestAt = k, e.stored
		}
	}
	if len(c.entries) >= CacheMaxEntries {
		delete(c.entries, oldest)
	}
}

// Invalidate drops every entry whose scope overlaps one of paths.
func (c *Cache) Invalidate(paths []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.entries {
		if overlaps(e.scopes, paths) {
			delete(c.entries, k)
		}
	}
}

// InvalidateAll empties the cache (after shell, which may touch anything).
func (c *Cache) InvalidateAll() {
	c.mu.Lock()
	clear(c.entries)
	c.mu.Unlock()
}

// Len is the number of entries held.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// Stats returns the run-wide counters.
func (c *Cache) Stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// AgentStats returns one agent's counters.
func (c *Cache) AgentStats(agent string) CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return *c.statsFor(agent)
}

func (c *Cache) statsFor(agent string) *CacheStats {
	st := c.stats[agent]
	if st == nil {
		st = &CacheStats{}
		c.stats[agent] = st
	}
	return st
}

// setRound records agent's round and evicts the entries it stored that are
// now too old.
func (c *Cache) setRound(agent string, round int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rounds[agent] = round
	for k, e := range c.entries {
		if e.agent == agent && round-e.round > c.maxAge {
			delete(c.entries, k)
		}
	}
}

func overlaps(scopes, paths []string) bool {
	for _, s := range scopes {
		for _, p := range paths {
			if within(p, s) || within(s, p) {
				return true
			}
		}
	}
	return false
}

// within reports whether p is dir or lies under it.
func within(p, dir string) bool {
	if dir == "." || p == dir {
		return true
	}
	return strings.HasPrefix(p, dir+"/")
}
