package web

import (
	"time"
)

// Config configures web_fetch and web_search. The zero value offers
// web_fetch with the defaults below and no web_search.
type Config struct {
	// NoFetch takes web_fetch out of every kind's tool set.
	NoFetch bool
	// Explore also gives the web tools to explore agents (root and
	// workers have them by default).
	Explore bool
	// AllowPrivate lets web_fetch reach loopback, private, link-local and
	// other non-public addresses. Off by default: a page (or a redirect,
	// or a DNS answer) must not lead an agent into the user's network.
	AllowPrivate bool
	// AllowHosts lists host names ("intranet.example", "*.corp.example")
	// and networks in CIDR form ("10.1.0.0/16") that web_fetch may reach
	// even though they resolve to, or are, non-public addresses.
	AllowHosts []string
	// Timeout bounds one fetch, redirects and body included (default 30 s).
	Timeout time.Duration
	// MaxBytes caps the body read (default 5 MiB); a longer page is cut
	// there and the result says so.
	MaxBytes int64
	// MaxRedirects is how many redirects a fetch follows (0: the default,
	// 5; negative: none).
	MaxRedirects int
	// CacheTTL is how long a fetched page (and an extract from it) is
	// reused (default 15 minutes).
	CacheTTL time.Duration
	// Search configures web_search's provider.
	Search SearchConfig
}

// SearchConfig says which search provider web_search uses. web_search is
// offered only when Provider is set (with its key, or its URL).
type SearchConfig struct {
	// Provider is SearchBrave, SearchTavily or SearchSearXNG; "" turns
	// web_search off.
	Provider string
	// URL is the endpoint: the SearXNG instance's base URL; for Brave and
	// Tavily it overrides the public API endpoint (a proxy, a test).
	URL string
	// APIKey is Brave's subscription token or Tavily's API key. It is sent
	// only to the provider and never appears in results or events.
	APIKey string
	// Timeout bounds one search (default 20 s).
	Timeout time.Duration
}

// The search providers.
const (
	SearchBrave   = "brave"
	SearchTavily  = "tavily"
	SearchSearXNG = "searxng"
)

// Defaults of WebConfig's zero fields.
const (
	DefaultWebTimeout      = 30 * time.Second
	DefaultWebMaxBytes     = 5 << 20
	DefaultWebMaxRedirects = 5
	DefaultWebCacheTTL     = 15 * time.Minute
	DefaultSearchTimeout   = 20 * time.Second
)

func (c Config) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultWebTimeout
}

func (c Config) maxBytes() int64 {
	if c.MaxBytes > 0 {
		return c.MaxBytes
	}
	return DefaultWebMaxBytes
}

func (c Config) maxRedirects() int {
	switch {
	case c.MaxRedirects < 0:
		return 0
	case c.MaxRedirects > 0:
		return c.MaxRedirects
	}
	return DefaultWebMaxRedirects
}

func (c SearchConfig) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultSearchTimeout
}
