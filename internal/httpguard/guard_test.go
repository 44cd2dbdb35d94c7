package httpguard

import (
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// serve runs g in front of a handler that answers "secret run data" on a
// real loopback listener and returns its base URL.
func serve(t *testing.T, g *Guard) string {
	t.Helper()
	ln, err := g.Listen()
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: g.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "secret run data")
	}))}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// noRedirect is a client that shows redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// do sends a request and returns its status and body.
func do(t *testing.T, req *http.Request) (int, string, *http.Response) {
	t.Helper()
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp
}

func request(t *testing.T, method, u string, header map[string]string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	return req
}

// tokenFile writes a token file with mode and returns its path.
func tokenFile(t *testing.T, tok string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "http.token")
	if err := os.WriteFile(p, []byte(tok+"\n"), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// A DNS-rebinding page reaches a loopback listener under its own name:
// Host attacker.example is refused with 403 and none of the data, while
// loopback names and addresses get through.
func TestForeignHostRefused(t *testing.T) {
	g, err := New(Options{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	base := serve(t, g)
	port := strings.TrimPrefix(base, "http://127.0.0.1:")
	for _, host := range []string{"attacker.example:" + port, "attacker.example", "127.0.0.1.attacker.example:" + port, "10.0.0.1:" + port} {
		code, body, _ := do(t, request(t, "GET", base+"/", map[string]string{"Host": host}))
		if code != http.StatusForbidden || strings.Contains(body, "secret") {
			t.Errorf("Host %s: %d %q, want 403 without the data", host, code, body)
		}
	}
	for _, host := range []string{"localhost:" + port, "127.0.0.1:" + port, "LOCALHOST:" + port, "[::1]:" + port, "127.0.0.2"} {
		if code, body, _ := do(t, request(t, "GET", base+"/", map[string]string{"Host": host})); code != http.StatusOK || body != "secret run data" {
			t.Errorf("Host %s: %d %q, want the page", host, code, body)
		}
	}
}

// A state-changing request from another origin is refused; one from no
// browser (no Origin) or from the page's own origin goes through.
func TestCrossOriginWriteRefused(t *testing.T) {
	g, err := New(Options{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	base := serve(t, g)
	host := strings.TrimPrefix(base, "http://")
	cases := []struct {
		header map[string]string
		want   int
	}{
		{map[string]string{"Origin": "http://attacker.example"}, http.StatusForbidden},
		{map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{map[string]string{"Origin": "http://" + host}, http.StatusOK},
		{map[string]string{"Sec-Fetch-Site": "same-origin"}, http.StatusOK},
		{nil, http.StatusOK},
	}
	for _, c := range cases {
		if code, body, _ := do(t, request(t, "POST", base+"/mcp", c.header)); code != c.want || (code != http.StatusOK && strings.Contains(body, "secret")) {
			t.Errorf("POST %v: %d %q, want %d", c.header, code, body, c.want)
		}
	}
	// Reading is no change: a cross-origin GET is left to the browser's
	// same-origin policy.
	if code, _, _ := do(t, request(t, "GET", base+"/", map[string]string{"Origin": "http://attacker.example"})); code != http.StatusOK {
		t.Errorf("cross-origin GET: %d", code)
	}
}

// With a token, a request needs it: as a bearer token, or as the cookie
// that opening ?token= once sets (HttpOnly, SameSite=Strict) before
// redirecting to the URL without the token.
func TestTokenRequired(t *testing.T) {
	const tok = "0123456789abcdef0123456789abcdef"
	g, err := New(Options{Addr: "127.0.0.1:0", TokenFile: tokenFile(t, tok, 0o600)})
	if err != nil {
		t.Fatal(err)
	}
	base := serve(t, g)
	for name, h := range map[string]map[string]string{
		"none":         nil,
		"wrong bearer": {"Authorization": "Bearer 0123456789abcdef0123456789abcdee"},
		"basic":        {"Authorization": "Basic " + tok},
		"raw cookie":   {"Cookie": cookieName(strings.TrimPrefix(base, "http://")) + "=" + tok},
	} {
		code, body, resp := do(t, request(t, "GET", base+"/metrics", h))
		if code != http.StatusUnauthorized || strings.Contains(body, "secret") || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: %d %q, want 401 with a Bearer challenge", name, code, body)
		}
	}
	if code, body, _ := do(t, request(t, "GET", base+"/metrics", map[string]string{"Authorization": "Bearer " + tok})); code != http.StatusOK || body != "secret run data" {
		t.Errorf("bearer: %d %q", code, body)
	}
	if code, _, _ := do(t, request(t, "GET", base+"/?token=nope-nope-nope-nope", nil)); code != http.StatusUnauthorized {
		t.Errorf("a wrong ?token=: %d, want 401", code)
	}
	code, _, resp := do(t, request(t, "GET", base+"/run?x=1&token="+tok, nil))
	if code != http.StatusSeeOther {
		t.Fatalf("?token=: %d, want 303", code)
	}
	if loc := resp.Header.Get("Location"); loc != "/run?x=1" {
		t.Errorf("redirected to %q, want /run?x=1 (the token gone)", loc)
	}
	cookies := resp.Cookies()
	if len(cookies) != 1 || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode || cookies[0].Value == tok {
		t.Fatalf("cookies %+v, want one HttpOnly SameSite=Strict cookie that is not the token", cookies)
	}
	req := request(t, "GET", base+"/run?x=1", nil)
	req.AddCookie(cookies[0])
	if code, body, _ := do(t, req); code != http.StatusOK || body != "secret run data" {
		t.Errorf("with the cookie: %d %q", code, body)
	}
	// The cookie of another port's server (cookies are per host) is not
	// this one's.
	other := &http.Cookie{Name: "troupe_token_1", Value: cookies[0].Value}
	req = request(t, "GET", base+"/", nil)
	req.AddCookie(other)
	if code, _, _ := do(t, req); code != http.StatusUnauthorized {
		t.Errorf("another port's cookie: %d, want 401", code)
	}
	// ?token= on a POST does not log in.
	if code, _, _ := do(t, request(t, "POST", base+"/mcp?token="+url.QueryEscape(tok), nil)); code != http.StatusUnauthorized {
		t.Errorf("POST ?token=: %d, want 401", code)
	}
}

// Where a server may listen, and with what: each refusal names its flag
// and the way out.
func TestNewRefuses(t *testing.T) {
	good := tokenFile(t, "0123456789abcdef0123456789abcdef", 0o600)
	cases := []struct {
		o    Options
		want string // "" = accepted
	}{
		{Options{Addr: "127.0.0.1:0"}, ""},
		{Options{Addr: "localhost:8080"}, ""},
		{Options{Addr: "[::1]:0"}, ""},
		{Options{Addr: "0.0.0.0:0"}, "add --http-public"},
		{Options{Flag: "--web", Addr: "10.1.2.3:80"}, "--web 10.1.2.3:80 listens beyond loopback"},
		{Options{Addr: "0.0.0.0:0", Public: true}, "--http-public needs --http-token-file"},
		{Options{Addr: "127.0.0.1:0", Public: true}, "--http-public needs --http-token-file"},
		{Options{Addr: "0.0.0.0:0", Public: true, TokenFile: good}, ""},
		{Options{Addr: "127.0.0.1:0", AlwaysToken: true}, "needs a token"},
		{Options{Addr: "127.0.0.1:0", AlwaysToken: true, NoAuth: true}, ""},
		{Options{Addr: "127.0.0.1:0", AlwaysToken: true, TokenFile: good}, ""},
		{Options{Addr: "0.0.0.0:0", Public: true, AlwaysToken: true, NoAuth: true}, "--no-auth on 0.0.0.0 refused"},
		{Options{Addr: "127.0.0.1:0", NoAuth: true, TokenFile: good}, "give one"},
		{Options{Addr: "127.0.0.1:0", TokenFile: tokenFile(t, "0123456789abcdef0123456789abcdef", 0o644)}, "chmod 600"},
		{Options{Addr: "127.0.0.1:0", TokenFile: tokenFile(t, "short", 0o600)}, "at least 16"},
		{Options{Addr: "127.0.0.1:0", TokenFile: filepath.Join(t.TempDir(), "none")}, "no such file"},
		{Options{Addr: "nonsense"}, "--http \"nonsense\""},
	}
	for _, c := range cases {
		_, err := New(c.o)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v: %v, want accepted", c.o, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v: %v, want an error with %q", c.o, err, c.want)
		}
	}
}

// WriteTokenFile writes a 0600 token New accepts, and keeps a token that
// exists.
func TestWriteTokenFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), TokenFileName)
	wrote, err := WriteTokenFile(p)
	if err != nil || !wrote {
		t.Fatalf("wrote %v, %v", wrote, err)
	}
	st, err := os.Stat(p)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v", st.Mode(), err)
	}
	first, _ := os.ReadFile(p)
	if wrote, err := WriteTokenFile(p); err != nil || wrote {
		t.Errorf("second write: %v, %v; want the token kept", wrote, err)
	}
	if again, _ := os.ReadFile(p); string(again) != string(first) {
		t.Error("the token changed")
	}
	if _, err := New(Options{Addr: "127.0.0.1:0", TokenFile: p}); err != nil {
		t.Error(err)
	}
}

// Limit answers 503 past n requests at once, and lets the next in when
// one ends.
func TestLimit(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 3)
	h := Limit(2, "event streams", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
	}))
	g, _ := New(Options{Addr: "127.0.0.1:0"})
	ln, _ := g.Listen()
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	base := "http://" + ln.Addr().String()
	done := make(chan int, 2)
	for range 2 {
		go func() {
			resp, err := http.Get(base)
			if err == nil {
				resp.Body.Close()
				done <- resp.StatusCode
			} else {
				done <- 0
			}
		}()
	}
	<-entered
	<-entered
	resp, err := http.Get(base)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(b), "too many event streams") {
		t.Errorf("third: %d %q, want 503", resp.StatusCode, b)
	}
	release <- struct{}{}
	if code := <-done; code != http.StatusOK {
		t.Errorf("first: %d", code)
	}
	go func() {
		resp, err := http.Get(base)
		if err == nil {
			resp.Body.Close()
		}
	}()
	<-entered // a slot was free again
	close(release)
	<-done
}
