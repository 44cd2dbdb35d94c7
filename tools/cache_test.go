package tools

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestCacheInvalidation(t *testing.T) {
	t.Parallel()
	c := NewCache(10)
	put := func(key string, scopes ...string) { c.Put("a", key, Text(key), scopes, nil) }
	put("read a/b.go", "a/b.go")
	put("read a/c.go", "a/c.go")
	put("grep a", "a")
	put("grep root", ".")
	put("read ab.go", "ab.go")
	put("list z", "z")
	c.Invalidate([]string{"a/b.go"})
	has := func(key string) bool { _, _, ok := c.Get("a", key); return ok }
	for key, want := range map[string]bool{
		"read a/b.go": false, // the path itself
		"grep a":      false, // a search over its directory
		"grep root":   false, // a search over the root
		"read a/c.go": true,  // a sibling file
		"read ab.go":  true,  // a name that merely shares a prefix
		"list z":      true,
	} {
		if has(key) != want {
			t.Errorf("after editing a/b.go, %q cached = %v, want %v", key, !want, want)
		}
	}
	// Deleting a directory invalidates what lies under it.
	c.Invalidate([]string{"a"})
	if has("read a/c.go") {
		t.Error("read under an invalidated directory survived")
	}
	c.InvalidateAll()
	if c.Len() != 0 {
		t.Errorf("InvalidateAll left %d entries", c.Len())
	}
}

func TestCacheAgesOutByRounds(t *testing.T) {
	t.Parallel()
	c := NewCache(3)
	c.setRound("a", 1)
	c.Put("a", "k", Text("v"), []string{"f"}, nil)
	c.setRound("b", 50) // another agent's rounds do not age a's entries
	if _, _, ok := c.Get("b", "k"); !ok {
		t.Fatal("entry evicted by another agent's round")
	}
	c.setRound("a", 4)
	if _, _, ok := c.Get("a", "k"); !ok {
		t.Fatal("entry evicted at age 3 with max age 3")
	}
	c.setRound("a", 5)
	if _, _, ok := c.Get("a", "k"); ok || c.Len() != 0 {
		t.Fatal("entry survived past its max age")
	}
}

func TestCacheCountersPerAgent(t *testing.T) {
	t.Parallel()
	c := NewCache(0)
	c.Put("a", "k", Text("v"), nil, nil)
	c.Get("a", "k")
	c.Get("b", "k")
	c.Get("b", "missing")
	if st := c.AgentStats("b"); st.Hits != 1 || st.Misses != 1 {
		t.Errorf("b stats %+v", st)
	}
	if st := c.Stats(); st.Hits != 2 || st.Misses != 1 {
		t.Errorf("total stats %+v", st)
	}
	if r, _, _ := c.Get("a", "k"); !r.Cached {
		t.Error("hit not marked cached")
	}
}

func TestCacheSharedConcurrently(t *testing.T) {
	t.Parallel()
	c := NewCache(5)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			agent := fmt.Sprintf("agent%d", g%4)
			for i := range 500 {
				key := fmt.Sprintf("k%d", i%37)
				switch i % 5 {
				case 0:
					c.Put(agent, key, Text(key), []string{fmt.Sprintf("d%d/f", i%7)}, nil)
				case 1:
					c.Invalidate([]string{fmt.Sprintf("d%d", i%7)})
				case 2:
					c.setRound(agent, i/10)
				default:
					if r, _, ok := c.Get(agent, key); ok && r.Text != key {
						t.Errorf("wrong value %q for %q", r.Text, key)
					}
				}
			}
		}()
	}
	wg.Wait()
	st := c.Stats()
	if st.Hits+st.Misses == 0 {
		t.Fatal("no lookups counted")
	}
}

func TestCacheKeyNormalizes(t *testing.T) {
	t.Parallel()
	a := CacheKey("grep", []byte(`{"pattern":"x","path":"a"}`))
	b := CacheKey("grep", []byte(` { "path" : "a", "pattern" : "x" } `))
	if a != b {
		t.Errorf("keys differ: %q vs %q", a, b)
	}
	if CacheKey("find_files", []byte(`{"pattern":"x","path":"a"}`)) == a {
		t.Error("tool name not part of the key")
	}
	if !strings.HasPrefix(CacheKey("t", []byte("not json")), "t\x00") {
		t.Error("bad JSON key")
	}
}

// The cache holds at most CacheMaxEntries entries, the oldest going
// first, and an entry older than CacheMaxIdle is gone whatever the rounds
// (a finished agent's entries age out).
func TestCacheBoundedAndAgesByTime(t *testing.T) {
	t.Parallel()
	c := NewCache(3)
	for i := range CacheMaxEntries + 10 {
		c.Put("a", fmt.Sprint(i), Text("v"), []string{"f"}, nil)
	}
	if c.Len() != CacheMaxEntries {
		t.Fatalf("%d entries, want %d", c.Len(), CacheMaxEntries)
	}
	c.mu.Lock()
	for _, e := range c.entries {
		e.stored = e.stored.Add(-CacheMaxIdle - time.Second)
	}
	c.mu.Unlock()
	if _, _, ok := c.Get("a", fmt.Sprint(CacheMaxEntries+9)); ok {
		t.Fatal("an entry older than CacheMaxIdle was served")
	}
	c.Put("b", "fresh", Text("v"), []string{"f"}, nil)
	if c.Len() != CacheMaxEntries {
		t.Fatalf("%d entries before the cache is full again", c.Len())
	}
	c.mu.Lock()
	c.evictOld(time.Now())
	c.mu.Unlock()
	if c.Len() != 1 {
		t.Fatalf("%d entries after the old ones aged out, want 1", c.Len())
	}
}
