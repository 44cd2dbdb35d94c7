package mcpserver

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/troupe-ai/troupe/internal/httpguard"
)

// Exposes is what an MCP endpoint gives whoever reaches it, for the
// guard's refusals.
const Exposes = "start runs in this workspace, spending its model budget"

// statelessVersion is the first protocol revision whose requests carry
// their version and need no session (2026-07-28): over HTTP the SDK serves
// it on a stateless handler only.
const statelessVersion = "2026-07-28"

// ServeHTTP serves streamable HTTP at /mcp on g's listener until ctx
// ends; ready, when set, is told the address once it listens. Requests
// of revision 2026-07-28 and later (stateless: the call is its POST, so a
// client's abort ends it) and earlier ones (sessions that expire after
// mcp.session_timeout idle; notifications/cancelled ends a call) share
// the server's runs.
func (s *Server) ServeHTTP(ctx context.Context, g *httpguard.Guard, ready func(net.Addr)) error {
	ln, err := g.Listen()
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: g.Handler(s.handler()), ReadHeaderTimeout: 10 * time.Second}
	if ready != nil {
		ready(ln.Addr())
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// handler is the MCP endpoint at /mcp (ServeHTTP puts the guard in front).
func (s *Server) handler() http.Handler {
	get := func(*http.Request) *mcp.Server { return s.mcp }
	sessions := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{SessionTimeout: s.o.Config.MCP.SessionTimeout})
	stateless := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Stateless: true, PropagateRequestCancellation: true})
	mux := http.NewServeMux()
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Protocol-Version") >= statelessVersion {
			stateless.ServeHTTP(w, r)
			return
		}
		sessions.ServeHTTP(w, r)
	}))
	return mux
}
