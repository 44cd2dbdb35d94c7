package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeConfig writes a config file for --config.
func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestToolsCallWebFetch(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, strings.Repeat("0123456789\n", 1000))
		default:
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<html><head><title>Release notes</title></head><body><nav>menu</nav><main><h2>v1.2</h2><ul><li>Faster <code>grep</code></li></ul></main></body></html>`)
		}
	}))
	defer srv.Close()
	ws := t.TempDir()
	allow := writeConfig(t, "tools:\n  web:\n    allow_private: true\n    max_bytes: 2048\n")

	code, out, _ := runCLI(t, "tools", "call", "web_fetch", fmt.Sprintf(`{"url":%q}`, srv.URL+"/notes"), "--workspace", ws, "--config", allow)
	want := "URL: " + srv.URL + "/notes\nTitle: Release notes\n\n## v1.2\n\n- Faster `grep`\n"
	if code != 0 || out != want {
		t.Fatalf("web_fetch: exit %d\n%q\nwant\n%q", code, out, want)
	}
	code, out, _ = runCLI(t, "tools", "call", "web_fetch", fmt.Sprintf(`{"url":%q}`, srv.URL+"/big"), "--workspace", ws, "--config", allow, "--json")
	var res struct {
		Text     string         `json:"text"`
		IsError  bool           `json:"is_error"`
		Metadata map[string]any `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 {
		t.Fatalf("--json: exit %d, %v\n%s", code, err, out)
	}
	if !strings.Contains(res.Text, "Note: the page is over the 2.0 KB cap; only its first 2.0 KB were read.") || res.Metadata["cut"] != true {
		t.Errorf("huge page: %+v", res)
	}

	// The default configuration refuses loopback addresses.
	code, out, _ = runCLI(t, "tools", "call", "web_fetch", fmt.Sprintf(`{"url":%q}`, srv.URL), "--workspace", ws,
		"--config", writeConfig(t, "tools:\n  web:\n    allow_private: false\n    allow_hosts: []\n"))
	if code != 1 || !strings.Contains(out, "refused to connect: 127.0.0.1 is a loopback address") {
		t.Errorf("default guard: exit %d %q", code, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	code, out, _ = runCLI(t, "tools", "call", "web_fetch", `{"url":"http://`+closed+`/"}`, "--workspace", ws, "--config", allow)
	if code != 1 || !strings.Contains(out, "connection refused") {
		t.Errorf("unreachable: exit %d %q", code, out)
	}
	bad := writeConfig(t, "tools:\n  web:\n    max_redirects: 99\n")
	code, _, stderr := runCLI(t, "tools", "call", "web_fetch", `{"url":"https://example.org"}`, "--workspace", ws, "--config", bad)
	if code != 2 || !strings.Contains(stderr, bad+" line 3: tools.web.max_redirects: must be a number from 0 (follow none) to 20, got 99") {
		t.Errorf("bad config: exit %d %q", code, stderr)
	}
}

func TestToolsCallWebSearch(t *testing.T) {
	for _, v := range []string{"BRAVE_API_KEY", "TAVILY_API_KEY", "SEARXNG_URL"} {
		t.Setenv(v, "") // the test's own environment must not pick a provider
	}
	searx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"results":[{"title":"Go 1.26 release notes","url":"https://go.dev/doc/go1.26","content":"%s"}]}`, r.URL.Query().Get("q"))
	}))
	defer searx.Close()
	ws := t.TempDir()
	cfg := writeConfig(t, "tools:\n  web:\n    search:\n      provider: searxng\n      url: "+searx.URL+"\n")
	code, out, _ := runCLI(t, "tools", "call", "web_search", `{"query":"go release notes","limit":3}`, "--workspace", ws, "--config", cfg)
	if want := "1. Go 1.26 release notes\n   https://go.dev/doc/go1.26\n   go release notes\n"; code != 0 || out != want {
		t.Fatalf("web_search: exit %d %q, want %q", code, out, want)
	}
	code, out, _ = runCLI(t, "tools", "call", "web_search", `{"query":"x"}`, "--workspace", ws,
		"--config", writeConfig(t, "tools:\n  web:\n    search:\n      provider: \"\"\n"))
	if code != 1 || !strings.Contains(out, "web_search is not available: no search provider is configured") {
		t.Errorf("no provider: exit %d %q", code, out)
	}
}
