package mcpserver

import (
	"context"
	"github.com/troupe-ai/troupe/internal/httpguard/guardtest"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/troupe-ai/troupe/internal/httpguard"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

const httpToken = "mcp-test-token-0123456789abcdef"

// serveHTTP serves s over streamable HTTP on loopback, with a token, and
// returns the endpoint's URL.
func serveHTTP(t *testing.T, s *Server) string {
	t.Helper()
	tf := filepath.Join(t.TempDir(), "http.token")
	if err := os.WriteFile(tf, []byte(httpToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g, err := httpguard.New(httpguard.Options{Addr: "127.0.0.1:0", TokenFile: tf, AlwaysToken: true, Exposes: Exposes})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	addr := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- s.ServeHTTP(ctx, g, func(a net.Addr) { addr <- a }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeHTTP: %v", err)
		}
	})
	return "http://" + (<-addr).String() + "/mcp"
}

// bearer adds the token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// connectHTTP connects the Go SDK's client with the token, at version
// ("" for the SDK's latest), its progress notifications going to p.
func connectHTTP(t *testing.T, endpoint, version string, p *progressLog) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{ProgressNotificationHandler: p.handler})
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: bearer{httpToken}}},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect at %q: %v", version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// abortWaitingCall starts a run with wait on cs, and once progress named
// it and its explore agent's model request is in flight, cancels the
// call: the run must end, its request given up.
func abortWaitingCall(t *testing.T, s *Server, srv *llmtest.Server, cs *mcp.ClientSession, p *progressLog) {
	t.Helper()
	before := len(srv.Requests())
	ctx, cancel := context.WithCancel(t.Context())
	called := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "start_run", Arguments: map[string]any{"task": "find alpha", "wait": true},
			Meta: mcp.Meta{"progressToken": "p"}})
		called <- err
	}()
	if m := runInProgress.FindStringSubmatch(<-p.seen); m == nil {
		t.Error("the first progress names no run")
	}
	poll(t, "the run's explore request is in flight", func() bool { return srv.InFlight() == 1 && len(srv.Requests()) == before+1 })
	cancel()
	<-called
	poll(t, "the aborted call's run ended", func() bool { _, running := s.runs.size(); return running == 0 })
	poll(t, "the scripted model saw the request given up", func() bool { return srv.InFlight() == 0 })
	reqs := srv.Requests()
	if len(reqs) != before+2 || !givenUp(reqs[before+1]) || srv.InFlight() != 0 {
		t.Errorf("model requests %d, in flight %d: want the explore request given up", len(reqs)-before, srv.InFlight())
	}
}

// MCP over HTTP lets no call in without the token, nor from a page that
// names another host or origin; with the token the 2025-11-25 client
// (sessions, which expire when idle; notifications/cancelled ends a call)
// and the 2026-07-28 one (stateless: aborting the call's request ends it)
// both get progress while a call waits, and cancelling the call cancels
// its run.
func TestHTTPAuthSessionsAndRevisions(t *testing.T) {
	srv := llmtest.New(exploreScript(time.Hour, 0))
	t.Cleanup(srv.Close)
	s := newServer(t, srv, workspace(t, "mcp:\n  session_timeout: 3s\n"))
	endpoint := serveHTTP(t, s)

	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	post := func(header map[string]string) (int, string) {
		h := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
		maps.Copy(h, header)
		return guardtest.Send(t, "POST", endpoint, initialize, h)
	}
	guardtest.Refusals(t, post, httpToken, "serverInfo")
	if code, body := post(map[string]string{"Authorization": "Bearer " + httpToken, "Origin": "http://attacker.example"}); code != http.StatusForbidden {
		t.Errorf("initialize from another origin: %d %q, want 403", code, body)
	}
	if code, body := post(map[string]string{"Authorization": "Bearer " + httpToken}); code != http.StatusOK || !strings.Contains(body, "serverInfo") {
		t.Errorf("initialize with the token: %d %q", code, body)
	}

	legacyProgress := newProgressLog()
	legacy := connectHTTP(t, endpoint, "2025-11-25", legacyProgress)
	if legacy.InitializeResult().ProtocolVersion != "2025-11-25" {
		t.Errorf("legacy client at %s", legacy.InitializeResult().ProtocolVersion)
	}
	abortWaitingCall(t, s, srv, legacy, legacyProgress)
	poll(t, "the idle sessions expire (mcp.session_timeout: 3s)", func() bool {
		for range s.mcp.Sessions() {
			return false
		}
		return true
	})
	if _, err := legacy.ListTools(t.Context(), nil); err == nil {
		t.Error("a call on an expired session went through")
	}

	modernProgress := newProgressLog()
	modern := connectHTTP(t, endpoint, "", modernProgress)
	if v := modern.InitializeResult().ProtocolVersion; v != statelessVersion {
		t.Fatalf("the latest client negotiated %s, want %s", v, statelessVersion)
	}
	abortWaitingCall(t, s, srv, modern, modernProgress)
}
