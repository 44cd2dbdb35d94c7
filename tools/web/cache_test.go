package web

import (
	"fmt"
	"testing"
	"time"
)

func TestWebCacheExpiresAndStaysBounded(t *testing.T) {
	t.Parallel()
	c := NewCache(time.Minute)
	now := time.Unix(1000, 0)
	c.now = func() time.Time { return now }
	c.put("a", 1, 10, false)
	if v, ok := c.get("a"); !ok || v != 1 {
		t.Fatalf("fresh entry: %v %v", v, ok)
	}
	now = now.Add(59 * time.Second)
	if _, ok := c.get("a"); !ok {
		t.Fatal("entry gone before its TTL")
	}
	now = now.Add(time.Second)
	if _, ok := c.get("a"); ok {
		t.Fatal("entry alive at its TTL")
	}
	if c.Len() != 0 || c.bytes != 0 {
		t.Fatalf("expired entry kept: %d entries, %d bytes", c.Len(), c.bytes)
	}

	for i := range webCacheMaxEntries + 10 {
		now = now.Add(time.Millisecond)
		c.put(fmt.Sprint(i), i, 1, false)
	}
	if c.Len() != webCacheMaxEntries {
		t.Fatalf("%d entries, want the cap %d", c.Len(), webCacheMaxEntries)
	}
	if _, ok := c.get("0"); ok {
		t.Error("the oldest entry survived the entry cap")
	}
	if _, ok := c.get(fmt.Sprint(webCacheMaxEntries + 9)); !ok {
		t.Error("the newest entry was evicted")
	}

	big := webCacheMaxBytes / 4
	for i := range 5 {
		now = now.Add(time.Millisecond)
		c.put(fmt.Sprint("big", i), i, big, false)
	}
	if c.bytes > webCacheMaxBytes {
		t.Fatalf("%d bytes held, over the cap %d", c.bytes, webCacheMaxBytes)
	}
	if _, ok := c.get("big4"); !ok {
		t.Error("the newest big entry was evicted")
	}
	c.put("huge", 0, big+1, false)
	if _, ok := c.get("huge"); ok {
		t.Error("an entry over a quarter of the cap was kept")
	}
	c.put("local", 1, 1, true)
	c.put("public", 2, 1, false)
	c.dropPrivate()
	if _, ok := c.get("local"); ok {
		t.Error("a private page survived dropPrivate")
	}
	if _, ok := c.get("public"); !ok {
		t.Error("dropPrivate dropped a public page")
	}
	var nilCache *Cache
	nilCache.put("x", 1, 1, false)
	nilCache.dropPrivate()
	if _, ok := nilCache.get("x"); ok {
		t.Error("a nil cache holds entries")
	}
}
