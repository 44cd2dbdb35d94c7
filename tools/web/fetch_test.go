package web

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/tools"
)

// webSession is a session whose web_fetch may reach the loopback test
// servers (the default refuses them; TestWebFetchRefusesPrivateAddresses
// checks that).
func webSession(t *testing.T, cfg Config) *tools.Session {
	t.Helper()
	s := newTestSession(t)
	Configure(s, cfg)
	UseCache(s, NewCache(cfg.CacheTTL))
	return s
}

var localWeb = Config{AllowPrivate: true}

// fetchThrough runs web_fetch through the executor, as an agent's call
// runs: timeout, truncation and spill included.
func fetchThrough(t *testing.T, s *tools.Session, args any) tools.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	ex := &tools.Executor{Tools: tools.NewRegistry(WebFetch()), Session: s}
	return ex.Run(t.Context(), []messages.ToolCall{{ID: "c1", Name: NameWebFetch, Args: raw}})[0]
}

const docPage = `<!doctype html>
<html><head><title>  Retry   settings </title><style>body{color:red}</style>
<script>var secret = "script text";</script></head>
<body>
<header><a href="/">Home</a> <a href="/blog">Blog</a></header>
<nav class="navbar"><a href="/a">Sidebar link</a></nav>
<main>
<h1>Retries</h1>
<p>The client retries <strong>429</strong> and 5xx answers, see <a href="/docs/backoff">backoff</a>.</p>
<pre><code>max_attempts: 4
</code></pre>
<table><tr><th>key</th><th>default</th></tr><tr><td>max_attempts</td><td>4</td></tr></table>
<img src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==" alt="pixel">
<div hidden>hidden text</div>
<form><input name="q"><button>Search</button></form>
<p>Read more in the <a href="guide.html">guide</a>.</p>
</main>
<footer>Copyright footer</footer>
</body></html>`

func TestWebFetchHTMLBecomesMarkdown(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, docPage)
	}))
	defer srv.Close()
	s := webSession(t, localWeb)
	res := fetchThrough(t, s, map[string]string{"url": srv.URL + "/docs/retries"})
	if res.IsError {
		t.Fatalf("error: %s", res.Text)
	}
	for _, want := range []string{
		"URL: " + srv.URL + "/docs/retries\n",
		"Title: Retry settings\n",
		"# Retries",
		"**429**",
		"[backoff](" + srv.URL + "/docs/backoff)",
		"[guide](" + srv.URL + "/docs/guide.html)",
		"max_attempts: 4",
		"| key | default |",
	} {
		if !strings.Contains(res.Text, want) {
			t.Errorf("output lacks %q:\n%s", want, res.Text)
		}
	}
	for _, absent := range []string{"script text", "color:red", "Sidebar link", "Copyright footer", "hidden text", "base64", "Blog", "Search"} {
		if strings.Contains(res.Text, absent) {
			t.Errorf("output has %q, which is not content:\n%s", absent, res.Text)
		}
	}
	if res.Metadata["status"] != 200 || res.Metadata["content_type"] != "text/html" || res.Metadata["url"] != srv.URL+"/docs/retries" {
		t.Errorf("metadata %v", res.Metadata)
	}
}

func TestWebFetchTextAndJSONAsTheyAre(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/notes.txt":
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "line one\n  indented <b>not html</b>\n")
		case "/data.json":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"a": [1, 2], "b": "x"}`)
		case "/latin1":
			w.Header().Set("Content-Type", "text/plain; charset=iso-8859-1")
			w.Write([]byte("caf\xe9 cr\xe8me"))
		case "/latin1.html":
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte("<html><head><meta charset=\"windows-1252\"></head><body><p>na\xefve \x93quotes\x94</p></body></html>"))
		case "/escape":
			w.Header().Set("Content-Type", "text/plain")
			w.Write([]byte("red \x1b[31mtext\x1b[0m\r\n"))
		}
	}))
	defer srv.Close()
	s := webSession(t, localWeb)
	for path, want := range map[string]string{
		"/notes.txt":   "Content-Type: text/plain\n\nline one\n  indented <b>not html</b>\n",
		"/data.json":   "Content-Type: application/json\n\n{\"a\": [1, 2], \"b\": \"x\"}\n",
		"/latin1":      "\n\ncafé crème\n",
		"/latin1.html": "\n\nnaïve “quotes”\n",
		"/escape":      "\n\nred [31mtext[0m\n",
	} {
		res := fetchThrough(t, s, map[string]string{"url": srv.URL + path})
		if res.IsError || !strings.HasSuffix(res.Text, want) {
			t.Errorf("%s: got %q, want it to end with %q", path, res.Text, want)
		}
	}
}

func TestWebFetchFollowsRedirectsWithinTheLimit(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/old":
			http.Redirect(w, r, "/moved", http.StatusMovedPermanently)
		case "/moved":
			http.Redirect(w, r, "/final", http.StatusFound)
		case "/final":
			fmt.Fprint(w, "arrived")
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/ftp":
			http.Redirect(w, r, "ftp://example.org/file", http.StatusFound)
		}
	}))
	defer srv.Close()
	s := webSession(t, localWeb)
	res := fetchThrough(t, s, map[string]string{"url": srv.URL + "/old"})
	if res.IsError || !strings.HasPrefix(res.Text, "URL: "+srv.URL+"/final\nRedirected from: "+srv.URL+"/old\n") || !strings.HasSuffix(res.Text, "arrived\n") {
		t.Fatalf("redirects: %q", res.Text)
	}
	hits.Store(0)
	res = fetchThrough(t, s, map[string]string{"url": srv.URL + "/loop"})
	if !res.IsError || !strings.Contains(res.Text, "stopped: too many redirects: more than 5") {
		t.Fatalf("redirect loop: %+v", res)
	}
	if n := hits.Load(); n != 6 {
		t.Errorf("a redirect loop made %d requests, want 6 (the first and 5 redirects)", n)
	}
	s = webSession(t, Config{AllowPrivate: true, MaxRedirects: 1})
	res = fetchThrough(t, s, map[string]string{"url": srv.URL + "/old"})
	if !res.IsError || !strings.Contains(res.Text, "more than 1 ("+srv.URL+"/old -> "+srv.URL+"/moved -> "+srv.URL+"/final)") {
		t.Fatalf("limit 1: %+v", res)
	}
	res = fetchThrough(t, s, map[string]string{"url": srv.URL + "/ftp"})
	if !res.IsError || !strings.Contains(res.Text, "a redirect to ftp://example.org/file leaves http and https") {
		t.Fatalf("redirect to ftp: %+v", res)
	}
}

func TestWebFetchHugePageIsCutAndSpilled(t *testing.T) {
	t.Parallel()
	line := strings.Repeat("word ", 19) + "end\n" // 100 bytes
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", fmt.Sprint(60_000*len(line)))
		for range 60_000 { // 6 MB
			if _, err := io.WriteString(w, line); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	s := webSession(t, localWeb)
	res := fetchThrough(t, s, map[string]string{"url": srv.URL})
	if res.IsError {
		t.Fatalf("error: %s", res.Text)
	}
	if !strings.Contains(res.Text, "Note: the page is 5.7 MB, over the 5.0 MB cap; only its first 5.0 MB were read.\n") {
		t.Errorf("no cap note:\n%.400s", res.Text)
	}
	if res.Metadata["cut"] != true || res.Metadata["bytes"] != DefaultWebMaxBytes {
		t.Errorf("metadata %v", res.Metadata)
	}
	if !res.Truncated || res.SpillPath == "" || len(res.Text) > 33*1024 || !strings.Contains(res.Text, "[output truncated: showing first") {
		t.Fatalf("not truncated and spilled: truncated=%v spill=%q len=%d", res.Truncated, res.SpillPath, len(res.Text))
	}
	full, err := os.ReadFile(res.SpillPath)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(full), "end\n"); n != DefaultWebMaxBytes/len(line) {
		t.Errorf("spill holds %d lines, want the %d that fit the cap", n, DefaultWebMaxBytes/len(line))
	}

	configOf(s).MaxBytes = 1000
	res = fetchThrough(t, s, map[string]string{"url": srv.URL + "/again"})
	if !strings.Contains(res.Text, "over the 1000 bytes cap; only its first 1000 bytes were read") {
		t.Errorf("small cap: %q", res.Text)
	}
}

func TestWebFetchTimesOut(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // answer only when the client gives up (or the test ends)
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	s := webSession(t, Config{AllowPrivate: true, Timeout: 50 * time.Millisecond})
	res := fetchThrough(t, s, map[string]string{"url": srv.URL})
	if !res.IsError || !strings.Contains(res.Text, "timed out after 50ms waiting for 127.0.0.1") {
		t.Fatalf("slow server: %+v", res)
	}
}

func TestWebFetchRefusesBinary(t *testing.T) {
	t.Parallel()
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/img":
			w.Header().Set("Content-Type", "image/png")
			w.Write(png)
		case "/unlabelled":
			w.Header()["Content-Type"] = nil
			w.Write(png)
		case "/lying":
			w.Header().Set("Content-Type", "text/plain")
			w.Write([]byte("looks\x00binary"))
		case "/pdf":
			w.Header().Set("Content-Type", "application/pdf")
			w.Write([]byte("%PDF-1.7 ..."))
		}
	}))
	defer srv.Close()
	s := webSession(t, localWeb)
	for path, want := range map[string]string{
		"/img":        "the content is image/png (16 bytes), not text",
		"/unlabelled": "the content is image/png (16 bytes), not text",
		"/lying":      "the content is text/plain (12 bytes), not text",
		"/pdf":        "the content is application/pdf (12 bytes), not text",
	} {
		res := fetchThrough(t, s, map[string]string{"url": srv.URL + path})
		if !res.IsError || !strings.Contains(res.Text, want) {
			t.Errorf("%s: %+v, want an error with %q", path, res, want)
		}
	}
}

func TestWebFetchUnreachableAndHTTPErrors(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, "<html><body><h1>No such page</h1><p>Try the index.</p></body></html>")
	}))
	defer srv.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	s := webSession(t, localWeb)
	for _, c := range []struct{ url, want string }{
		{"http://" + closed + "/", "cannot connect to " + closed + ": connection refused"},
		{"http://nonexistent.invalid/", "cannot resolve nonexistent.invalid"},
		{srv.URL + "/missing", "answered HTTP 404 Not Found"},
		{"file:///etc/passwd", "only http and https URLs can be fetched, not file URLs"},
		{"https://user:pw@example.org/", "carries a user name or password"},
		{"", "url is empty"},
		{"http://example.org:99999/", "port 99999 is out of range"},
	} {
		res := fetchThrough(t, s, map[string]string{"url": c.url})
		if !res.IsError || !strings.Contains(res.Text, c.want) {
			t.Errorf("%q: %+v, want an error with %q", c.url, res, c.want)
		}
	}
	res := fetchThrough(t, s, map[string]string{"url": srv.URL + "/missing"})
	if !strings.Contains(res.Text, "# No such page") || res.Metadata["status"] != 404 {
		t.Errorf("a 404 should show what the server said: %+v", res)
	}
	res = fetchThrough(t, s, map[string]any{"url": 42})
	if !res.IsError || !strings.Contains(res.Text, "invalid arguments for web_fetch") {
		t.Errorf("bad argument type: %+v", res)
	}
}

// By default web_fetch reaches only public addresses: loopback in the URL,
// a name that resolves to loopback, and a redirect from an allowed host
// to a loopback address are all refused before anything is sent.
func TestWebFetchRefusesPrivateAddresses(t *testing.T) {
	t.Parallel()
	var hitsB atomic.Int64
	lb, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("cannot listen on 127.0.0.2 here: %v", err)
	}
	b := &httptest.Server{Listener: lb, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hitsB.Add(1)
		fmt.Fprint(w, "inside")
	})}}
	b.Start()
	defer b.Close()
	var hitsA atomic.Int64
	a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hitsA.Add(1)
		http.Redirect(w, r, b.URL+"/admin", http.StatusFound)
	}))
	defer a.Close()

	s := webSession(t, Config{})
	for _, c := range []struct{ url, want string }{
		{a.URL, "refused to connect: 127.0.0.1 is a loopback address"},
		{strings.Replace(a.URL, "127.0.0.1", "localhost", 1), "localhost resolves to"},
		{strings.Replace(a.URL, "127.0.0.1", "[::ffff:127.0.0.1]", 1), "127.0.0.1 is a loopback address"},
		{"http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"},
		{"http://0.0.0.0:1/", "0.0.0.0 is the unspecified address"},
	} {
		res := fetchThrough(t, s, map[string]string{"url": c.url})
		if !res.IsError || !strings.Contains(res.Text, c.want) || !strings.Contains(res.Text, "tools.web.allow_private") {
			t.Errorf("%s: %+v, want a refusal with %q", c.url, res, c.want)
		}
	}
	if hitsA.Load() != 0 {
		t.Fatalf("server A got %d requests through the default guard", hitsA.Load())
	}

	// A is allowed by address; its redirect to B (another loopback
	// address) is not followed.
	s = webSession(t, Config{AllowHosts: []string{"127.0.0.1"}})
	res := fetchThrough(t, s, map[string]string{"url": a.URL})
	if !res.IsError || !strings.Contains(res.Text, "refused to connect: 127.0.0.2 is a loopback address") {
		t.Fatalf("redirect to loopback: %+v", res)
	}
	if hitsA.Load() != 1 || hitsB.Load() != 0 {
		t.Fatalf("hits A=%d B=%d, want 1 and 0", hitsA.Load(), hitsB.Load())
	}
	// Allowing B's network lets the redirect through.
	s = webSession(t, Config{AllowHosts: []string{"127.0.0.1", "127.0.0.0/30"}})
	if res := fetchThrough(t, s, map[string]string{"url": a.URL}); res.IsError || !strings.HasSuffix(res.Text, "inside\n") {
		t.Fatalf("allowed redirect: %+v", res)
	}
	// Allowing a name lets that name through, not the addresses it
	// redirects to.
	s = webSession(t, Config{AllowHosts: []string{"localhost"}})
	res = fetchThrough(t, s, map[string]string{"url": strings.Replace(a.URL, "127.0.0.1", "localhost", 1)})
	if !res.IsError || !strings.Contains(res.Text, "refused to connect: 127.0.0.2 is a loopback address") {
		t.Fatalf("allowed name, redirect to loopback: %+v", res)
	}
	if hitsA.Load() != 3 || hitsB.Load() != 1 {
		t.Fatalf("hits A=%d B=%d, want 3 and 1", hitsA.Load(), hitsB.Load())
	}
}

func TestWebFetchCachesPagesForTheirTTL(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := hits.Add(1)
		fmt.Fprintf(w, "version %d", n)
	}))
	defer srv.Close()
	s := webSession(t, localWeb)
	now := time.Now()
	cacheOf(s).now = func() time.Time { return now }
	first := fetchThrough(t, s, map[string]string{"url": srv.URL + "/p#section"})
	second := fetchThrough(t, s, map[string]string{"url": srv.URL + "/p"})
	if first.Cached || !second.Cached || second.Text != first.Text || hits.Load() != 1 {
		t.Fatalf("second fetch within the TTL: cached=%v/%v hits=%d\n%s\n%s", first.Cached, second.Cached, hits.Load(), first.Text, second.Text)
	}
	now = now.Add(DefaultWebCacheTTL)
	third := fetchThrough(t, s, map[string]string{"url": srv.URL + "/p"})
	if third.Cached || !strings.Contains(third.Text, "version 2") {
		t.Fatalf("after the TTL: %+v", third)
	}
	// The server is on a private address (a local server the agent may be
	// changing): any change a tool makes forgets its pages.
	if r := fetchThrough(t, s, map[string]string{"url": srv.URL + "/p"}); !r.Cached {
		t.Fatalf("fourth fetch not cached: %+v", r)
	}
	ex := &tools.Executor{Tools: tools.NewRegistry(tools.WriteFile()), Session: s}
	if r := ex.Run(t.Context(), []messages.ToolCall{{ID: "w", Name: tools.NameWriteFile, Args: json.RawMessage(`{"path":"new.txt","content":"x"}`)}})[0]; r.IsError {
		t.Fatal(r.Text)
	}
	fifth := fetchThrough(t, s, map[string]string{"url": srv.URL + "/p"})
	if fifth.Cached || !strings.Contains(fifth.Text, "version 3") {
		t.Fatalf("after a change in the workspace: %+v", fifth)
	}
}

func TestWebFetchPromptWithoutAModel(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "<p>the answer is 42</p>")
	}))
	defer srv.Close()
	s := webSession(t, localWeb)
	res := fetchThrough(t, s, map[string]string{"url": srv.URL, "prompt": "what is the answer?"})
	if res.IsError || !strings.Contains(res.Text, "Note: No model is available here to answer the prompt, so the whole page follows.") ||
		!strings.Contains(res.Text, "the answer is 42") {
		t.Fatalf("%+v", res)
	}
}

func TestWebFetchOff(t *testing.T) {
	t.Parallel()
	s := webSession(t, Config{NoFetch: true})
	res := fetchThrough(t, s, map[string]string{"url": "https://example.org"})
	if !res.IsError || !strings.Contains(res.Text, "turned off") {
		t.Fatalf("%+v", res)
	}
}
