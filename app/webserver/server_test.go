package webserver

import (
	"bufio"
	"context"
	"github.com/troupe-ai/troupe/internal/httpguard/guardtest"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/internal/httpguard"
	"github.com/troupe-ai/troupe/messages"
)

// start serves the web view of a fresh NATS server holding one run's
// events, with o's guard and stream cap; it returns the base URL and the
// server.
func start(t *testing.T, g httpguard.Options, maxStreams int) (string, *Server) {
	t.Helper()
	ctx := t.Context()
	emb, err := bus.StartEmbedded(ctx, bus.EmbeddedOptions{Ephemeral: true}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emb.Shutdown(context.Background()) })
	conn, err := bus.Connect(ctx, bus.ConnectOptions{URLs: emb.URL()}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	if err := conn.EnsureStreams(ctx, bus.StreamLimits{}); err != nil {
		t.Fatal(err)
	}
	pub, err := conn.NewPublisher(bus.PublisherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := messages.NewEvent("secret-run", "run", messages.EvtRunStarted, 1, messages.RunStarted{Task: "the secret task"})
	if err != nil {
		t.Fatal(err)
	}
	pub.Emit(ev)
	if err := pub.Close(ctx); err != nil {
		t.Fatal(err)
	}
	guard, err := httpguard.New(g)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Start(ctx, Options{Conn: conn, Guard: guard, MaxStreams: maxStreams, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return "http://" + s.Addr.String(), s
}

// get sends a GET with header and returns the status and body.
func get(t *testing.T, url string, header map[string]string) (int, string) {
	t.Helper()
	return guardtest.Send(t, "GET", url, "", header)
}

// A page of another host (DNS rebinding) gets 403 and none of the runs
// from the page, its events or the metrics; the listener's own names get
// them.
func TestForeignHostGetsNothing(t *testing.T) {
	base, srv := start(t, httpguard.Options{Addr: "127.0.0.1:0"}, 0)
	for _, path := range []string{"/", "/events?run=secret-run", "/metrics", "/app.js"} {
		code, body := get(t, base+path, map[string]string{"Host": "attacker.example"})
		if code != http.StatusForbidden || strings.Contains(body, "secret") || strings.Contains(body, "troupe_") {
			t.Errorf("%s from attacker.example: %d %q, want 403 and no data", path, code, body)
		}
	}
	// The listener's own name gets the metrics: troupe_nodes once the
	// monitor has read the registry (a figure not yet read is left out,
	// never shown as 0).
	select {
	case <-srv.mon.NodesRead():
	case <-t.Context().Done():
		t.Fatal("the monitor never read the node registry")
	}
	if code, body := get(t, base+"/metrics", nil); code != http.StatusOK || !strings.Contains(body, "\ntroupe_nodes ") {
		t.Errorf("/metrics from loopback: %d %q", code, body)
	}
}

// Beyond loopback (here a token on loopback: the same check) every path
// needs the token; with it, the events flow.
func TestTokenGuardsEveryPath(t *testing.T) {
	tf := filepath.Join(t.TempDir(), "http.token")
	const tok = "web-test-token-0123456789abcdef"
	if err := os.WriteFile(tf, []byte(tok), 0o600); err != nil {
		t.Fatal(err)
	}
	base, _ := start(t, httpguard.Options{Addr: "127.0.0.1:0", TokenFile: tf}, 0)
	for _, path := range []string{"/", "/events?run=secret-run", "/metrics"} {
		if code, body := get(t, base+path, nil); code != http.StatusUnauthorized || strings.Contains(body, "secret") {
			t.Errorf("%s without the token: %d %q", path, code, body)
		}
	}
	if code, body := get(t, base+"/metrics", map[string]string{"Authorization": "Bearer " + tok}); code != http.StatusOK || !strings.Contains(body, "troupe_") {
		t.Errorf("/metrics with the token: %d", code)
	}
	s := openStream(t, base+"/events?run=secret-run", map[string]string{"Authorization": "Bearer " + tok})
	defer s.Close()
	if !s.waitFor("the secret task") {
		t.Error("the event stream with the token carried no event")
	}
}

// At most MaxStreams pages follow the events at once: the next is
// answered 503, and one that closes frees its place.
func TestEventStreamsCapped(t *testing.T) {
	base, _ := start(t, httpguard.Options{Addr: "127.0.0.1:0"}, 2)
	a := openStream(t, base+"/events", nil)
	b := openStream(t, base+"/events", nil)
	for _, s := range []*stream{a, b} {
		if s.code != http.StatusOK || !s.waitFor("caught_up") {
			t.Fatalf("stream: %d", s.code)
		}
	}
	third := openStream(t, base+"/events", nil)
	if third.code != http.StatusServiceUnavailable || !third.waitFor("too many live views") {
		t.Errorf("a third stream: %d, want 503", third.code)
	}
	third.Close()
	if code, _ := get(t, base+"/metrics", nil); code != http.StatusOK {
		t.Errorf("/metrics while the streams are full: %d", code)
	}
	a.Close()
	var c *stream
	for c == nil || c.code == http.StatusServiceUnavailable { // a's handler ends once its close is seen
		if c != nil {
			c.Close()
		}
		c = openStream(t, base+"/events", nil)
	}
	defer c.Close()
	defer b.Close()
	if c.code != http.StatusOK || !c.waitFor("caught_up") {
		t.Errorf("after one closed: %d", c.code)
	}
}

// stream is an open /events response.
type stream struct {
	code int
	body io.ReadCloser
	sc   *bufio.Scanner
}

func openStream(t *testing.T, url string, header map[string]string) *stream {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", url, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	return &stream{code: resp.StatusCode, body: resp.Body, sc: sc}
}

// waitFor reads the stream until a line holds s.
func (s *stream) waitFor(want string) bool {
	for s.sc.Scan() {
		if strings.Contains(s.sc.Text(), want) {
			return true
		}
	}
	return false
}

func (s *stream) Close() { s.body.Close() }
