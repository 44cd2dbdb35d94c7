package config

import (
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"time"
)

// Web configures the web tools (tools.web): web_fetch and web_search.
type Web struct {
	// Fetch offers web_fetch to root and worker agents.
	Fetch bool `yaml:"fetch"`
	// Explore also gives the web tools to explore agents.
	Explore bool `yaml:"explore"`
	// AllowPrivate lets web_fetch reach loopback, private and link-local
	// addresses; AllowHosts allows only the names and networks listed.
	AllowPrivate bool          `yaml:"allow_private"`
	AllowHosts   []string      `yaml:"allow_hosts"`
	Timeout      time.Duration `yaml:"timeout"`
	MaxBytes     int64         `yaml:"max_bytes"`
	// MaxRedirects is how many redirects a fetch follows; 0 follows none.
	MaxRedirects int           `yaml:"max_redirects"`
	CacheTTL     time.Duration `yaml:"cache_ttl"`
	Search       Search        `yaml:"search"`
}

// Search configures web_search's provider; web_search is offered only
// when one is set.
type Search struct {
	Provider string        `yaml:"provider"` // brave|tavily|searxng; "" = no web_search
	URL      string        `yaml:"url"`
	APIKey   string        `yaml:"api_key"`
	Timeout  time.Duration `yaml:"timeout"`
}

// The search providers.
const (
	SearchBrave   = "brave"
	SearchTavily  = "tavily"
	SearchSearXNG = "searxng"
)

// searchKeyEnv is the environment variable holding each provider's key.
var searchKeyEnv = map[string]string{SearchBrave: "BRAVE_API_KEY", SearchTavily: "TAVILY_API_KEY"}

// applyWebEnv reads the search settings from the environment: a
// provider's key from its variable (BRAVE_API_KEY, TAVILY_API_KEY), a
// SearXNG instance from SEARXNG_URL, and, when no file names a provider,
// the provider whose variable is set. It returns the settings it set,
// with the variable that set each (key → variable).
func (w *Web) applyWebEnv(getenv func(string) string) map[string]string {
	set := map[string]string{}
	s := &w.Search
	if s.Provider == "" {
		for _, p := range []string{SearchBrave, SearchTavily} {
			if getenv(searchKeyEnv[p]) != "" {
				s.Provider, set["tools.web.search.provider"] = p, searchKeyEnv[p]
				break
			}
		}
		if s.Provider == "" && getenv("SEARXNG_URL") != "" {
			s.Provider, set["tools.web.search.provider"] = SearchSearXNG, "SEARXNG_URL"
		}
	}
	if v := getenv(searchKeyEnv[s.Provider]); v != "" {
		s.APIKey, set["tools.web.search.api_key"] = v, searchKeyEnv[s.Provider]
	}
	if v := getenv("SEARXNG_URL"); v != "" && s.Provider == SearchSearXNG {
		s.URL, set["tools.web.search.url"] = v, "SEARXNG_URL"
	}
	return set
}

// validate reports the first problem of the web settings, naming the
// setting and what it accepts.
func (w Web) validate() error {
	switch {
	case w.Timeout <= 0:
		return bad("tools.web.timeout", "must be a positive duration, e.g. 30s; got %s", w.Timeout)
	case w.CacheTTL <= 0:
		return bad("tools.web.cache_ttl", "must be a positive duration, e.g. 15m; got %s", w.CacheTTL)
	case w.MaxBytes < 1024 || w.MaxBytes > 1<<30:
		return bad("tools.web.max_bytes", "must be a number of bytes from 1024 to 1073741824, got %d", w.MaxBytes)
	case w.MaxRedirects < 0 || w.MaxRedirects > 20:
		return bad("tools.web.max_redirects", "must be a number from 0 (follow none) to 20, got %d", w.MaxRedirects)
	case w.Search.Timeout <= 0:
		return bad("tools.web.search.timeout", "must be a positive duration, e.g. 20s; got %s", w.Search.Timeout)
	}
	for i, h := range w.AllowHosts {
		if err := validAllowHost(h); err != nil {
			return bad(fmt.Sprintf("tools.web.allow_hosts[%d]", i), "%v", err)
		}
	}
	s := w.Search
	switch s.Provider {
	case "":
	case SearchBrave, SearchTavily:
		if s.APIKey == "" {
			return &settingError{key: "tools.web.search.api_key", near: "tools.web.search.provider",
				problem: fmt.Sprintf("%s needs its API key; set %s (better than a file)", s.Provider, searchKeyEnv[s.Provider])}
		}
	case SearchSearXNG:
		if s.URL == "" {
			return &settingError{key: "tools.web.search.url", near: "tools.web.search.provider",
				problem: "searxng needs the instance's URL, e.g. http://127.0.0.1:8888 (or SEARXNG_URL)"}
		}
	default:
		return bad("tools.web.search.provider", "must be brave, tavily, searxng or empty (no web_search), got %q", s.Provider)
	}
	if s.URL != "" {
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad("tools.web.search.url", "must be an http:// or https:// URL, got %q", s.URL)
		}
	}
	return nil
}

// validAllowHost accepts a host name (optionally "*." and a domain), an
// IP address or a CIDR network.
func validAllowHost(s string) error {
	s = strings.TrimSpace(s)
	if _, err := netip.ParsePrefix(s); err == nil {
		return nil
	}
	if _, err := netip.ParseAddr(s); err == nil {
		return nil
	}
	bad := fmt.Errorf("%q is not a host name (example.org, *.example.org), an IP address or a CIDR network (10.0.0.0/8); no scheme, port or path", s)
	name := strings.TrimPrefix(strings.TrimSuffix(s, "."), "*.")
	if name == "" || len(name) > 253 {
		return bad
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 || strings.HasPrefix(label, "-") || strings.HasSuffix(label, "-") {
			return bad
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return bad
			}
		}
	}
	return nil
}
