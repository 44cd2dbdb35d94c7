package web

import "github.com/troupe-ai/troupe/tools"

// The keys of the web tools' values in a tools.Session, all attached.
type (
	configKey    struct{} // *Config
	cacheKey     struct{} // *Cache
	extractorKey struct{} // Extractor
)

// Configure gives the web tools of session s their configuration (the
// zero Config without it: web_fetch with its defaults, no web_search).
func Configure(s *tools.Session, cfg Config) { s.Attach(configKey{}, &cfg) }

// configOf is the session's web configuration, never nil.
func configOf(s *tools.Session) *Config {
	c, err := tools.State(s, configKey{}, func() *Config { return &Config{} })
	if err != nil {
		return &Config{}
	}
	return c
}

// UseCache makes web_fetch in session s keep its pages in c, which the
// agents of a run share; without one it fetches every time. The session
// tells c of every mutating call (tools.MutationHook).
func UseCache(s *tools.Session, c *Cache) {
	if c == nil {
		s.Attach(cacheKey{}, nil)
		return
	}
	s.Attach(cacheKey{}, c)
}

// cacheOf is the session's page cache, nil without one.
func cacheOf(s *tools.Session) *Cache {
	c, _ := s.Attached(cacheKey{}).(*Cache)
	return c
}

// UseExtractor makes web_fetch in session s answer its prompt with x;
// without one web_fetch returns the page itself.
func UseExtractor(s *tools.Session, x Extractor) {
	if x == nil {
		s.Attach(extractorKey{}, nil)
		return
	}
	s.Attach(extractorKey{}, x)
}

// extractorOf is the session's extractor, nil without one.
func extractorOf(s *tools.Session) Extractor {
	x, _ := s.Attached(extractorKey{}).(Extractor)
	return x
}

// AfterMutation forgets the pages from private addresses (a local server
// may serve what was just changed): the executor calls it after every
// call that may have changed something.
func (c *Cache) AfterMutation() { c.dropPrivate() }

var _ tools.MutationHook = (*Cache)(nil)
