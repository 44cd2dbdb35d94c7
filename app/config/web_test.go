package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestWebDefaults(t *testing.T) {
	t.Parallel()
	c, err := Load(Sources{})
	if err != nil {
		t.Fatal(err)
	}
	w := c.Tools.Web
	if !w.Fetch || w.Explore || w.AllowPrivate || len(w.AllowHosts) != 0 || w.Timeout != 30*time.Second ||
		w.MaxBytes != 5<<20 || w.MaxRedirects != 5 || w.CacheTTL != 15*time.Minute || w.Search.Provider != "" ||
		w.Search.Timeout != 20*time.Second {
		t.Errorf("tools.web defaults %+v", w)
	}
}

// The environment picks a provider when no file does, supplies its key,
// and never changes a provider a file chose.
func TestWebSearchFromTheEnvironment(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		file               string
		env                map[string]string
		provider, key, url string
	}{
		{"", map[string]string{}, "", "", ""},
		{"", map[string]string{"BRAVE_API_KEY": "bk"}, "brave", "bk", ""},
		{"", map[string]string{"TAVILY_API_KEY": "tk"}, "tavily", "tk", ""},
		{"", map[string]string{"BRAVE_API_KEY": "bk", "TAVILY_API_KEY": "tk"}, "brave", "bk", ""},
		{"", map[string]string{"SEARXNG_URL": "http://127.0.0.1:8888"}, "searxng", "", "http://127.0.0.1:8888"},
		{"tools:\n  web:\n    search:\n      provider: tavily\n", map[string]string{"BRAVE_API_KEY": "bk", "TAVILY_API_KEY": "tk"}, "tavily", "tk", ""},
		{"tools:\n  web:\n    search:\n      provider: brave\n      api_key: from-file\n", map[string]string{"BRAVE_API_KEY": "bk"}, "brave", "bk", ""},
		{"tools:\n  web:\n    search:\n      provider: searxng\n      url: http://file:1\n", map[string]string{"SEARXNG_URL": "http://env:2", "BRAVE_API_KEY": "bk"}, "searxng", "", "http://env:2"},
	} {
		src := Sources{Getenv: env(c.env)}
		if c.file != "" {
			src.File = filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(src.File, []byte(c.file), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		cfg, err := Load(src)
		if err != nil {
			t.Fatal(err)
		}
		s := cfg.Tools.Web.Search
		if s.Provider != c.provider || s.APIKey != c.key || s.URL != c.url {
			t.Errorf("file %q env %v: %+v, want %s/%s/%s", c.file, c.env, s, c.provider, c.key, c.url)
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("file %q env %v: %v", c.file, c.env, err)
		}
	}
}

func TestWebValidation(t *testing.T) {
	t.Parallel()
	base, err := Load(Sources{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mut  func(*Web)
		want string
	}{
		{func(w *Web) { w.Timeout = 0 }, "tools.web.timeout: must be a positive duration, e.g. 30s; got 0s"},
		{func(w *Web) { w.CacheTTL = -time.Second }, "tools.web.cache_ttl: must be a positive duration, e.g. 15m"},
		{func(w *Web) { w.MaxBytes = 10 }, "tools.web.max_bytes: must be a number of bytes from 1024 to 1073741824, got 10"},
		{func(w *Web) { w.MaxRedirects = 21 }, "tools.web.max_redirects: must be a number from 0 (follow none) to 20"},
		{func(w *Web) { w.Search.Timeout = 0 }, "tools.web.search.timeout"},
		{func(w *Web) { w.AllowHosts = []string{"ok.example", "https://bad.example/"} }, `tools.web.allow_hosts[1]: "https://bad.example/" is not a host name`},
		{func(w *Web) { w.AllowHosts = []string{"10.0.0.0/33"} }, "tools.web.allow_hosts[0]"},
		{func(w *Web) { w.AllowHosts = []string{"host:8080"} }, "no scheme, port or path"},
		{func(w *Web) { w.Search.Provider = "bing" }, `tools.web.search.provider: must be brave, tavily, searxng or empty (no web_search), got "bing"`},
		{func(w *Web) { w.Search.Provider = "brave" }, "tools.web.search.api_key: brave needs its API key; set BRAVE_API_KEY"},
		{func(w *Web) { w.Search.Provider = "tavily" }, "set TAVILY_API_KEY"},
		{func(w *Web) { w.Search.Provider = "searxng" }, "tools.web.search.url: searxng needs the instance's URL"},
		{func(w *Web) { w.Search.Provider, w.Search.URL = "searxng", "127.0.0.1:8888" }, `tools.web.search.url: must be an http:// or https:// URL, got "127.0.0.1:8888"`},
	} {
		cfg := base
		cfg.Tools.Web.AllowHosts = nil
		c.mut(&cfg.Tools.Web)
		if err := cfg.Validate(); err == nil || !strings.HasPrefix(err.Error(), "tools.web.") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want %q, got %v", c.want, err)
		}
	}
	for _, ok := range []string{"example.org", "*.corp.example", "10.0.0.0/8", "fd00::/8", "192.168.1.1", "::1", "localhost", "my_host", "wiki.local."} {
		if err := validAllowHost(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a..b", "-a.example", "*.", "exa mple.org"} {
		if err := validAllowHost(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// config print shows the web settings with where they came from, and
// never the search key.
func TestWebSettingsPrinted(t *testing.T) {
	t.Parallel()
	c, err := Load(Sources{Getenv: env(map[string]string{"TAVILY_API_KEY": "tvly-secret"})})
	if err != nil {
		t.Fatal(err)
	}
	settings, err := c.Settings()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Setting{}
	for _, s := range settings {
		got[s.Key] = s
		if strings.Contains(s.Value, "tvly-secret") {
			t.Errorf("%s shows the key", s.Key)
		}
	}
	for key, want := range map[string]Setting{
		"tools.web.search.provider": {Value: "tavily", Origin: "env TAVILY_API_KEY"},
		"tools.web.search.api_key":  {Value: "[redacted]", Origin: "env TAVILY_API_KEY"},
		"tools.web.search.url":      {Value: `""`, Origin: "default"},
		"tools.web.fetch":           {Value: "true", Origin: "default"},
		"tools.web.max_bytes":       {Value: "5242880", Origin: "default"},
		"tools.web.allow_hosts":     {Value: "[]", Origin: "default"},
	} {
		if g := got[key]; g.Value != want.Value || g.Origin != want.Origin {
			t.Errorf("%s: %+v, want %+v", key, g, want)
		}
	}
}
