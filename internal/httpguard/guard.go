package httpguard

import (
	"fmt"
	"net"
	"net/http"
)

// Options say where a server listens and how it is guarded.
type Options struct {
	// Flag names the address's flag in errors ("--http", "--web").
	Flag string
	// Addr is host:port (port 0: any free port).
	Addr string
	// Public is --http-public: the user means an address beyond loopback.
	// It needs a token.
	Public bool
	// TokenFile is --http-token-file: the file holding the bearer token
	// ("" for none). It must not be readable by group or others.
	TokenFile string
	// AlwaysToken asks for a token on loopback too (mcp --http: any local
	// process could otherwise start runs), unless NoAuth.
	AlwaysToken bool
	// NoAuth is --no-auth: no token, on loopback only (with AlwaysToken).
	NoAuth bool
	// Exposes says what a caller without a token could do, for the
	// refusal's sentence ("read every run's tasks, tool calls and diffs").
	Exposes string
}

// Guard is one listener's policy: its address, whether it is loopback,
// and its token.
type Guard struct {
	flag     string
	addr     string
	loopback bool
	token    *token // nil: no token asked
	origins  *http.CrossOriginProtection
}

// New checks o and reads the token file: an address beyond loopback needs
// Public, Public needs a token, AlwaysToken needs a token or NoAuth, and
// NoAuth needs loopback. Every error names the flag and the way out.
func New(o Options) (*Guard, error) {
	flag := o.Flag
	if flag == "" {
		flag = "--http"
	}
	host, _, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %v", flag, o.Addr, err)
	}
	g := &Guard{flag: flag, addr: o.Addr, loopback: IsLoopbackHost(host), origins: http.NewCrossOriginProtection()}
	exposes := o.Exposes
	if exposes == "" {
		exposes = "use it"
	}
	switch {
	case o.NoAuth && o.TokenFile != "":
		return nil, fmt.Errorf("--no-auth and --http-token-file: give one")
	case o.NoAuth && !g.loopback:
		return nil, fmt.Errorf("--no-auth on %s refused: anyone who reaches %s could %s; listen on 127.0.0.1, or give --http-token-file FILE", host, o.Addr, exposes)
	case !g.loopback && !o.Public:
		return nil, fmt.Errorf("%s %s listens beyond loopback, where anyone who reaches it could %s; add --http-public and --http-token-file FILE to mean it", flag, o.Addr, exposes)
	case o.Public && o.TokenFile == "":
		return nil, fmt.Errorf("--http-public needs --http-token-file FILE: without a token anyone who reaches %s could %s (orchestrator auth init DIR writes DIR/%s, 0600)", o.Addr, exposes, TokenFileName)
	case o.AlwaysToken && !o.NoAuth && o.TokenFile == "":
		return nil, fmt.Errorf("%s needs a token: --http-token-file FILE (orchestrator auth init DIR writes DIR/%s, 0600), or --no-auth on loopback; without one any local process could %s", flag, TokenFileName, exposes)
	}
	if o.TokenFile != "" {
		if g.token, err = readToken(o.TokenFile); err != nil {
			return nil, fmt.Errorf("--http-token-file: %w", err)
		}
	}
	return g, nil
}

// Listen listens on the guard's address.
func (g *Guard) Listen() (net.Listener, error) {
	ln, err := net.Listen("tcp", g.addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", g.flag, err)
	}
	return ln, nil
}

// HasToken says whether requests need the token.
func (g *Guard) HasToken() bool { return g.token != nil }

// Handler lets a request through to h only when its Host is the
// listener's (on loopback: a loopback name or address), a state-changing
// request comes from no other origin, and, with a token, it carries the
// token (header or cookie; ?token= sets the cookie and redirects).
func (g *Guard) Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.loopback && !IsLoopbackHost(hostOnly(r.Host)) {
			http.Error(w, fmt.Sprintf("forbidden: Host %q is not this server's (it listens on loopback and answers only loopback names)", r.Host), http.StatusForbidden)
			return
		}
		if err := g.origins.Check(r); err != nil {
			http.Error(w, "forbidden: a cross-origin request may not change anything here", http.StatusForbidden)
			return
		}
		if g.token != nil && !g.token.admit(w, r) {
			return
		}
		h.ServeHTTP(w, r)
	})
}
