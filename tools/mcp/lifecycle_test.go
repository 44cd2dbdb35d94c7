package mcp_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/tools/mcp"
	"github.com/troupe-ai/troupe/tools/mcp/mcptest"
)

func TestCloseStopsTheProcess(t *testing.T) {
	srv := stdioServer(t)
	if _, err := srv.Tools(t.Context()); err != nil {
		t.Fatal(err)
	}
	pid := srv.Pid()
	if !alive(pid) {
		t.Fatal("not running")
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
	if _, err := srv.Tools(t.Context()); !errors.Is(err, mcp.ErrClosed) {
		t.Errorf("tools after close: %v", err)
	}
}

func TestServerThatCannotStart(t *testing.T) {
	srv := stdioServer(t, func(c *mcp.Config) { c.Command = []string{"/nonexistent/mcp-server"} })
	_, err := srv.Tools(t.Context())
	if err == nil || !strings.Contains(err.Error(), "start MCP server t") || !strings.Contains(err.Error(), "/nonexistent/mcp-server") {
		t.Fatalf("error: %v", err)
	}
	srv = stdioServer(t, func(c *mcp.Config) { c.Command = []string{"sh", "-c", "echo not an MCP server >&2; exit 7"} })
	_, err = srv.Tools(t.Context())
	if err == nil || !strings.Contains(err.Error(), "exit status 7") || !strings.Contains(err.Error(), "not an MCP server") {
		t.Fatalf("error: %v", err)
	}
}

func TestStreamableHTTPServer(t *testing.T) {
	var auth atomic.Value
	h := mcptest.HTTPHandler()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		h.ServeHTTP(w, r)
	}))
	defer hs.Close()
	cfg := mcp.Config{Name: "t", URL: hs.URL, Headers: map[string]string{"Authorization": "Bearer sesame"}, Timeout: 2 * time.Second}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	srv := mcp.New(cfg, zerolog.Nop())
	defer srv.Close()
	hn := newHarness(t, srv, tools.Config{})
	if r := hn.call(mcptest.Echo, `{"text":"over http"}`); r.IsError || r.Text != "echo: over http" {
		t.Fatalf("echo: %+v", r)
	}
	if got, _ := auth.Load().(string); got != "Bearer sesame" {
		t.Errorf("Authorization header %q", got)
	}
	if r := hn.call(mcptest.Slow, `{}`); !r.IsError || !strings.Contains(r.Text, "no answer before the timeout; the call was cancelled") {
		t.Fatalf("hang over http: %+v", r)
	}
	if r := hn.call(mcptest.Echo, `{"text":"again"}`); r.IsError || r.Text != "echo: again" {
		t.Fatalf("after the hang: %+v", r)
	}
	if srv.Starts() != 1 {
		t.Errorf("starts %d, want 1 (a slow HTTP call keeps the session)", srv.Starts())
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		cfg  mcp.Config
		want string
	}{
		{mcp.Config{Name: "a b", Command: []string{"x"}}, "server name"},
		{mcp.Config{Name: "a"}, "set command"},
		{mcp.Config{Name: "a", Command: []string{"x"}, URL: "http://h"}, "not both"},
		{mcp.Config{Name: "a", Command: []string{""}}, "program is empty"},
		{mcp.Config{Name: "a", URL: "ftp://h"}, "http:// or https://"},
		{mcp.Config{Name: "a", URL: "http://h", Env: map[string]string{"A": "b"}}, "env is for stdio"},
		{mcp.Config{Name: "a", Command: []string{"x"}, Headers: map[string]string{"A": "b"}}, "headers are for HTTP"},
		{mcp.Config{Name: "a", Command: []string{"x"}, Env: map[string]string{"A-B": "b"}}, "not a variable name"},
		{mcp.Config{Name: "a", Command: []string{"x"}, Kinds: []string{"root", "root"}}, "repeated"},
		{mcp.Config{Name: "a", Command: []string{"x"}, Timeout: -1}, "negative"},
	}
	for _, tt := range tests {
		if err := tt.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want %q", tt.cfg, err, tt.want)
		}
	}
	ok := mcp.Config{Name: "gh", Command: []string{"npx", "-y", "srv"}, Env: map[string]string{"GITHUB_TOKEN": "x"}, Kinds: []string{"explore"}}
	if err := ok.Validate(); err != nil {
		t.Error(err)
	}
	srv := mcp.New(ok, zerolog.Nop())
	if !srv.For("explore") || srv.For("root") || mcp.New(mcp.Config{Name: "d", URL: "http://h"}, zerolog.Nop()).For("explore") {
		t.Error("kinds not applied")
	}
}

// Calls of several agents share one server; when one call's timeout stops
// it, the others' calls say so and the next call starts it again.
func TestSharedServerStoppedByAnotherCall(t *testing.T) {
	srv := stdioServer(t, func(c *mcp.Config) { c.Timeout = 2 * time.Second })
	h := newHarness(t, srv, tools.Config{})
	results := h.ex.Run(t.Context(), []messages.ToolCall{
		{ID: "a", Name: "mcp__t__hang", Args: json.RawMessage(`{}`)},
		{ID: "b", Name: "mcp__t__slow", Args: json.RawMessage(`{}`)},
		{ID: "c", Name: "mcp__t__echo", Args: json.RawMessage(`{"text":"x"}`)},
	})
	if r := results[2]; r.IsError || r.Text != "echo: x" {
		t.Errorf("echo beside the hang: %+v", r)
	}
	timedOut, stopped := 0, 0
	for _, r := range results[:2] {
		switch {
		case strings.Contains(r.Text, "no answer before the timeout"):
			timedOut++
		case strings.Contains(r.Text, "was stopped while the call ran"):
			stopped++
		}
	}
	if timedOut < 1 || timedOut+stopped != 2 {
		t.Errorf("results %q / %q", results[0].Text, results[1].Text)
	}
	if r := h.call(mcptest.Echo, `{"text":"y"}`); r.IsError || r.Text != "echo: y" {
		t.Errorf("after: %+v", r)
	}
}

// What a server starts goes with it: Close stops the whole process group.
func TestCloseStopsWhatTheServerStarted(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	exe := mcptest.Command()
	srv := stdioServer(t, func(c *mcp.Config) {
		c.Command = []string{"sh", "-c", `sleep 300 & echo $! > "$1"; exec "$2" "$3"`, "sh", pidFile, exe[0], exe[1]}
	})
	if _, err := srv.Tools(t.Context()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || !alive(child) {
		t.Fatalf("child %q not running", b)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, child)
}
